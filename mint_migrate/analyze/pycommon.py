"""Python facts that mean the same in every framework: model and dataset loading, optimizers,
LoRA configs, and the infrastructure imports that become server-side on MinT."""

import builtins
import functools
import re

import libcst as cst

from mint_migrate.analyze.algorithm_names import NAMED_WORDS, algorithm_in_name
from mint_migrate.analyze.evidence import Evidence, Loc, Value
from mint_migrate.analyze.pyvalues import CallSite, PySource, on_the_filesystem
from mint_migrate.analyze.registry import analyzers
from mint_migrate.pyindex import dotted_name, iter_nodes, literal_value

_NOT_MODELS = ("Tokenizer", "Processor", "Config", "FeatureExtractor", "ImageProcessor")
_NOT_MODEL_WORDS = ("tokenizer", "processor", "config", "extractor")
OPTIMIZERS = {"AdamW", "Adam", "SGD", "Adafactor", "AdamW8bit", "PagedAdamW", "PagedAdamW8bit", "Lion",
              "RMSprop", "Adagrad", "FusedAdam", "DeepSpeedCPUAdam"}
_INFRA_MODULES = {
    "deepspeed": "DeepSpeed (ZeRO sharding, offload)",
    "vllm": "vLLM rollout engine",
    "ray": "Ray cluster orchestration",
    "torch.distributed.fsdp": "FSDP sharding",
    "megatron": "Megatron parallelism",
    "sglang": "SGLang rollout engine",
    "monarch": "Monarch actors",
}


# `X.from_pretrained(id)`, or a model class's own loader (`RewardModel.from_sft_checkpoint(path)`)
_LOADER_NAMES = re.compile(r"from_pretrained\w*|from_\w*checkpoint")


def is_model_loader(call: CallSite) -> bool:
    if not _LOADER_NAMES.fullmatch(call.name):
        return False
    owner = call.qualname.rsplit(".", 2)[-2] if "." in call.qualname else ""
    return bool(owner) and not any(owner.endswith(s) for s in _NOT_MODELS) and (
        "Model" in owner or "For" in owner or owner.endswith(("LM", "Transformer", "Policy"))
        # a class picked at run time (`policy_cls = trainer.policy_hf_model_class`), not a tokenizer's
        or (owner.lower().endswith(("_cls", "_class")) and not any(w in owner.lower() for w in _NOT_MODEL_WORDS))
    )


_MODEL_ID_KEYWORDS = ("pretrained_model_name_or_path", "model_name_or_path", "model_id")


def model_id(call: CallSite) -> Value | None:
    for key in _MODEL_ID_KEYWORDS:
        value = call.kwarg(key)
        if value is not None:
            return value
    return call.arg(0)


def loaded_model(src: PySource, node: cst.BaseExpression, scope) -> Value | None:
    """The checkpoint the object `node` names was loaded from: `model = AutoModel...from_pretrained(id)`,
    or a loader of the project's own wrapping it (`model = load_base_model(model_path, adapter)`, whose
    `from_pretrained(model_path)` takes its parameter): then what the caller passes."""
    loader = src.assigned_call(node, scope)
    if loader is None:
        return None
    if loader.name == "from_pretrained":
        return model_id(loader)
    fn = src.functions.get(loader.name)
    inner = next((c for c in src.calls if fn is not None and c.scope is fn.node and is_model_loader(c)), None)
    if inner is None:
        return None
    written = next((inner.kwarg_node(k) for k in _MODEL_ID_KEYWORDS if inner.kwarg_node(k) is not None),
                   None) or inner.arg_node(0)
    if isinstance(written, cst.Name) and written.value in fn.params:
        given = loader.kwarg_node(written.value) or loader.arg_node(list(fn.params).index(written.value))
        return None if given is None else src.evaluate(given, loader.scope)
    return model_id(inner)


def model_loaders(src: PySource) -> list[CallSite]:
    return [c for c in src.calls if is_model_loader(c)]


