"""Copy functions out of a training script, verbatim, with what they need to run.

A reward function often sits in the training script itself (TRL's `reward_funcs=[...]`, a Tinker
loop's `reward()`), and importing that script would start the training. The migration copies the
functions, unchanged, into rewards.py beside train.py: the imports they use, the module-level
constants and helpers they reach (transitively), and themselves, in their original order.
"""

import ast

from mint_migrate.errors import MintMigrateError
from mint_migrate.pyparse import parse_ast


def extract_functions(text: str, names: list[str], origin: str) -> str:
    """A module with `names` (functions or classes) from `text` and everything they reference."""
    tree = parse_ast(text, origin)
    lines = text.splitlines()
    defined: dict[str, ast.stmt] = {}
    imported: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defined[name.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                imported[(alias.asname or alias.name).split(".")[0]] = node
    missing = [n for n in names if n not in defined]
    if missing:
        raise MintMigrateError(f"{origin} defines no {', '.join(missing)} at module level; pass the reward's file "
                               "with --config, or point train.py at it with --reward FILE:NAME.")
    wanted: set[int] = set()
    used_imports: dict[int, set[str]] = {}
    queue = list(names)
    seen: set[str] = set()
    while queue:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in imported:
            used_imports.setdefault(id(imported[name]), set()).add(name)
            continue
        node = defined.get(name)
        if node is None:
            continue  # a builtin, a parameter or a local name
        wanted.add(id(node))
        queue += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
        queue += [n.value.id for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)]

    out = [f'"""Functions copied verbatim from {origin} by mint-migrate, for train.py to call.', "",
           "Edit them in the source and migrate again, or here: train.py imports this file as it is.", '"""', ""]
    for node in tree.body:
        if id(node) in used_imports:
            out.append(_import_line(node, used_imports[id(node)]))
    out.append("")
    for node in tree.body:
        if id(node) in wanted:
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            out += ["", *lines[first - 1 : node.end_lineno]]
    return "\n".join(out).rstrip() + "\n"


def _import_line(node: ast.stmt, names: set[str]) -> str:
    """The import statement, keeping only the names the copied code uses."""
    keep = [a for a in node.names if (a.asname or a.name).split(".")[0] in names]
    if isinstance(node, ast.Import):
        return ast.unparse(ast.Import(names=keep))
    return ast.unparse(ast.ImportFrom(module=node.module, names=keep, level=node.level))
