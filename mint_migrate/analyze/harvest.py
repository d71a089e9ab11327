"""One pass over the inputs that collects every setting they state, whatever the framework.

The framework analyzers read the settings they know by where their framework keeps them; this
harvest reads settings by what they are: every named literal binding with its line. Launch-command
flags and hydra/dotlist overrides, YAML config keys, keywords given to a trainer / config /
optimizer / scheduler / PEFT / sampling call, argparse and dataclass defaults, module constants,
hyperparameter-looking locals of a function, dict entries, and the environment a launcher exports.

The ledger (ledger.py) is built from it, and the names are mapped to settings by one synonym table
(synonyms.py). When one name is stated several times, the value the run uses wins, by the same
precedence as the analyzers (evidence.Level): code, then command line, then config, then usage
example, then a default written in the script.
"""

import re
from dataclasses import dataclass
from typing import Any

import libcst as cst

from mint_migrate.analyze.evidence import Level, Loc, Value
from mint_migrate.analyze.inputs import InputFile, Project
from mint_migrate.analyze.pycommon import OPTIMIZERS, unread_field
from mint_migrate.analyze.pyvalues import CallSite, PySource, option_default, unpacked
from mint_migrate.analyze.scalars import parse_scalar
from mint_migrate.analyze.synonyms import looks_like_setting, meaning
from mint_migrate.analyze.yamlconf import YamlConfig
from mint_migrate.pyindex import dotted_name, field_default, literal_value
from mint_migrate.pyparse import parse_ast

Kind = str  # flag | override | config | keyword | argparse | field | constant | local | dict | env | launcher


@dataclass(frozen=True)
class Stated:
    """One setting as the inputs write it."""

    key: str  # as written: a flag without its dashes, a dotted override or YAML path, a keyword, a name
    value: Any
    loc: Loc
    level: Level
    kind: Kind
    owner: str = ""  # the call a keyword is given to (`AdamW`), the class of a field, the launcher
    discarded: bool = False  # said to a call whose result nothing uses (a LoraConfig never handed over)
    evaluation: bool = False  # said to a call bound to an evaluation's name (`eval_params = SamplingParams(...)`)

    @property
    def norm(self) -> str:
        return normalise(self.key)

    @property
    def incidental(self) -> bool:
        """Said to a call that may serve something beside the training (a tokenizer call inside the
        loss or a reward, an evaluator's builder): a ledger item, never a canonical setting's value."""
        return self.kind == "keyword" and (self.owner in KEYWORD_CALLS or "eval" in self.owner.lower() or self.discarded
                                           or self.evaluation)


def normalise(key: str) -> str:
    """`--per-device-train-batch-size` and `per_device_train_batch_size` name the same setting."""
    return key.lstrip("-+~").replace("-", "_")


# Calls whose keywords are settings: constructors of configs, trainers, optimizers, schedulers,
# PEFT, sampling, and the loaders and generators whose options shape the run.
_SETTING_CALL_SUFFIXES = ("Config", "Arguments", "Args", "Trainer", "Params", "Parameters", "Scheduler", "LR",
                          "Loss", "Dataset", "Sampler", "Overrides", "Options", "Settings", "Builder")
_SETTING_CALLS = {"from_pretrained", "generate", "load_dataset", "get_scheduler", "get_peft_model",
                  "DataLoader", "sample", "sample_async", "clip_grad_norm_", "clip_grad_value_",
                  "SamplingParams", "LLM", "spawn_service", "as_service", "options", "manual_seed", "seed",
                  "set_seed", "seed_everything", "AdamParams", "create_lora_training_client",
                  "create_lora_training_client_async", "prepare_model_for_kbit_training", "BitsAndBytesConfig",
                  "train"}  # `trainer.train(dataset, num_steps=1)`: a project trainer's run length
# Calls that are not settings calls, but some of whose keywords are (never filling a canonical
# setting): the truncation length of the tokenizer call that builds the training batch, and the
# loss a training step is given (`forward_backward(data, loss_fn="importance_sampling")`).
KEYWORD_CALLS = {"tokenizer": {"max_length"}, "encode": {"max_length"}, "encode_plus": {"max_length"},
                 "batch_encode_plus": {"max_length"}, "apply_chat_template": {"max_length"},
                 "forward_backward": {"loss_fn"}, "forward_backward_async": {"loss_fn"}}