def trained_model_call(src: PySource) -> CallSite | None:
    """The model the optimizer trains (`AdamW(model.parameters())`), else the first model loaded
    that is not named like a teacher, reference or reward model."""
    loaders = [c for c in model_loaders(src) if not c.switched_off()]  # `if args.resume:` left off
    for opt in (c for c in src.calls if is_optimizer(c.name)):
        first = opt.arg_node(0)
        target = _parameters_owner(first)
        if target:
            for call in loaders:
                if call.assigned_to == target:
                    return call
    others = ("teacher", "ref", "reward", "critic", "judge", "value")
    for call in loaders:
        if not any(word in (call.assigned_to or "").lower() for word in others):
            return call
    # a reference or teacher loads the policy's own checkpoint more often than not; a scorer never does
    return next((c for c in loaders if not any(w in (c.assigned_to or "").lower()
                                               for w in ("reward", "critic", "judge", "value"))), None)


def _parameters_owner(node: cst.BaseExpression | None) -> str | None:
    # model.parameters() / filter(lambda p: ..., model.parameters()) / [p for p in model.parameters() ...]
    if node is None:
        return None
    for n in iter_nodes(node):
        if isinstance(n, cst.Call):
            name = dotted_name(n.func) or ""
            if name.endswith((".parameters", ".named_parameters")):
                return name.rsplit(".", 1)[0]
    return None


def dataset_id(call: CallSite) -> Value | None:
    first = call.kwarg("path") or call.kwarg("repo_id") or call.arg(0)
    # A file-format builder ("json", "parquet", ...) names its files in data_files; any other first
    # argument (a Hub id, a path, or a value we could not read, such as a list) is the dataset itself.
    if first is not None and isinstance(first.value, str) and first.value in {"json", "parquet", "csv", "text", "arrow"}:
        folder = call.kwarg("data_dir")
        if folder is not None and isinstance(folder.value, str):  # the files are named relative to it
            return folder
        node = call.kwarg_node("data_files")
        if isinstance(node, cst.Dict):  # the train entry's own value keeps its own line (a flag's, say)
            entries = {literal_value(e.key): e.value for e in node.elements if isinstance(e, cst.DictElement)}
            chosen = entries.get("train", next(iter(entries.values()), None))
            picked = call.src.evaluate(chosen, call.scope) if chosen is not None else None
            if picked is not None and isinstance(picked.value, str | list):
                return picked
        files = call.kwarg("data_files")
        if files is not None:
            value = files.value
            if isinstance(value, dict):
                value = value.get("train", next(iter(value.values()), None))
            return files.with_value(value) if isinstance(value, str | list) else None
        return None  # the files come from a value we could not read: "json" is a format, never the data
    return first


_DATA_FILE = re.compile(r"\.(jsonl?|parquet|csv|tsv|arrow)$")


# Files a script opens that hold no training rows: its configs, tokenizer files, held-out splits.
_NOT_TRAINING_DATA = re.compile(r"config|deepspeed|(^|[/_.-])(ds|zero\d?)[_.-]|tokenizer|vocab|special_tokens|"
                                r"(^|[/_.-])(eval|val|valid|validation|test|dev|results?|metrics|output)s?([/_.-]|$)", re.I)


def dataset_calls(src: PySource) -> list[CallSite]:
    """The calls that load the training data: datasets' loaders, else a loader or Dataset class of the
    project's own handed a data file (`load_data("./data/train.json")`), else a data file read by hand
    (`with open("train.json") as f: data = json.load(f)`, `pd.read_json("train.jsonl")`)."""
    found = src.calls_named("load_dataset", "load_from_disk")
    if found:
        return found
    # a dataset repository fetched from the Hub (`hf_hub_download(REPO, "pairs.jsonl", repo_type="dataset")`)
    found = [c for c in src.calls_named("hf_hub_download", "snapshot_download")
             if getattr(c.kwarg("repo_type"), "value", None) == "dataset" and not c.in_evaluation()
             and not on_the_filesystem(c.guards)]  # `if not os.path.exists(path):` download: a fallback
    if found:
        return found

    def data_file(call: CallSite) -> bool:
        written = getattr(call.arg(0), "value", None)
        if call.in_evaluation() or not isinstance(written, str):
            return False
        # a Dataset class or dataset builder of the project's may be handed a folder
        # (`GSM8KDataset("/data/gsm8k_zh", tok)`, `build_dataset(args.data_dir)`)
        return _DATA_FILE.search(written) is not None or (call.name.lower().endswith("dataset") and "/" in written)

    # a function or Dataset class of the project's (`SFTDataset("data.json", tokenizer=tok)`)
    own = [c for c in src.calls if (c.name in src.functions or c.name in src.classes or c.name in src.imports)
           and ("data" in c.name.lower() or c.name.startswith("load")) and data_file(c)]
    if own:
        return own
    # what the trainer is handed, built by a function of the project's from a name
    # (`dataset = get_math_questions("gsm8k", split="train")` ... `GRPOTrainer(train_dataset=dataset)`)
    handed = {a.value.value for c in src.calls for a in c.node.args
              if a.keyword is not None and a.keyword.value == "train_dataset" and isinstance(a.value, cst.Name)}
    built = [c for c in src.calls if c.assigned_to in handed and (c.name in src.functions or c.name in src.imports)
             and isinstance(getattr(c.arg(0), "value", None), str) and not c.in_evaluation()]
    if built:
        return built[:1]
    return [c for c in src.calls if c.name in ("open", "read_json", "read_csv", "read_parquet") and data_file(c)
            and not _NOT_TRAINING_DATA.search(c.arg(0).value)
            and str(getattr(c.kwarg("mode") or c.arg(1), "value", "r")).startswith("r")]


