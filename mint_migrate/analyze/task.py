"""The user's task, beyond the settings: their data, their reward and their schedule.

Each framework says these three things its own way: TRL in config fields and `reward_funcs`,
verl in hydra keys (`data.prompt_key`, `custom_reward_function.path`, `optim.warmup_style`),
OpenRLHF in flags (`--input_key`, `--remote_rm_url`, `--lr_warmup_ratio`), torchforge in its app
config and actors, Tinker and plain PyTorch in code. This module reads them from the parsed
Project (and the Evidence the framework analyzer collected) into the plan's DataPlan, RewardPlan
and SchedulePlan. Framework defaults that decide the outcome (TRL's linear LR decay, OpenRLHF's
cosine-with-min-lr, verl's token-mean loss) are applied and said so in the reasons.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from mint_migrate.analyze.evidence import Evidence, Value
from mint_migrate.analyze.inputs import InputFile, Project, add_file, python_on_disk
from mint_migrate.analyze.pycommon import dataset_calls
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.scalars import as_int, as_number
from mint_migrate.plan import (
    Algorithm,
    DataPlan,
    PlanWarning,
    RewardFunction,
    RewardPlan,
    ScaffoldKind,
    SchedulePlan,
    Settings,
)
from mint_migrate.pyparse import parse_ast


def cst_name(name: str):
    """A libcst Name node, to evaluate a module constant through the source's index."""
    import libcst as cst

    return cst.Name(name)

DATA_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")
# TRL's built-in reward functions (trl.rewards) and verl's built-in scorers live in framework
# packages a MinT machine does not have.
REWARD_WORDS = ("reward", "score", "correct", "grade", "accuracy", "check_answer")


@dataclass
class Task:
    data: DataPlan | None = None
    reward: RewardPlan | None = None
    schedule: SchedulePlan = field(default_factory=SchedulePlan)
    throughput: str | None = None  # why the source asks for the throughput variant, if it does
    warnings: list[PlanWarning] = field(default_factory=list)

    def warn(self, code: str, message: str, source: str | None = None) -> None:
        self.warnings.append(PlanWarning(code=code, message=message, source=source))


def extract(project: Project, ev: Evidence, read_task, algorithm: Algorithm, kind: ScaffoldKind,
            settings: Settings) -> Task:
    """Data, reward and schedule of the source, for the scaffold `kind`. `read_task` is the framework
    analyzer's task reader (its registry row, mint_migrate/analyze/registry.py), if it has one."""
    task = Task()
    if read_task is not None:
        read_task(project, ev, algorithm, kind, settings, task)
    if task.data is None and settings.dataset is not None:
        task.data = data_source(project, settings.dataset.value, settings.dataset.source)
    if task.data is not None:
        default_fields(task.data, kind)
    if kind != "grpo":
        task.reward = None
    elif task.reward is None:
        task.reward = RewardPlan(style="plain", status="placeholder", reason="the inputs name no reward function; "
                                 "train.py's placeholder (last number equals the answer) stands in: replace it, or "
                                 "pass --reward FILE:FUNCTION")
    epochs = settings.num_epochs
    if epochs is not None and as_number(epochs.value) and task.schedule.epochs is None:
        task.schedule.epochs = float(as_number(epochs.value))
    return task


# --- data ----------------------------------------------------------------------------------------


def data_source(project: Project, value: object, where: str | None) -> DataPlan | None:
    """A DataPlan for a dataset setting: a local file (found beside the inputs), or a Hub id."""
    if isinstance(value, list):
        value = value[0] if value else None
    if not isinstance(value, str) or not value:
        return None
    data = DataPlan(source=value, source_loc=where)
    local = local_file(project, value)
    if local is not None:
        data.source_kind, data.local_path = "local", str(local)
    elif value.lower().endswith(DATA_SUFFIXES) or value.startswith(("/", ".", "~", "$")):
        data.source_kind = "local"
        data.notes.append(f"{value} is not on this machine: train.py looks for it there at run time "
                          "($VARS and ~ expanded); pass --data FILE to use another copy")
    elif "/" in value or value.replace("-", "").replace("_", "").isalnum():
        data.source_kind = "hub"
    return data