# Positional arguments that are settings, by call: (position, key).
_POSITIONAL = {"clip_grad_norm_": (1, "max_norm"), "clip_grad_value_": (1, "clip_value"),
               "manual_seed": (0, "seed"), "set_seed": (0, "seed"), "seed_everything": (0, "seed"),
               "seed": (0, "seed")}
_MAX_ITEMS = 5000  # a generated config can be huge; the ledger is for people and agents


def is_setting_call(name: str) -> bool:
    return (name in _SETTING_CALLS or name in OPTIMIZERS or name.endswith(_SETTING_CALL_SUFFIXES)
            or (name.startswith("get_") and "schedule" in name))


def harvest(project: Project) -> list[Stated]:
    """Every setting the inputs state, one item per name: the value the run uses."""
    found: list[Stated] = []
    own = {name.rsplit(".", 1)[-1] for f in project.pythons() for name in f.python.functions}
    composed = {v.loc.path for config in project.hydra_configs()
                for v in config.values.values()}  # read under their hydra package by _hydra
    for f in project.files:
        if f.shell is not None:
            found += _shell(f)
        if f.yaml is not None and f.label not in composed:
            found += _yaml(f)
        if f.python is not None:
            others = "\n".join(g.python.text for g in project.pythons() if g is not f)
            found += _python(f, own, others)
    if project.hydra is not None:
        found += _composed(project.hydra)
    for command, _script in project.launches:  # a launcher's runs and their variants (if/else branches)
        if not command.auxiliary:
            found += _command(command)
    return _winners(found)[:_MAX_ITEMS]


def _winners(found: list[Stated]) -> list[Stated]:
    """One item per (normalised) name: the highest level wins; among equals, the last one said.
    Keywords of different calls stay apart (`AdamW(lr=)` and `Critic(lr=)` are two settings), except
    that one name said twice at one line (the same call read twice) is one item."""
    best: dict[tuple[str, str], Stated] = {}
    order: list[tuple[str, str]] = []
    for item in found:
        slot = (item.norm, item.owner if item.kind == "keyword" else "")
        old = best.get(slot)
        if old is None:
            order.append(slot)
            best[slot] = item
        elif item.level > old.level or (item.level == old.level and not (item.incidental and not old.incidental)):
            best[slot] = item  # an evaluation's copy of a keyword never hides the training's
    seen: set[tuple[str, int, str]] = set()
    out = []
    for slot in order:
        item = best[slot]
        mark = (item.norm, item.loc.line, item.loc.path)
        if mark in seen:
            continue
        seen.add(mark)
        out.append(item)
    return out


# --- shell ------------------------------------------------------------------------------------------


def _shell(f: InputFile) -> list[Stated]:
    out = []
    for name, value in (f.shell.command_env | f.shell.exports).items():
        scalar = parse_scalar(value.value) if isinstance(value.value, str) else value.value
        if _plain(scalar):
            out.append(Stated(name, scalar, value.loc, value.level, "env"))
    return out


def _command(command) -> list[Stated]:
    out = []
    for arg in command.launcher_args:
        if arg.name and arg.value is not None and _plain(arg.value.value):
            out.append(Stated(arg.written.lstrip("-"), arg.value.value, arg.value.loc, arg.value.level, "launcher",
                              owner=command.launchers[0] if command.launchers else command.program))
    for arg in command.args:
        if arg.kind not in ("flag", "override") or not arg.name:
            continue
        value = arg.literal(Level.COMMAND) if arg.kind == "flag" else (arg.value or arg.literal(Level.COMMAND))
        if value is None or not _plain(value.value):
            continue
        level = arg.value.level if arg.value is not None else value.level
        key = arg.written.lstrip("-").lstrip("+~") if arg.kind == "flag" else arg.name
        out.append(Stated(key, value.value, value.loc, level, arg.kind))
    for name, value in command.env.items():  # `VLLM_USE_V1=1 python3 -m ...`: read as JSON, like exports
        scalar = parse_scalar(value.value) if isinstance(value.value, str) else value.value
        if _plain(scalar):
            out.append(Stated(name, scalar, value.loc, value.level, "env"))
    return out


# --- YAML -------------------------------------------------------------------------------------------