def is_optimizer(name: str) -> bool:
    """torch's and the usual libraries' optimizers, and a project's own (`MemoryEfficientAdamW`)."""
    return name in OPTIMIZERS or (name[:1].isupper() and name.endswith(("Adam", "AdamW", "SGD", "Lion", "Adafactor")))


def optimizer_lr(src: PySource) -> list[tuple[CallSite, Value | None]]:
    out = []
    for call in (c for c in src.calls if is_optimizer(c.name)):
        lr = call.kwarg("lr") or call.kwarg("learning_rate")
        if lr is None and call.name in OPTIMIZERS:
            lr = call.arg(1)
        out.append((call, lr))
    return out


def lora_from_peft(call: CallSite, ev: Evidence) -> None:
    """peft.LoraConfig(r=, lora_alpha=, target_modules=): rank is what MinT keeps."""
    rank, alpha, modules = call.kwarg("r"), call.kwarg("lora_alpha"), call.kwarg("target_modules")
    ev.setting("lora.rank", rank)
    ev.setting("lora.alpha", alpha)
    ev.setting("lora.target_modules", modules)
    ev.extra("used_lora", Value(True, call.loc))
    extras = [k for k in ("lora_alpha", "target_modules", "lora_dropout", "use_dora", "use_rslora", "modules_to_save")
              if call.kwarg_node(k) is not None]
    ev.construct(f"peft.LoraConfig({', '.join(['r'] * (rank is not None) + extras)})", call.loc,
                 "create_lora_training_client(base_model, rank=r)",
                 "only the rank carries over; MinT applies LoRA to attention, MLP and unembedding")
    if extras:
        ev.warn("LORA_OPTIONS", "LoRA " + ", ".join(extras) + (" has" if len(extras) == 1 else " have") + " no MinT equivalent: MinT takes only the "
                "rank and trains attention, MLP and unembedding (train_attn/train_mlp/train_unembed).", call.loc)


def infra_imports(src: PySource, ev: Evidence) -> None:
    for module, loc in src.imported:
        for prefix, what in _INFRA_MODULES.items():
            if module == prefix or module.startswith(prefix + "."):
                server_side(ev, what, loc)
    for call in src.calls:
        if call.name in {"BitsAndBytesConfig"} or call.kwarg_node("load_in_4bit") is not None \
                or call.kwarg_node("load_in_8bit") is not None:
            ev.warn("QUANTIZATION", "Quantized loading (bitsandbytes 4/8-bit) is not a client choice on MinT: "
                    "the server holds the base model; drop the quantization config.", call.loc)
            break
    for call in src.calls_named("FullyShardedDataParallel", "FSDP", "DistributedDataParallel", "DDP"):
        server_side(ev, "FSDP/DDP model wrapping", call.loc)
    for call in src.calls_named("gradient_checkpointing_enable"):
        ev.construct("model.gradient_checkpointing_enable()", call.loc, "(nothing)", "memory is managed server-side")


def server_side(ev: Evidence, what: str, loc: Loc | None) -> None:
    ev.warn("SERVER_SIDE", f"{what}: runs server-side on MinT; drop it from the training script "
            "(no GPUs, sharding, engines or clusters to configure).", loc)