def local_file(project: Project, written: str) -> Path | None:
    """The data file a path names, relative to any input file's folder ($HOME and ~ expanded)."""
    expanded = os.path.expanduser(os.path.expandvars(written))
    candidates = [Path(expanded)] if Path(expanded).is_absolute() else [
        f.path.parent / expanded for f in project.files]
    for candidate in candidates:
        if candidate.is_file() and candidate.suffix.lower() in DATA_SUFFIXES:
            return candidate.resolve()
    return None


def default_fields(data: DataPlan, kind: ScaffoldKind) -> None:
    if data.format == "unknown":
        data.format = {"grpo": "prompt_answer", "distill": "prompt_answer", "dpo": "preference"}.get(kind, "unknown")


def load_dataset_call(project: Project, data: DataPlan) -> None:
    """load_dataset(name, subset, split=...) in the sources: the subset and split it reads."""
    for f in project.pythons():
        for call in dataset_calls(f.python):
            subset, split = call.arg(1), call.kwarg("split")
            if subset is not None and isinstance(subset.value, str) and data.subset is None:
                data.subset = subset.value
            if split is not None and isinstance(split.value, str) and data.split is None:
                data.split = split.value
            return


# --- schedule helpers ------------------------------------------------------------------------------


def schedule_from(task: Task, kind: str | None, warmup_steps: object = None, warmup_ratio: object = None,
                   min_lr_ratio: object = None, why: str = "") -> None:
    s = task.schedule
    if kind in ("constant", "linear", "cosine"):
        s.lr_schedule = kind
    if as_int(warmup_steps) and as_int(warmup_steps) > 0:
        s.warmup_steps = as_int(warmup_steps)
    if as_number(warmup_ratio) and 0 < as_number(warmup_ratio) < 1:
        s.warmup_ratio = float(as_number(warmup_ratio))
    if as_number(min_lr_ratio) and 0 < as_number(min_lr_ratio) <= 1:
        s.min_lr_ratio = float(as_number(min_lr_ratio))
    warm = f", warmup {s.warmup_steps} steps" if s.warmup_steps else (
        f", warmup {s.warmup_ratio:g} of the steps" if s.warmup_ratio else "")
    floor = f", floor {s.min_lr_ratio:g} x LR" if s.min_lr_ratio else ""
    s.reasons.append(f"learning rate: {s.lr_schedule}{warm}{floor} ({why}); train.py passes it to every "
                     "optim_step as AdamParams(learning_rate=...)")


def normalize_loss(task: Task, mode: str, why: str) -> None:
    task.schedule.loss_normalization = mode
    what = {"token_mean": "divides by the trained tokens of the batch",
            "sequence_mean": "averages each sequence over its tokens, then over the sequences",
            "constant": "divides by a fixed length (max tokens) and the number of sequences",
            "sum": "sums over tokens, as MinT does"}[mode]
    task.schedule.reasons.append(f"loss {mode}: the source {what} ({why}); MinT sums, so train.py scales the "
                                 "per-token weights/advantages (LOSS_NORMALIZATION)")


def updates(task: Task, batch: int | None, mini: int | None, mini_why: str, epochs: int | None,
             epochs_why: str) -> None:
    """PPO's shape: the sampled batch split into mini-batches (one optim_step each), and passes over it."""
    if batch and mini and 0 < mini < batch and batch % mini == 0:
        task.schedule.minibatches = batch // mini
        task.schedule.reasons.append(f"{batch // mini} optim_steps per sampled batch = {mini_why}")
    if epochs and epochs > 1:
        task.schedule.updates_per_batch = epochs
        task.schedule.reasons.append(f"{epochs} passes over each sampled batch ({epochs_why})")


# --- TRL -----------------------------------------------------------------------------------------