def _yaml(f: InputFile) -> list[Stated]:
    out = []
    for key, value in f.yaml.values.items():
        if _plain(value.value):
            out.append(Stated(key, value.value, value.loc, value.level, "config"))
        elif isinstance(value.value, list) and all(isinstance(v, dict) for v in value.value):
            # a list of mappings (a TRL dataset_mixture): each scalar as `key[i].name`, at its own line
            for i, entry in enumerate(value.value):
                for name, item in entry.items():
                    line = f.yaml.item_lines.get(f"{key}.{i}.{name}", value.loc.line)
                    if _plain(item) and item is not None:
                        out.append(Stated(f"{key}[{i}].{name}", item, Loc(value.loc.path, line), value.level,
                                          "config"))
    return out


# --- Python -----------------------------------------------------------------------------------------


def _python(f: InputFile, own: set[str], others: str) -> list[Stated]:
    """`own`: the functions the inputs define (a loop's `rollout`, `generate_completions`); `others`:
    the text of the other Python files."""
    src = f.python
    out: list[Stated] = []
    example = f.example if f.launched_by is None else None
    if example is not None:
        out += _command(example)
    out += _hydra(src)
    out += _argparse(src)
    out += _fields(src, others)
    out += _assignments(src)
    out += _calls(src, own)
    out += _entry_defaults(src)
    out += _attribute_settings(src)
    return out


def _attribute_settings(src: PySource) -> list[Stated]:
    """`training_args.gradient_checkpointing_kwargs = {"use_reentrant": True}`, `cfg.lr = 1e-5`: a
    setting given to a config object after it was built; `os.environ["X"] = "1"`, the run's environment."""
    import ast

    out = []
    for node in ast.walk(parse_ast(src.text, src.label)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _environ_key(node.targets[0]):
            value = node.value.value if isinstance(node.value, ast.Constant) else None
            if isinstance(value, str):  # `os.environ["TOKENIZERS_PARALLELISM"] = "false"`: read as JSON, like exports
                out.append(Stated(_environ_key(node.targets[0]), parse_scalar(value), src.at(node.lineno), Level.CODE,
                                  "env"))
            continue
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Attribute):
            continue
        if isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self":
            continue  # an object's own state, not a run setting
        try:
            value = ast.literal_eval(node.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if value is not None and (_plain(value) or _flat_dict(value)):
            out.append(Stated(node.targets[0].attr, list(value) if isinstance(value, tuple) else value,
                              src.at(node.lineno), Level.CODE, "attribute"))
    return out


def _environ_key(target) -> str | None:
    """The variable `os.environ["NAME"] = ...` sets."""
    import ast

    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) and target.value.attr == "environ" \
            and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
        return target.slice.value
    return None


# Functions whose parameters are the run's settings: a script's entry point (also when `fire.Fire`
# or a CLI library builds the command line from it) and verl's reward entry.
_ENTRY_NAMES = {"main", "train", "compute_score", "run", "finetune"}


def _entry_defaults(src: PySource) -> list[Stated]:
    fired = {dotted for call in src.calls if call.name in ("Fire", "run", "command", "CLI")
             for arg in call.node.args[:1] if (dotted := _name_of(arg.value))}
    out = []
    for name, info in src.functions.items():
        if "@" in name or not (name in _ENTRY_NAMES or name in fired or _is_loss(name)):
            continue
        for param in info.params.values():
            default = option_default(param.default) if param.default is not None else None  # typer.Option(8, ...)
            if default is None or not _literal_node(default):
                continue
            value = src.evaluate(default, None)
            if value is None or value.value is None or not _plain(value.value):
                continue
            out.append(Stated(param.name, value.value, value.loc, Level.DEFAULT, "argparse", owner=name))
    return out


def _is_loss(name: str) -> bool:
    """A loss function a hand-written trainer calls with its defaults (`def grpo_loss(..., beta=0.1)`):
    those defaults are the objective's coefficients."""
    short = name.rsplit(".", 1)[-1].lower()
    return short.endswith("loss") or short.startswith(("loss_", "compute_loss", "compute_policy_loss"))


def _name_of(node: cst.BaseExpression) -> str | None:
    return node.value if isinstance(node, cst.Name) else None


def _hydra(src: PySource) -> list[Stated]:
    """The config a `@hydra.main` function receives, composed from its defaults list and overrides."""
    return [] if src.hydra is None else _composed(src.hydra)