def function_names(node: cst.BaseExpression | None, src: PySource, scope) -> list[str] | None:
    """Names in `[f, g]` / `f` / a variable holding such a list (reward functions)."""
    if node is None:
        return None
    if isinstance(node, cst.Name):
        if node.value in {"None", "True", "False"}:  # `reward_funcs=reward_model` that may be None: no function
            return None
        if node.value in src.functions or node.value in src.imports:
            return [node.value]
        if built_by_a_call(node, src, scope) and not node.value.endswith("s"):
            return [node.value]  # `reward_fn = create_reward_fn(cfg)`: one function a factory built, by its name
        found = src.definition(node.value, scope, src.line(node))
        if found and found[0] == "assign" and found[1].value is not node:
            return function_names(found[1].value, src, found[1].scope)
        return [node.value]
    if isinstance(node, cst.Attribute):
        return [dotted_name(node) or node.attr.value]
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
        value = literal_value(node)
        return [value] if isinstance(value, str) else None
    if isinstance(node, cst.List | cst.Tuple):
        names: list[str] = []
        for element in node.elements:
            if isinstance(element, cst.Element):
                if built_by_a_call(element.value, src, scope):
                    names.append(element.value.value)  # `reward_fn = make_reward_fn(...)`; `[reward_fn]`: that one
                    continue
                inner = function_names(element.value, src, scope)
                if inner is None:
                    return None
                names += inner
        return names
    if isinstance(node, cst.Call):
        name = dotted_name(node.func)
        if name is None or name.rsplit(".", 1)[-1] in {"from_pretrained", "pipeline"}:
            return None  # a reward *model* (`AutoModelForSequenceClassification.from_pretrained(...)`)
        return [name.rsplit(".", 1)[-1]]
    return None


def written_at(node: cst.BaseExpression, src: PySource, scope) -> cst.BaseExpression:
    """Where a value passed through a variable is written: `reward_funcs=funcs` after `funcs = [f, g]`
    is written at the list."""
    seen = 0
    while isinstance(node, cst.Name) and seen < 8:
        found = src.definition(node.value, scope, src.line(node))
        if not found or found[0] != "assign" or found[1].value is node:
            break
        node, scope, seen = found[1].value, found[1].scope, seen + 1
    return node


def built_by_a_call(node: cst.BaseExpression | None, src: PySource, scope) -> bool:
    """A name bound to what a call returned (`reward_fn = make_reward_fn(cfg)`): what it holds is
    decided in the callee or the config it reads, not where the name is used."""
    if not isinstance(node, cst.Name):
        return False
    found = src.definition(node.value, scope, src.line(node))
    return bool(found and found[0] == "assign" and isinstance(found[1].value, cst.Call))


def vote_by_keys(keys: set[str], loc: Loc, ev: Evidence) -> None:
    """What a recipe's (or a missing script's flags') keys say the run is: a teacher model is
    distillation (GKD's JSD `beta` and `max_new_tokens` beside it say nothing of DPO), an actor with a
    critic PPO, group sampling and reward functions GRPO, desirable weights KTO, a `beta` or a prompt
    length preference."""
    if keys & {"teacher_model_name_or_path", "teacher_model", "teacher_model_path"}:
        ev.vote("distillation", loc, "a teacher model (teacher_model_name_or_path)", 1)
    elif keys & {"critic_model_name_or_path", "critic_model_path", "critic_pretrain", "ppo_epochs"}:
        ev.vote("ppo", loc, "an actor and a critic model (critic_model_name_or_path)", 1)
    elif keys & {"num_generations", "reward_funcs", "max_completion_length"}:
        ev.vote("grpo", loc, "GRPO keys (num_generations / reward_funcs)", 1)
    elif keys & {"desirable_weight", "undesirable_weight"}:
        ev.vote("kto", loc, "KTO keys (desirable_weight)", 1)
    elif "beta" in keys or "max_prompt_length" in keys:
        ev.vote("dpo", loc, "preference keys (beta / max_prompt_length)", 1)


# Keys whose value names the objective: LLaMA-Factory's `stage: dpo`, `--task_type sft`, `--rlhf_type DPO`.
_OBJECTIVE_KEYS = {"stage", "task_type", "rlhf_type", "train_type", "training_type", "algorithm", "algo",
                   "trainer_type", "train_stage", "training_stage", "loss_type_name"}


def vote_by_values(values: dict[str, Value], ev: Evidence) -> bool:
    """A key that names the objective outright (`--rlhf_type DPO`, `stage: rm`): that objective."""
    for key, value in values.items():
        if key.rsplit(".", 1)[-1] in _OBJECTIVE_KEYS and isinstance(value.value, str):
            algorithm = algorithm_in_name(value.value) or NAMED_WORDS.get(value.value.lower())
            if algorithm is not None:
                ev.vote(algorithm, value.loc, f"{key}={value.value}", 2)
                return True
    return False


