"""The one door every parse of user Python goes through: bounded, serialised, never fatal.

Three hazards make a bare `libcst.parse_module` or `ast.parse` unsafe on untrusted input:
- libcst's native parser overflows its stack and kills the process (SIGSEGV) on deep nesting
  (`x = ((((...1))))` 2000 deep), and takes minutes on a few thousand chained subscripts;
- CPython's parser raises MemoryError on thousands of unclosed brackets and ValueError on NUL
  bytes, and `ast.literal_eval` (libcst's `evaluated_value`) raises SyntaxError on them;
- CPython 3.11 keeps one recursion counter for building AST objects per interpreter, so two
  threads building AST objects at once can fail with "SystemError: AST constructor recursion
  depth mismatch" (the MCP server runs tools in worker threads; CPython 3.12 fixed it).

So the source is first parsed by CPython (bounded and exact about where a syntax error is), its
tree depth checked against MAX_DEPTH, and only then handed to libcst; every construction of AST
objects holds one process-wide lock; every failure is a PythonSyntaxError naming file:line:col.
A file the running Python cannot parse is reported as such, even if libcst would accept it.
"""

import ast
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mint_migrate.errors import MintMigrateError

# The deepest tree in 9,000 real files (CPython's stdlib and this project's dependencies) is 63
# levels; libcst handles 200 in well under a second and crashes from about 2,000.
MAX_DEPTH = 200
MAX_CHARS = 5_000_000  # a training script is a few hundred kB at most

_AST_LOCK = threading.RLock()


class PythonSyntaxError(MintMigrateError):
    """Source that cannot be parsed (or not safely). The message never quotes the source line,
    which may hold a secret."""

    def __init__(self, label: str, line: int, col: int, message: str):
        self.label, self.line, self.col, self.message = label, line, col, message
        super().__init__(
            f"{label}:{line}:{col}: cannot parse Python: {message}. "
            "Fix the syntax error (or pass the right file) and retry."
        )


@contextmanager
def ast_lock() -> Iterator[None]:
    """Hold while building AST objects (ast.parse, ast.literal_eval, compile(..., PyCF_ONLY_AST))."""
    with _AST_LOCK:
        yield


def parse_ast(source: str, label: str = "<source>", *, mode: str = "exec", max_depth: int = MAX_DEPTH) -> ast.AST:
    """CPython's tree of `source`; PythonSyntaxError for anything it cannot (or must not) parse."""
    return _parse(source, label, mode, max_depth)[0]