def _composed(config: YamlConfig) -> list[Stated]:
    """A composed hydra config's values; `???` is hydra's "must be given", not a value."""
    return [Stated(k, v.value, v.loc, v.level, "config") for k, v in config.values.items()
            if _plain(v.value) and v.value != "???"]


def _argparse(src: PySource) -> list[Stated]:
    out = []
    for dest, arg in src.argparse.items():
        value = None
        if arg.default is not None:
            value = src.evaluate(arg.default, None)
        elif arg.action in ("store_true", "store_false"):
            value = Value(arg.action == "store_false", src.at(arg.line), Level.DEFAULT)
        if (value is None or value.value is None) and arg.action not in ("store_true", "store_false"):
            value = src.filled_default(dest)
        if value is None or not _plain(value.value) or value.value is None:
            continue
        out.append(Stated(dest, value.value, value.loc, Level.DEFAULT, "argparse"))
    for name, (node, _line) in src.set_defaults.items():
        value = src.evaluate(node, None)
        if value is not None and _plain(value.value):
            out.append(Stated(name, value.value, value.loc, Level.DEFAULT, "argparse"))
    return out


def _fields(src: PySource, others: str) -> list[Stated]:
    """Defaults of the config classes the run uses; a dataclass nothing builds or parses (its parser
    commented out, `others`: the text of the inputs' other Python files) states nothing."""
    used = src.name_uses()  # a class's own definition counts once
    out = []
    for info in src.classes.values():
        if not info.is_config or not (used.get(info.name, 0) > 1 or re.search(rf"\b{info.name}\b", others)):
            continue
        for name, fdef in info.fields.items():
            if unread_field(info, name, src.text, [others]):
                continue
            default = field_default(fdef.default)
            if default is None:
                continue
            value = src.evaluate(default, None)
            if value is None or not _plain(value.value) or value.value is None:
                continue
            out.append(Stated(name, value.value, value.loc, Level.DEFAULT, "field", owner=info.name))
    return out


def _assignments(src: PySource) -> list[Stated]:
    """Module constants (and hyperparameter-named locals of functions) bound to literal values."""
    out = []
    for name, assignments in src.assigns.items():
        for a in assignments:
            bound = unpacked(a, name)
            if bound is None or name.startswith("__"):
                continue
            if isinstance(bound, cst.Dict) and not _literal_node(bound):
                if all(isinstance(e, cst.DictElement) and _bound_literal(e.value) for e in bound.elements):
                    out += _dict_entries(src, bound, a.scope, defaults=_merged_over(src, name))
                continue
            local = a.scope is not None
            if not _literal_node(bound) and not ((name.isupper() or looks_like_setting(name))
                                                 and _computed(bound)):
                continue
            if local and not (name.isupper() or looks_like_setting(name) or _entry_local(src, a, bound)):
                continue
            value = src.evaluate(bound, a.scope)
            if value is None:
                continue
            if isinstance(value.value, dict):
                out += _dict_entries(src, bound, a.scope, defaults=_merged_over(src, name))
                continue
            if not _plain(value.value) or value.value is None:
                continue
            out.append(Stated(name, value.value, value.loc, Level.CODE, "local" if local else "constant"))
    return out


def _entry_local(src: PySource, a, bound: cst.BaseExpression) -> bool:
    """A literal the entry point binds for its run (`question_suffix = " Answer in <answer>."`,
    `group_size = 8` in main()); counters and flags starting at 0, 1 or empty are not settings."""
    fn = src.function_of(a.scope)
    if fn is None or fn.name.rsplit(".", 1)[-1] not in _ENTRY_NAMES or not _literal_node(bound):
        return False
    value = literal_value(bound) if isinstance(bound, cst.Integer | cst.Float | cst.SimpleString) else None
    return value not in (None, 0, 1, "", 0.0) and not isinstance(value, bool)


def _merged_over(src: PySource, name: str) -> bool:
    """A dict the code copies or updates (`config = DEFAULT_CONFIG.copy(); config.update(yaml...)`):
    its entries are defaults that a config may override, not the run's last word."""
    return re.search(rf"\b{re.escape(name)}\.(copy|update)\(|\bdict\(\s*{re.escape(name)}\s*\)|\*\*{re.escape(name)}\b",
                     src.text) is not None