def trainer_runs(src: PySource) -> list[CallSite]:
    """`trainer = SimPOTrainer(...)` ... `trainer.train()`: the script hands its run to a trainer
    class (transformers' or the project's own), which `train()` starts."""
    if not src.calls_named("train"):
        return []
    return [c for c in src.calls if c.name.endswith("Trainer") and c.name[:1].isupper()]


def starts_a_trainer(src: PySource) -> bool:
    """A trainer class built and started here, or one a helper built (`trainer = build(cfg)`,
    `trainer.train()`): the run is handed to a trainer object either way."""
    if trainer_runs(src):
        return True
    for call in src.calls_named("train"):
        receiver = call.node.func.value if isinstance(call.node.func, cst.Attribute) else None
        if isinstance(receiver, cst.Name | cst.Attribute) and "trainer" in (dotted_name(receiver) or "").lower():
            return True
    return False


def estimator_algorithm(name: str, known: dict) -> tuple[str, str | None]:
    """(algorithm, variant) of an advantage estimator: the framework's table, else what a fork's own
    estimator's name says (`drgrpo`, `grpo_norm_by_len`, `rloo_token`), else other."""
    if name in known:
        return known[name]
    low = name.lower()
    for words, algorithm in ((("grpo", "group"), "grpo"), (("rloo", "reinforce", "remax"), "reinforce"),
                             (("gae", "ppo"), "ppo")):
        if any(w in low for w in words):
            return algorithm, name
    return "other", name


def passed_in(project, src: PySource, scope, node: cst.BaseExpression):
    """For a parameter without a default (`reward_funcs` in `def train_model(model, reward_funcs)`),
    the argument its one caller in the inputs passes: (node, caller's source, caller's scope)."""
    if not isinstance(node, cst.Name) or scope is None:
        return None
    found = src.definition(node.value, scope, src.line(node))
    fn = src.function_of(found[2]) if found and found[0] == "param" and found[1].default is None else None
    if fn is None:
        return None
    short = fn.name.rsplit(".", 1)[-1]
    position = list(fn.params).index(node.value) - (1 if next(iter(fn.params), "") in ("self", "cls") else 0)
    sites = [(c, f.python) for f in project.pythons() for c in f.python.calls if c.name == short]
    if len(sites) != 1:
        return None  # several callers may pass different things
    caller, caller_src = sites[0]
    argument = caller.kwarg_node(node.value) or caller.arg_node(position)
    return None if argument is None else (argument, caller_src, caller.scope)


TEACHER_FLAG = "--teacher-path (a sampler checkpoint of the teacher on MinT)"


def teacher_warning(ev: Evidence, teacher: str, loc: Loc | None) -> None:
    ev.warn("DISTILL_TEACHER", f"The teacher ({teacher}) must be a sampler checkpoint on MinT: train or load it there "
            "(save_weights_for_sampler(...).path) and pass it as --teacher-path. Student and teacher must share a "
            "tokenizer.", loc)


def called_reward(src: PySource) -> Value | None:
    """The reward function a loop calls itself (`rewards.append(reward(text, answer))`, or a method of
    the project's own scorer, `tracker.calculate_rewards(texts, answers)`): a call named for rewards,
    made from outside any reward, evaluation or test function; its name as written, at its first
    such call, with the others its line sums (`reward_correct(q, a) + reward_format(q, a)`). A call in
    a function that builds an optimizer (the training loop) comes before one in a diagnostic pass."""
    found: list[tuple[str, Loc]] = []
    line = None
    training = {call.scope for call, _ in optimizer_lr(src) if call.scope is not None}
    # stable: a line's calls in source order
    for call in sorted(src.calls, key=lambda c: (bool(training) and c.scope not in training, c.loc.line)):
        if line is not None and call.loc.line != line:
            break
        named = _reward_call(src, call)
        if named is not None and named[0] not in [n for n, _ in found]:
            found.append(named)
            line = call.loc.line
    return Value([n for n, _ in found], found[0][1]) if found else None