def python_reward(project: Project, names: list[str], weights: list[float], style: str,
                   where: str | None) -> RewardPlan:
    """Reward functions named in the sources: defined in a Python input (extracted) or imported
    from a local module (referenced)."""
    functions = [RewardFunction(name=n.rsplit(".", 1)[-1], weight=w) for n, w in zip(names, weights, strict=True)]
    for f in project.pythons():
        defined = [n for n in (fn.name for fn in functions) if n in f.python.functions or n in f.python.classes]
        if len(defined) == len(functions):
            importable = importable_as_is(f.python)
            return RewardPlan(style=style, status="user", functions=functions, file=str(f.path.resolve()),
                              extract=not importable, source=where,
                              reason=f"{', '.join(defined)} from {f.label}" + (
                                  "" if importable else " (copied verbatim into rewards.py: importing the script "
                                  "itself would need its training framework, or start training)"))
    for f in project.pythons():
        modules = {f.python.imports[fn.name].rpartition(".")[0] for fn in functions if fn.name in f.python.imports}
        if len(modules) == 1 and all(fn.name in f.python.imports for fn in functions):
            module = next(iter(modules))
            if module.split(".")[0] in framework_packages() - {"mint", "tinker"}:
                return RewardPlan(style=style, status="placeholder", functions=functions, source=where,
                                  reason=f"{', '.join(n.name for n in functions)} come from {module}, a framework "
                                         "package a MinT machine does not have: write them as Python functions and "
                                         "pass --reward FILE:NAME")
            found = module_file(project, f, module)
            if found is not None:
                return RewardPlan(style=style, status="user", functions=functions, file=str(found), source=where,
                                  reason=f"{', '.join(n.name for n in functions)} from {found.name} (imported by "
                                         f"{f.label})")
    return RewardPlan(style=style, status="placeholder", functions=functions, source=where,
                      reason=f"{', '.join(n.name for n in functions)}: not defined in the inputs; pass the file that "
                             "defines them with --config, or --reward FILE:NAME to train.py")


# Training infrastructure a script may import besides its framework: importing such a script on a
# MinT machine would need it, or start training.
_INFRA_PACKAGES = ("datasets", "transformers", "accelerate", "deepspeed", "vllm", "ray", "peft")


def framework_packages() -> set[str]:
    """The source frameworks' own packages, as their analyzers recognise them (the registry), without
    the plain PyTorch reader's (torch is the one a reward module may import)."""
    from mint_migrate.analyze.registry import analyzers  # the registry imports the analyzers, which import this

    return {m.split(".")[0] for a in analyzers() if a.name != "pytorch" for m in a.imports}


def importable_as_is(src: PySource) -> bool:
    """Can train.py import this file as it is: only definitions at module level (importing it starts
    no training), and no training framework imported (a MinT machine has none)?"""
    import ast

    if src.imports_module(*framework_packages(), *_INFRA_PACKAGES) is not None:
        return False
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
               ast.AnnAssign, ast.Expr, ast.If)
    for node in parse_ast(src.text, src.label).body:
        if not isinstance(node, allowed):
            return False
        if isinstance(node, ast.If) and "__name__" not in ast.unparse(node.test):
            return False
        if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant):
            return False
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            name = ast.unparse(node.value.func)
            if not name.startswith(("re.compile", "logging.getLogger", "TypeVar", "frozenset", "set", "dict")):
                return False
    return True


def module_file(project: Project, f: InputFile, module: str) -> Path | None:
    relative = Path(*module.split(".")).with_suffix(".py")
    for base in {f.path.parent, *(g.path.parent for g in project.files)}:
        candidate = base / relative
        if candidate.is_file():
            return candidate.resolve()
    return None


# --- verl ----------------------------------------------------------------------------------------


def reward_file(project: Project, written: str) -> InputFile | None:
    found = project.find(written)
    if found is not None:
        return found
    for f in project.files:  # beside an input, or in a folder above (a path from the project's root)
        found = python_on_disk(project, f.path.parent, written)
        if found is not None:
            return found
    return None


# --- OpenRLHF ------------------------------------------------------------------------------------


def flag(flags: dict, *names: str) -> Value | None:
    """A flag by its flat name or any dotted spelling ending in it (--data.input_key)."""
    for name in names:
        for key, arg in flags.items():
            if (key == name or key.endswith("." + name)) and arg.value is not None:
                return arg.value
    return None


def switch(flags: dict, name: str) -> bool:
    return any(key == name or key.endswith("." + name) for key in flags)


# --- torchforge ----------------------------------------------------------------------------------


def string_constant(project: Project, name: str) -> str | None:
    for f in project.pythons():
        for assignment in f.python.assigns.get(name, []):
            value = f.python.evaluate(assignment.value, assignment.scope)
            if value is not None and isinstance(value.value, str):
                return value.value
    return None