def _dict_entries(src: PySource, node: cst.BaseExpression, scope, *, defaults: bool = False) -> list[Stated]:
    out = []
    if not isinstance(node, cst.Dict):
        return out
    for element in node.elements:
        if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
            continue
        key = src.evaluate(element.key, scope)
        value = src.evaluate(element.value, scope)
        if key is None or value is None or not isinstance(key.value, str) or not _plain(value.value):
            continue
        if value.value is None or not _bound_literal(element.value):
            continue
        level = Level.DEFAULT if defaults else max(value.level, Level.DEFAULT)
        out.append(Stated(key.value, value.value, value.loc, level, "dict"))
    return out


def _calls(src: PySource, own: set[str]) -> list[Stated]:
    out = []
    for call in src.calls:
        if call.switched_off():
            continue
        if is_setting_call(call.name) or call.name in KEYWORD_CALLS:
            out += _call_items(src, call)
            if call.assigned_to:  # `setattr(training_args, "max_length", 512)` after it is built
                out += [Stated(key, value.value, value.loc, max(value.level, Level.DEFAULT), "keyword", owner=call.name)
                        for key, value in src.attribute_writes(call.assigned_to) if _plain(value.value)]
        elif (call.name in own or _SAMPLING_WORDS.search(call.name)) and not _in_evaluation(src, call):
            # a loop's own `rollout(..., num_answer_per_question=N)`, an engine's `generate_batch(num_samples=16)`
            out += _call_items(src, call, named_only=True)
        if call.name == "get":
            out += _config_get(src, call)
        if is_setting_call(call.name) or call.name in ("apply", "update", "override", "replace"):
            for arg in call.node.args:  # `blueprint.apply({"learning_rate": 4e-5, ...})`
                if isinstance(arg.value, cst.Dict):
                    out += _dict_entries(src, arg.value, call.scope)
    return out


_EVALUATION_NAME = re.compile(r"(^|_)(eval|evaluation|val|valid|validation|test)(_|$)", re.I)


def _call_items(src: PySource, call: CallSite, *, named_only: bool = False) -> list[Stated]:
    out = []
    owner = call.name
    only = KEYWORD_CALLS.get(call.name)
    for keyword, node, written_in, scope in call.keyword_sources():
        if not _bound_literal(node) or (only and keyword not in only):
            continue
        if named_only and not _names_a_setting(keyword, owner):
            continue
        value = written_in.evaluate(node, scope)
        if value is None or value.value is None or not (_plain(value.value) or _flat_dict(value.value)):
            continue
        out.append(Stated(keyword, value.value, value.loc, max(value.level, Level.DEFAULT), "keyword",
                          owner=owner, discarded=call.name == "LoraConfig" and call.discarded(),
                          evaluation=_EVALUATION_NAME.search(call.assigned_to or "") is not None))
    if named_only:
        return out
    position = _POSITIONAL.get(call.name)
    if position is not None:
        index, key = position
        node = call.arg_node(index)
        if node is not None and _literal_node(node):
            value = src.evaluate(node, call.scope)
            if value is not None and _plain(value.value):
                out.append(Stated(key, value.value, value.loc, Level.CODE, "keyword", owner=owner))
    return out


# Names a script gives its config mapping: `cfg.get("rollout_threads", 1)` states a setting and
# its default where the config file may not.
_CONFIG_NAMES = {"cfg", "config", "conf", "args", "hparams", "hp", "params", "settings", "opts", "options",
                 "kwargs", "training_config", "train_config", "trainer_config", "run_config"}


def _config_get(src: PySource, call: CallSite) -> list[Stated]:
    func = call.node.func
    receiver = func.value if isinstance(func, cst.Attribute) else None
    while isinstance(receiver, cst.Attribute):  # `self.cfg.get(...)`, `config.training.get(...)`
        if receiver.attr.value in _CONFIG_NAMES:
            break
        receiver = receiver.value
    name = receiver.attr.value if isinstance(receiver, cst.Attribute) else _name_of(receiver) if receiver else None
    if name not in _CONFIG_NAMES or len(call.node.args) != 2 or call.node.args[0].keyword is not None:
        return []
    key, default = call.node.args[0].value, call.node.args[1].value
    if not isinstance(key, cst.SimpleString) or not _literal_node(default):
        return []
    key_value, value = src.evaluate(key, call.scope), src.evaluate(default, call.scope)
    if key_value is None or not isinstance(key_value.value, str) or value is None or value.value is None:
        return []
    if not _plain(value.value):
        return []
    return [Stated(key_value.value, value.value, value.loc, Level.DEFAULT, "field", owner=name)]