def _reward_call(src: PySource, call: CallSite) -> tuple[str, Loc] | None:
    written = dotted_name(call.node.func) or call.name
    # `rewards = score_completions(texts, answers)`: a scorer of the project's, named by what it gives
    scores = "reward" in (call.assigned_to or "").lower() and "." not in written and not _library_call(call) \
        and _SCORER_NAME.search(call.name) is not None
    if not ("reward" in call.name.lower() or scores) or call.in_evaluation() or "reward" in _caller_name(src, call):
        return None
    if call.assigned_to and any(dotted_name(c.node.func) == call.assigned_to for c in src.calls):
        return None  # `reward_fn = make_reward_fn(kind)`: a factory; the loop calls what it returns
    if "." not in written and call.name not in src.functions:
        alias = _aliased_function(src, call)
        if alias is not None:
            return alias
    if call.name in src.functions or ("." not in written and call.name not in src.classes):
        return call.name, call.loc  # the file's own function, or one it imports or is handed
    if "." in written and _project_object(src, written.split(".", 1)[0]):
        return written, call.loc
    return None


_SCORER_NAME = re.compile(r"score|grade|judge|verif", re.I)
_LIBRARY_ROOTS = {"torch", "numpy", "np", "math", "random", "statistics", "itertools", "functools", "operator", "jax",
                  "builtins"}


def _library_call(call: CallSite) -> bool:
    """A builtin or a numeric library's function (`torch.tensor(rewards)`, `sum(...)`), not a scorer."""
    return call.name in vars(builtins) or call.qualname.split(".", 1)[0] in _LIBRARY_ROOTS


def _aliased_function(src: PySource, call: CallSite) -> tuple[str, Loc] | None:
    """`reward_fn = get_reward_math` (or, in another branch, `= get_reward_gsm8k`) ... `reward_fn(x)`:
    the function the branch the run takes binds, when the config decides it, else the first one."""
    if src.definition(call.name, call.scope, call.loc.line) is None:
        return None
    bound = [a for a in src.assigns.get(call.name, []) if isinstance(a.value, cst.Name) and a.line < call.loc.line
             and not src.switched_off(a.guards, a.scope)]
    return (bound[0].value.value, src.at(bound[0].line)) if bound else None


# Libraries whose objects have reward-named methods that are not the run's reward (logging, tensors);
# the frameworks' own packages come from the registry.
_LIBRARY_ROOTS = {"numpy", "np", "wandb", "logging", "math", "statistics", "datasets", "ray", "json", "os", "self"}


@functools.cache
def _libraries() -> frozenset[str]:
    return frozenset(_LIBRARY_ROOTS | {name.split(".")[0] for a in analyzers() for name in a.imports})


def _project_object(src: PySource, root: str) -> bool:
    """`tracker` in `tracker.calculate_rewards(...)`: a local object or a project module, not a library."""
    libraries = _libraries()
    return root not in libraries and src.qualify(root).split(".", 1)[0] not in libraries


def _caller_name(src: PySource, call: CallSite) -> str:
    caller = src.function_of(call.scope) if call.scope is not None else None
    return caller.name.rsplit(".", 1)[-1].lower() if caller is not None else ""


def unread_field(info, field: str, own: str, others: list[str]) -> bool:
    """A field of a config class that the loop beside it never reads: neither `config.epochs`, nor
    `getattr(c, "epochs")`, nor `c["epochs"]` in its own file (`own`) or the inputs' other files. Judged
    only for a chz config or a plain holder of class attributes (`class Config: lr = 1e-5`), of the
    file's own (no base class, which could read it), never handed whole to a call, whose file reads other
    fields of it: a dataclass is often handed to a parser or a helper the inputs do not hold
    (`create_and_prepare_model(script_args)`), and a config module alone is read by code elsewhere."""
    chz = any(d.split("(", 1)[0].rsplit(".", 1)[-1] == "chz" for d in info.decorators)
    if not (chz or not info.decorators) or any(base.rsplit(".", 1)[-1] not in ("object", "ABC") for base in info.bases):
        return False
    if re.search(rf"[(,]\s*{re.escape(info.name)}\s*[,)]", own):
        return False  # `run(Config)`: whatever the callee reads
    if not any(_reads(name, own) for name in info.fields if name != field):
        return False
    return not any(_reads(field, text) for text in (own, *others))


def _reads(field: str, text: str) -> bool:
    return re.search(rf"\.{re.escape(field)}\b|['\"]{re.escape(field)}['\"]", text) is not None