# --- Tinker and plain PyTorch loops ----------------------------------------------------------------


def read_code_task(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
          task: Task) -> None:
    if settings.dataset is not None:
        task.data = data_source(project, settings.dataset.value, settings.dataset.source)
        if task.data is not None:
            load_dataset_call(project, task.data)
            _row_fields(project, task.data, kind)
    if kind == "sft":
        normalize_loss(task, "token_mean", "the loop's cross-entropy (model(...).loss) averages over the batch's tokens")
        if any(_masks_only_padding(f.python) for f in project.pythons()):
            task.schedule.train_on = "all"
            task.schedule.reasons.append("every token trained: the loop's labels mask only padding")
    for f in project.pythons():
        for call in f.python.calls:
            if call.name.startswith("get_") and call.name.endswith("schedule_with_warmup"):
                kind_name = call.name.removeprefix("get_").split("_schedule")[0]
                schedule_from(task, kind_name, call.kwarg("num_warmup_steps").value
                               if call.kwarg("num_warmup_steps") is not None else None, why=f"{call.name} ({call.loc})")
            elif call.name == "CosineAnnealingLR":
                schedule_from(task, "cosine", why=f"CosineAnnealingLR ({call.loc})")
    if kind == "grpo":
        task.reward = _code_reward(project)


def _masks_only_padding(src: PySource) -> bool:
    text = src.text
    return "labels" in text and "masked_fill" in text and "attention_mask" in text and "prompt" not in text.lower()


def _row_fields(project: Project, data: DataPlan, kind: ScaffoldKind) -> None:
    """The columns the loop reads from each row (row["question"], r["messages"], ...)."""
    import ast

    keys: list[str] = []
    chat = False
    for f in project.pythons():
        tree = parse_ast(f.python.text, f.label)
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
                    isinstance(node.slice.value, str) and isinstance(node.value, ast.Name) and \
                    node.value.id in {"row", "r", "example", "sample", "item", "x", "ex"}:
                keys.append(node.slice.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "apply_chat_template":
                chat = True
        template = _concatenated_template(tree)
        if template is not None and kind == "sft":
            (prompt, separator, completion) = template
            data.fields = {"prompt": prompt, "completion": completion}
            data.prompt_template = "{}" + separator
            data.format = "prompt_completion"
            data.notes.append(f"the loop trains on row['{prompt}'] + {separator!r} + row['{completion}'] + eos")
            return
    if "messages" in keys:
        data.format = "messages"
        return
    prompt = next((k for k in keys if k in {"question", "prompt", "problem", "instruction", "query", "input"}), None)
    answer = next((k for k in keys if k in {"answer", "solution", "label", "target", "output", "ground_truth"}), None)
    if prompt:
        data.fields["prompt"] = prompt
    if answer and kind in ("grpo", "distill"):
        data.fields["answer"] = answer
    data.chat_template = chat
    if answer and kind == "sft":
        data.fields["completion"] = answer


def mapped_rows(project: Project, data: DataPlan) -> None:
    """A function the script maps over its dataset (`dataset.map(make_conversation)`) that builds the
    rows the trainer reads: its prompt column, system prompt and prompt template move into DATA, so
    train.py's rows are the ones the source trained on (TRL's GRPO examples build `prompt` this way)."""
    import ast

    for f in project.pythons():
        tree = parse_ast(f.python.text, f.label)
        mapped = {node.args[0].id for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Attribute) and node.func.attr == "map" and node.args
                  and isinstance(node.args[0], ast.Name)}
        for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in mapped and n.args.args):
            row = fn.args.args[0].arg
            for ret in (n for n in ast.walk(fn) if isinstance(n, ast.Return) and isinstance(n.value, ast.Dict)):
                for key, value in zip(ret.value.keys, ret.value.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value in ("prompt", "messages"):
                        _mapped_prompt(f, row, value, data)
                    elif isinstance(key, ast.Constant) and isinstance(key.value, str) and \
                            (column := _column(row, value)) is not None and key.value != column:
                        data.fields[key.value] = column
                if "prompt" in data.fields:
                    data.notes.append(f"rows as {fn.name}() ({f.label}:{fn.lineno}) builds them: the prompt from "
                                      f"column {data.fields['prompt']!r}")
                    return


def _mapped_prompt(f: InputFile, row: str, value, data: DataPlan) -> None:
    """`[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": row["problem"]}]`, or a
    string built from one column: the column, the system prompt and the template around it."""
    import ast

    messages = value.elts if isinstance(value, ast.List) else [value]
    for message in messages:
        content, role = message, "user"
        if isinstance(message, ast.Dict):
            parts = {k.value: v for k, v in zip(message.keys, message.values, strict=True) if isinstance(k, ast.Constant)}
            role = parts.get("role").value if isinstance(parts.get("role"), ast.Constant) else "user"
            content = parts.get("content")
            data.chat_template = True
        if role == "system":
            text = _text(f, content)
            if text:
                data.system_prompt = text
            continue
        column = _column(row, content)
        if column is not None:
            data.fields["prompt"] = column
            continue
        template = _template(row, content)
        if template is not None:
            data.fields["prompt"], data.prompt_template = template


def _column(row: str, node) -> str | None:
    import ast

    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == row and \
            isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None


def _text(f: InputFile, node) -> str | None:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        value = f.python.evaluate(cst_name(node.id), None)
        return value.value if value is not None and isinstance(value.value, str) else None
    return None


def _template(row: str, node) -> tuple[str, str] | None:
    """f"{row['q']} Put the answer in \\boxed{{}}." -> ("q", "{} Put the answer in \\boxed{}.")"""
    import ast

    if isinstance(node, ast.JoinedStr):
        columns, text = [], ""
        for part in node.values:
            if isinstance(part, ast.Constant):
                text += str(part.value)
            elif isinstance(part, ast.FormattedValue) and (column := _column(row, part.value)) is not None:
                columns.append(column)
                text += "{}"
            else:
                return None
        return (columns[0], text) if len(columns) == 1 else None
    return None


def _concatenated_template(tree) -> tuple[str, str, str] | None:
    """row["a"] + "sep" + row["b"] (+ eos): the loop's own text format."""
    import ast

    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
            continue
        parts, stack = [], [node]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.BinOp) and isinstance(item.op, ast.Add):
                stack += [item.right, item.left]
            else:
                parts.append(item)
        keys = [p.slice.value for p in parts if isinstance(p, ast.Subscript) and isinstance(p.slice, ast.Constant)
                and isinstance(p.slice.value, str)]
        literals = [p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str)]
        if len(keys) == 2 and len(literals) == 1 and isinstance(parts[1], ast.Constant):
            return keys[0], literals[0], keys[1]
    return None