def _parse(source: str, label: str, mode: str, max_depth: int) -> tuple[ast.AST, str]:
    """(tree, the source it is the tree of). A file written for Python 3.12 that reuses its
    f-string's quote inside a replacement field (`f"{d["key"]}"`, PEP 701) is read with those
    inner quotes swapped, which 3.11 parses to the same meaning at the same lines and columns."""
    if len(source) > MAX_CHARS:
        raise PythonSyntaxError(label, 1, 1, f"the file has {len(source):,} characters, over the {MAX_CHARS:,} read")
    for _ in range(_MAX_REQUOTED_LINES):
        try:
            with _AST_LOCK, warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escapes and the like are the source's business
                tree = compile(source, label, mode, flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
            break
        except SyntaxError as exc:  # includes IndentationError and TabError
            requoted = _requoted(source, exc.lineno) if exc.msg.startswith("f-string") and exc.lineno else None
            if requoted is None:
                raise PythonSyntaxError(label, exc.lineno or 1, exc.offset or 1, exc.msg) from None
            source = requoted
        except ValueError as exc:  # "source code string cannot contain null bytes"
            raise PythonSyntaxError(label, *_nul_position(source), str(exc).splitlines()[0]) from None
        except (MemoryError, RecursionError):
            raise PythonSyntaxError(label, 1, 1, "the code is nested too deeply to parse") from None
    else:
        raise PythonSyntaxError(label, 1, 1, f"over {_MAX_REQUOTED_LINES} lines of f-strings in Python 3.12's syntax")
    depth, line, col = _depth(tree, max_depth)
    if depth > max_depth:
        raise PythonSyntaxError(label, line, col, f"the code is nested over {max_depth} levels deep, which mint-migrate does not read")
    return tree, source


_MAX_REQUOTED_LINES = 200
_FSTRING_START = re.compile(r"(?<!\w)(?:[rR]?[fF]|[fF][rR])('''|\"\"\"|'|\")")


def _requoted(source: str, lineno: int) -> str | None:
    """`source` with the f-strings that start on line `lineno` rewritten for Python 3.11: a string
    inside a replacement field written with the f-string's own quote takes the other quote (when
    its text holds neither). None when nothing on that line could be rewritten so."""
    starts = [0, *(i + 1 for i, ch in enumerate(source) if ch == "\n")]
    if lineno > len(starts):
        return None
    end = starts[lineno] if lineno < len(starts) else len(source)
    chars = list(source)
    changed = False
    for match in _FSTRING_START.finditer(source, starts[lineno - 1], end):
        changed |= _requote_fstring(chars, match.end(), match.group(1))
    return "".join(chars) if changed else None


def _requote_fstring(chars: list[str], at: int, quote: str) -> bool:
    """Swap, in place, the quotes of the strings inside the replacement fields of the f-string
    whose text starts at `at` and ends at `quote`; whether any was swapped."""
    other = "'" if quote[0] == '"' else '"'
    depth, i, changed = 0, at, False
    while i < len(chars):
        ch = chars[i]
        if depth == 0:  # the f-string's own text
            if "".join(chars[i : i + len(quote)]) == quote or (ch == "\n" and len(quote) == 1):
                return changed
            if ch == "\\" or (ch == "{" and chars[i + 1 : i + 2] == ["{"]):
                i += 2
                continue
            depth += ch == "{"
            i += 1
            continue
        if ch in "'\"":  # a string inside a replacement field: to its closing quote, on this line
            close = next((j for j in range(i + 1, len(chars)) if chars[j] in (ch, "\n") and chars[j - 1] != "\\"), None)
            if close is None or chars[close] == "\n":
                return changed
            if ch == quote[0] and other not in chars[i + 1 : close]:
                chars[i] = chars[close] = other
                changed = True
            i = close + 1
            continue
        if ch == "\n" and len(quote) == 1:
            return changed
        depth += (ch in "{[(") - (ch in "}])")
        i += 1
    return changed


def parse_module(source: str, label: str = "<source>"):
    """libcst's Module for `source`, after parse_ast has checked that libcst can take it safely."""
    import libcst as cst

    tree, source = _parse(source, label, "exec", MAX_DEPTH)
    source = _without_lone_backslashes(source, tree, label)
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise PythonSyntaxError(label, exc.raw_line, exc.raw_column + 1, exc.message.strip().splitlines()[0]) from None
    except (cst.CSTValidationError, RecursionError, ValueError, MemoryError) as exc:
        raise PythonSyntaxError(label, 1, 1, f"libcst cannot represent this source ({type(exc).__name__})") from None


_LONE_BACKSLASH = re.compile(r"^[ \t]*\\\n", re.MULTILINE)


def _without_lone_backslashes(source: str, tree: ast.AST, label: str) -> str:
    """`source` with each line that holds only a continuation backslash made blank. libcst counts
    such a line as no line at all, so every position after it would be one line early; blanking it
    keeps the meaning (checked: the same tree) and the line count."""
    if not _LONE_BACKSLASH.search(source):
        return source
    blanked = _LONE_BACKSLASH.sub("\n", source)
    try:
        same = ast.dump(parse_ast(blanked, label)) == ast.dump(tree)
    except PythonSyntaxError:
        same = False
    return blanked if same else source  # a backslash inside a string is part of its value: keep it


def literal_eval(text: str) -> Any:
    """ast.literal_eval under the AST lock; ValueError for anything that is not a plain literal."""
    try:
        with _AST_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.literal_eval(text)
    except (SyntaxError, MemoryError, RecursionError, TypeError) as exc:
        raise ValueError(f"not a literal: {type(exc).__name__}") from None


def evaluated_value(node) -> Any:
    """A libcst literal node's Python value (its `evaluated_value`, which runs ast.literal_eval),
    or None when it has none: a NUL byte or an odd escape in a string is the source's business."""
    try:
        with _AST_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return node.evaluated_value
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError, AttributeError):
        return None


def serialise_stdlib_ast_parse() -> None:
    """Make `ast.parse` itself take the AST lock, for code this project does not own.

    In a threaded server our own parses hold the lock, but CPython 3.11 also builds AST objects
    for others: `traceback` parses each source line it formats (its caret anchors) and
    `ast.literal_eval` calls `ast.parse`. One of those on another thread in the middle of our
    parse is the race this module exists to stop, so the MCP server routes them through the lock.
    """
    if getattr(ast.parse, "_mint_migrate_locked", False):
        return
    unlocked = ast.parse

    def parse(*args, **kwargs):
        with _AST_LOCK:
            return unlocked(*args, **kwargs)

    parse._mint_migrate_locked = True  # type: ignore[attr-defined]
    parse.__doc__ = unlocked.__doc__
    ast.parse = parse


def _depth(tree: ast.AST, limit: int) -> tuple[int, int, int]:
    """(depth, line, column) of `tree` level by level, without recursion, stopping past `limit`;
    the position is that of a node on the level that went past it (1, 1 when it has none)."""
    level, depth = [tree], 0
    while level:
        depth += 1
        if depth > limit:
            where = next((node for node in level if hasattr(node, "lineno")), None)
            return depth, getattr(where, "lineno", 1), getattr(where, "col_offset", 0) + 1
        below: list[ast.AST] = []
        for node in level:
            for name in node._fields:  # ast.iter_child_nodes, without a generator per node (4x faster)
                value = getattr(node, name, None)
                if isinstance(value, list):
                    below.extend(item for item in value if isinstance(item, ast.AST))
                elif isinstance(value, ast.AST):
                    below.append(value)
        level = below
    return depth, 1, 1


def _nul_position(source: str) -> tuple[int, int]:
    index = source.find("\0")
    if index < 0:
        return 1, 1
    line = source.count("\n", 0, index) + 1
    return line, index - (source.rfind("\n", 0, index) + 1) + 1