# --- values -----------------------------------------------------------------------------------------


def _literal_node(node: cst.BaseExpression) -> bool:
    """A value written as a literal (or arithmetic / a list of literals): `1e-5`, `-1`, `2 ** 10`,
    `(0.9, 0.95)`, `"Qwen/Qwen3-4B"`. Names and calls are the harvest of where they are bound."""
    if isinstance(node, cst.Integer | cst.Float | cst.SimpleString | cst.ConcatenatedString):
        return True
    if isinstance(node, cst.Name):
        return node.value in {"True", "False", "None"}
    if isinstance(node, cst.UnaryOperation):
        return _literal_node(node.expression)
    if isinstance(node, cst.BinaryOperation):
        return _literal_node(node.left) and _literal_node(node.right)
    if isinstance(node, cst.List | cst.Tuple):
        return all(isinstance(e, cst.Element) and _literal_node(e.value) for e in node.elements)
    if isinstance(node, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _literal_node(e.value) for e in node.elements)
    if isinstance(node, cst.FormattedString):
        return all(isinstance(p, cst.FormattedStringText) for p in node.parts)
    if isinstance(node, cst.IfExp):  # a literal either way; which one, the evaluator decides from the test
        return _literal_node(node.body) and _literal_node(node.orelse)
    return False


def _computed(node: cst.BaseExpression) -> bool:
    """A setting-named binding computed from others (`NUM_ANSWERS = BATCH_SIZE // NUM_QUESTIONS`,
    `BATCH_SIZE = config["training"]["batch_size"]`, `train_path = os.path.join(ROOT, "data/train.jsonl")`):
    the evaluator resolves it or gives nothing."""
    return isinstance(node, cst.BinaryOperation | cst.Subscript | cst.Name | cst.Attribute) or (
        isinstance(node, cst.Call) and dotted_name(node.func) in {"os.path.join", "path.join", "posixpath.join"})


_SAMPLING_WORDS = re.compile(r"generate|sample|rollout", re.I)


def _in_evaluation(src: PySource, call: CallSite) -> bool:
    """A call inside `evaluate()` / `run_validation()`: its sampling options are the evaluation's."""
    fn = src.function_of(call.scope) if call.scope is not None else None
    name = fn.name.rsplit(".", 1)[-1].lower() if fn is not None else ""
    return any(word in name for word in ("eval", "valid", "test", "benchmark"))


def _names_a_setting(keyword: str, owner: str) -> bool:
    found = meaning(keyword, owner)
    return found is not None and found.family in ("setting", "optimizer", "sampling", "kl")


def _bound_literal(node: cst.BaseExpression) -> bool:
    """A literal, or a name the evaluator follows to one (`num_samples=group_size` with `group_size = 1`
    above, `"model_name": model_name` with a keyword default), or a settings object's field the
    evaluator resolves (`r=args.lora_rank`: the argparse default or the launch's flag): the item is
    cited at the literal; or an f-string of such names (`f"{model_id}-SFT"`), cited at its own line."""
    if isinstance(node, cst.FormattedString):
        return all(isinstance(p, cst.FormattedStringText) or isinstance(p.expression, cst.Name) for p in node.parts)
    return _literal_node(node) or isinstance(node, cst.Name) or (
        isinstance(node, cst.Attribute) and dotted_name(node) is not None)


def _flat_dict(value: Any) -> bool:
    """A keyword's dict of options (`gradient_checkpointing_kwargs={"use_reentrant": True}`)."""
    return isinstance(value, dict) and len(value) <= 32 and all(
        isinstance(k, str) and _plain(v) and not isinstance(v, list | tuple) for k, v in value.items())


def _plain(value: Any) -> bool:
    """A value a ledger can show: a scalar, or a list of scalars (a dict is a group of settings)."""
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list | tuple):
        return len(value) <= 64 and all(v is None or isinstance(v, bool | int | float | str) for v in value)
    return False