def _code_reward(project: Project) -> RewardPlan:
    """A reward in a hand-written loop: a tinker-cookbook style problem Env (a class with
    check_answer) or a function named like a reward, that the loop calls; defined in the script or
    imported from a module beside it."""
    for f in project.pythons():
        src = f.python
        called = list(dict.fromkeys(c.name for c in src.calls))
        for name in called:
            found = class_named(project, f, name)
            if found is not None and "check_answer" in methods(found[0]):
                return python_reward(project, [name], [1.0], "tinker_env", str(found[1].at(found[0].line)))
        for name in called:
            if any(w in name.lower() for w in REWARD_WORDS) and (name in src.functions or name in src.imports):
                where = str(src.at(src.functions[name].line)) if name in src.functions else None
                return python_reward(project, [name], [1.0], "plain", where)
    return RewardPlan(style="plain", status="placeholder", reason="no reward function found in the loop (a "
                      "framework recipe's own environment, or a reward the code does not call by name): pass "
                      "--reward FILE:FUNCTION")


def class_named(project: Project, f: InputFile, name: str):
    """(the class `name` as `f` sees it, the file that defines it): defined in `f`, or in the local
    module `f` imports it from; None when neither."""
    if name in f.python.classes:
        return f.python.classes[name], f.python
    module = f.python.imports.get(name)
    path = module_file(project, f, module.rsplit(".", 1)[0]) if module and "." in module else None
    if path is None:
        return None
    found = project.find(str(path)) or add_file(project, path, auto=True)
    if found.python is None or name not in found.python.classes:
        return None
    return found.python.classes[name], found.python


def methods(info) -> set[str]:
    import libcst as cst

    return {item.name.value for item in info.node.body.body if isinstance(item, cst.FunctionDef)}


