"""Hand-written PyTorch / transformers training loops.

The algorithm is read from the shape of the loss: token cross-entropy (or `outputs.loss` of a causal
LM) is SFT, `logsigmoid(beta * (chosen - rejected))` is DPO, a KL divergence against a teacher's
logits is distillation, and generated samples weighted by rewards or advantages are a policy
gradient (group sampling makes it GRPO). Settings come from the optimizer, the data loader, the
loops, the tokenizer and `generate` calls, through the script's constants and argparse defaults.
"""

import re
from pathlib import PurePosixPath

import libcst as cst

from mint_migrate.analyze.evidence import Evidence, Loc, Value
from mint_migrate.analyze.inputs import Project, command_flags
from mint_migrate.analyze.pycommon import (
    TEACHER_FLAG,
    algorithm_in_name,
    called_reward,
    dataset_calls,
    dataset_id,
    function_names,
    infra_imports,
    lora_from_peft,
    model_id,
    model_loaders,
    optimizer_lr,
    starts_a_trainer,
    teacher_warning,
    trained_model_call,
    trainer_runs,
    vote_by_keys,
    vote_by_values,
)
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.registry import Analyzer
from mint_migrate.analyze.scalars import as_int
from mint_migrate.analyze.task import read_code_task
from mint_migrate.errors import MintMigrateError
from mint_migrate.pyindex import dotted_name, iter_nodes

_STEP_WORDS = ("step", "iter", "update")
_NAMED = {  # variable / argparse names -> settings, when the loop code itself cannot be resolved
    "beta": "beta", "dpo_beta": "beta", "kl_coef": "kl_coef", "kl_beta": "kl_coef", "temperature": "temperature",
    "num_generations": "num_generations", "group_size": "num_generations", "max_new_tokens": "max_response_length",
    "grad_accum_steps": "gradient_accumulation_steps", "gradient_accumulation_steps": "gradient_accumulation_steps",
    "accumulation_steps": "gradient_accumulation_steps", "clip_eps": "clip_ratio", "clip_ratio": "clip_ratio",
    "max_length": "max_seq_length", "max_seq_length": "max_seq_length", "max_seq_len": "max_seq_length",
    "epochs": "num_epochs", "num_epochs": "num_epochs", "max_steps": "max_steps",
}


def _range_count(src: PySource, iterator: cst.Call, scope) -> Value | None:
    """How many times `range(...)` runs, where the inputs say: `range(n)` is n, at n's line;
    `range(1, cfg.max_steps + 1)` is cfg.max_steps, at its line; `range(a, b)` is b - a."""
    args = [a.value for a in iterator.args]
    if len(args) == 1 or len(args) > 3:
        bound = src.evaluate(args[0], scope) if len(args) == 1 else None
        return bound if bound is not None and as_int(bound.value) is not None else None
    if len(args) == 3 and as_int(getattr(src.evaluate(args[2], scope), "value", None)) != 1:
        return None
    start, stop = args[0], args[1]
    first = as_int(getattr(src.evaluate(start, scope), "value", None))
    if first is None:
        return None
    if isinstance(stop, cst.BinaryOperation) and isinstance(stop.operator, cst.Add) \
            and isinstance(stop.right, cst.Integer) and int(stop.right.value) == first:
        bound = src.evaluate(stop.left, scope)  # `range(1, n + 1)`: n
        return bound if bound is not None and as_int(bound.value) is not None else None
    bound = src.evaluate(stop, scope)
    if bound is None or as_int(bound.value) is None:
        return None
    return bound if first == 0 else bound.with_value(as_int(bound.value) - first)


def is_training_script(src: PySource) -> bool:
    """A loop (backward, an optimizer), transformers' Trainer, a hydra-configured program that
    builds an optimizer over a model's parameters (`getattr(torch.optim, cfg.optimizer)(...)`), or
    a script that loads a model and hands it to the project's own training function."""
    return (bool(src.calls_named("backward")) or bool(optimizer_lr(src)) or bool(src.calls_named(*_HF_TRAINERS))
            or starts_a_trainer(src)
            or (bool(src.calls_named("parameters")) and any(c.qualname == "hydra.main" for c in src.calls))
            or hands_a_model_to_training(src) is not None)


# A function named for training (`train_grpo`, `grpo_train`, `train_model`, `run_training`).
_TRAINING_FUNCTION = re.compile(r"(^|_)train(ing)?(_|$)")


def hands_a_model_to_training(src: PySource):
    """`train_grpo(policy=policy, ...)` after `policy = AutoModelForCausalLM.from_pretrained(...)`:
    the loop is the project's own function (often in a file not given); that call, else None."""
    for call in src.calls:
        if not _TRAINING_FUNCTION.search(call.name) or isinstance(call.node.func, cst.Attribute):
            continue
        for arg in call.node.args:
            if not isinstance(arg.value, cst.Name):
                continue
            found = src.definition(arg.value.value, call.scope, src.line(arg.value))
            if found is not None and found[0] == "assign" and _loads_pretrained(found[1].value):
                return call
    return None


def _loads_pretrained(node: cst.BaseExpression) -> bool:
    """`X.from_pretrained(...)`, also behind `.to(device)` / `.cuda()`."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value == "from_pretrained":
            return True
        node = node.func.value
    return False


def analyze(project: Project, ev: Evidence) -> None:
    found_loop = False
    for f in project.pythons():
        src = f.python
        if not is_training_script(src) and not project.guessed:
            continue
        found_loop = True
        infra_imports(src, ev)
        _hf_trainer(src, ev)
        _settings(src, ev)
        _algorithm(src, ev)
        _constructs(src, ev)
    _hf_flags(project, ev)
    if found_loop and ev.best("dataset") is None:  # a recipe read by an HfArgumentParser-style parser
        from mint_migrate.analyze.trl import dataset_mixture

        for y in project.yamls():
            dataset_mixture(y, ev)
    if found_loop:
        _split_preference(project, ev)
        _split_policy_gradient(project, ev)
    vote = ev.algorithm()
    if vote is None or vote.weight == 0:  # `train_grpo(policy=model, ...)`: what the training function is named for
        for f in project.pythons():
            handed = hands_a_model_to_training(f.python)
            named = algorithm_in_name(handed.name) if handed is not None else None
            if named is not None:
                ev.vote(named, handed.loc, f"{handed.name}(...): the project's training function, by its name", 1)
                break
        vote = ev.algorithm()
    if project.guessed or vote is None or vote.weight == 0:  # the code said nothing: what its files are named for
        _named_algorithm(project, ev)
        vote = ev.algorithm()
    if found_loop and ev.best("reward_functions") is None and vote is not None and vote.algorithm in _RL:
        for f in project.pythons():
            ev.setting("reward_functions", called_reward(f.python))
            if ev.best("reward_functions") is not None:
                break
    if not found_loop and not project.guessed:
        raise MintMigrateError(
            f"{project.primary.label}:1: no training loop found (no optimizer, no loss.backward()); pass the script "
            "that trains, or a TRL / verl / OpenRLHF / torchforge / Tinker setup."
        )


def _named_algorithm(project: Project, ev: Evidence) -> None:
    """The algorithm when the code says nothing (a guessed setup, or a loss no shape matches): a flag
    of the missing script that names it outright, else what the missing script, the files, the
    trainers and the configs are named for, then the missing script's flags and its folders."""
    missing = [c for c, script in project.launches if (c.script or c.module) and script is None]
    if missing and vote_by_values(command_flags(missing[0]), ev):  # `--task_type dpo`
        return
    names = [(c.target_parts[-1], c.loc) for c in missing]
    names += [(f.path.stem, Loc(f.label, 1)) for f in project.files if f.python or f.shell]
    names += [(c.name, c.loc) for f in project.pythons() for c in trainer_runs(f.python)]
    # the project's own config class the loop is handed (`GrpoConfig(batch_size=8, group_size=4)`)
    names += [(c.name, c.loc) for f in project.pythons() for c in f.python.calls if c.name.endswith("Config")
              and c.name in f.python.imports and not c.name.startswith(("Auto", "Lora", "BitsAndBytes"))]
    names += [(f.path.stem, Loc(f.label, 1)) for f in project.yamls()]  # `loss/dpo.yaml`
    for name, loc in names:
        algorithm = algorithm_in_name(name)
        if algorithm is not None:
            ev.vote(algorithm, loc, f"named for it: {name}", 1)
            return
    if missing:  # the flags it is handed (`--critic_model_name_or_path`), then the folders it lives in
        flags = {a.name for a in missing[0].flags()}
        vote_by_keys(flags | {name.rsplit(".", 1)[-1] for name in flags}, missing[0].loc, ev)
        if ev.algorithm() is not None and ev.algorithm().weight > 0:
            return
        for section in sorted({part for name in flags for part in name.split(".")[:-1]}):
            algorithm = algorithm_in_name(section)
            if algorithm is not None:  # `--grpo_config.group_size 16`: the settings are filed under it
                ev.vote(algorithm, missing[0].loc, f"its flags are filed under {section}", 1)
                return
        launcher = project.primary.path
        for folder in [*PurePosixPath(missing[0].script or "").parent.parts[::-1], *launcher.parent.parts[::-1][:4]]:
            algorithm = algorithm_in_name(folder)
            if algorithm is not None:  # `step2_reward_model_finetuning/training_scripts/run.sh`
                ev.vote(algorithm, missing[0].loc, f"its folder is named for it: {folder}", 1)
                return
    if project.guessed:  # a Trainer or hand-written loop's own loss, unless a name said otherwise
        ev.vote("sft", None, "nothing in the inputs names another objective; a causal LM's own loss is SFT", 0)


_HF_TRAINERS = ("Trainer", "Seq2SeqTrainer")


# Flags of an HfArgumentParser script (TrainingArguments and the usual model/data argument names).
_HF_FLAG_EXTRAS = {"data_path": "dataset", "dataset": "dataset", "model_max_length": "max_seq_length",
                   "lora_r": "lora.rank", "lora_alpha": "lora.alpha", "source_max_len": "max_prompt_length",
                   "target_max_len": "max_response_length"}


def _hf_flags(project: Project, ev: Evidence) -> None:
    """Scripts whose settings come from HfArgumentParser dataclasses: the flags of their launch
    command (or usage docstring) name TrainingArguments fields."""
    from mint_migrate.analyze.trl import FIELDS

    if not any(f.python.parsed_dataclasses() for f in project.pythons()):
        return
    for f in project.pythons():
        for name, value in f.python.cli.items():
            setting = FIELDS.get(name) or _HF_FLAG_EXTRAS.get(name)
            if setting is not None and not (setting == "max_steps" and (as_int(value.value) or 0) <= 0):
                ev.setting(setting, value)


def _hf_trainer(src: PySource, ev: Evidence) -> None:
    """transformers' Trainer: TrainingArguments fields carry the settings, the model's own loss is SFT."""
    from mint_migrate.analyze.trl import FIELDS

    for call in src.calls_named("TrainingArguments", "Seq2SeqTrainingArguments"):
        for key, value in call.kwargs().items():
            if key in FIELDS:
                ev.setting(FIELDS[key], value)
    for call in src.calls_named(*_HF_TRAINERS):
        module = src.qualify(call.name).rpartition(".")[0]
        named = algorithm_in_name(module.rpartition(".")[2]) if module and module != "transformers" else None
        if named is not None:  # `from alpaca_farm.rl.dpo_trainer import Trainer`: the project's own trainer
            ev.vote(named, call.loc, f"{call.name} from {module}: what its module is named for", 2)
            continue
        ev.vote("sft", call.loc, f"transformers {call.name} on a causal LM (the model's own next-token loss)", 2)
        ev.construct(f"{call.name}(model, args=TrainingArguments(...))", call.loc,
                     "training loop: forward_backward(data, 'cross_entropy') + optim_step(AdamParams)")
    for call in trainer_runs(src):  # a trainer class of the project's own, its loss not in the inputs
        named = algorithm_in_name(call.name) if call.name not in _HF_TRAINERS else None
        if named is not None:
            ev.vote(named, call.loc, f"{call.name}(...): what the trainer class's name says", 1)
        if call.name not in _HF_TRAINERS:
            ev.construct(f"{call.name}(...).train() (the project's own trainer)", call.loc,
                         f"the {named or 'SFT'} scaffold's loop in train.py",
                         "its loss is in the trainer's module: check that the scaffold's objective is the same")


def _settings(src: PySource, ev: Evidence) -> None:
    model = trained_model_call(src)
    if model is not None:
        loaded = model_id(model)
        ev.setting("base_model", loaded)
        if loaded is None or (isinstance(loaded.value, str) and loaded.value.startswith((".", "/", "~"))):
            ev.setting("base_model", _downloaded_model(src))  # the hub id behind a local snapshot folder
    loads = dataset_calls(src)
    ids = {str(v.value) for v in (dataset_id(c) for c in loads) if v is not None}
    if loads and len(ids) <= 1:  # several literal ids: a loader that picks one by name, not a fact
        ev.setting("dataset", dataset_id(loads[0]))
    for call, lr in optimizer_lr(src)[:1]:
        ev.setting("learning_rate", lr)
        ev.construct(f"torch.optim.{call.name}(lr=...)", call.loc, "optim_step(types.AdamParams(learning_rate=...))",
                     f"train.py passes the source's Adam settings (torch.optim.{call.name}'s defaults where the "
                     "source states none) as OPTIMIZER: MinT's own defaults differ (beta2=0.95, eps=1e-12)")
    # torch's DataLoader, else a builder of the project's own (`build_dataloader("train", tok, batch_size=8)`)
    loaders = src.calls_named("DataLoader") or [
        c for c in src.calls if c.name.lower().endswith(("dataloader", "data_loader"))
        and c.kwarg_node("batch_size") is not None and not c.in_evaluation()]
    for call in loaders[:1]:
        ev.setting("per_device_batch_size", call.kwarg("batch_size") or call.arg(1))
    for call in src.calls_named("LoraConfig"):
        if not call.switched_off() and not call.discarded():
            lora_from_peft(call, ev)
    _reward_functions(src, ev)
    for target, iterator, scope, loc in src.loops:
        if not (isinstance(iterator, cst.Call) and dotted_name(iterator.func) == "range" and iterator.args):
            continue
        bound = _range_count(src, iterator, scope)
        if bound is None:
            continue
        outer = src.index.outer_loops.get(loc.line, ())
        if "epoch" in target.lower() and any(w in o.lower() for o in outer for w in _STEP_WORDS):
            # `for step in range(steps): ... for epoch in range(ppo_epochs)`: updates per rollout batch
            ev.warn("MULTI_UPDATE", f"{bound.value} update epochs per rollout batch: on MinT repeat forward_backward + "
                    "optim_step over the same Datums, or keep one update per batch.", bound.loc)
            ev.extra("update_epochs", bound)  # not passes over the data: the harvest must not fill num_epochs with it
        elif "epoch" in target.lower():
            ev.setting("num_epochs", bound)
        elif any(w in target.lower() for w in _STEP_WORDS):
            ev.setting("max_steps", bound)
    for left, right, scope, _loc in src.divisions:
        name = dotted_name(right) or ""
        if "accum" in name.lower() and _is_loss(left):
            ev.setting("gradient_accumulation_steps", src.evaluate(right, scope))
    for call in src.calls:
        if call.kwarg_node("max_length") is not None and call.name in {"tokenizer", "apply_chat_template", "encode",
                                                                         "__call__", "tok", "encode_plus"}:
            ev.setting("max_seq_length", call.kwarg("max_length"))
        if call.name == "generate" and not call.in_evaluation():
            ev.setting("max_response_length", call.kwarg("max_new_tokens"))
            ev.setting("num_generations", call.kwarg("num_return_sequences"))
            ev.setting("temperature", call.kwarg("temperature"))
    # named constants / argparse options the loop uses in expressions we do not evaluate
    for name, setting in _NAMED.items():
        if ev.best(setting) is not None:
            continue
        value = src.argparse_value(name) if name in src.argparse else None
        if value is None and name.upper() in src.assigns:
            value = _module_constant(src, name.upper())
        if value is None and name in src.assigns:
            value = _module_constant(src, name)
        ev.setting(setting, value)
    _handed_to_loaders(src, ev)


# Keyword arguments that name a setting outright, in the calls that build the data pipeline or the
# accelerator (`data_loader_class(..., global_batch_size=cfg.batch_size, n_epochs=cfg.n_epochs)`).
_LOADER_KWARGS = {
    "global_batch_size": "global_batch_size", "n_epochs": "num_epochs", "num_epochs": "num_epochs",
    "max_prompt_length": "max_prompt_length", "max_length": "max_seq_length", "max_seq_length": "max_seq_length",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
}
_LOADER_WORDS = ("loader", "iterator", "dataset", "collator")


def _handed_to_loaders(src: PySource, ev: Evidence) -> None:
    """Settings the script hands to its own data loader (or the kwargs dict it unpacks into one) and
    to `Accelerator(...)`, for the keys nothing more specific gave; and the training datasets a
    loader is built over (`Loader(cfg.train_datasets, ...)`)."""
    for call in src.calls:
        lowered = call.name.lower()
        if not (any(w in lowered for w in _LOADER_WORDS) or call.name in {"dict", "Accelerator"}) or call.switched_off():
            continue
        for keyword, setting in _LOADER_KWARGS.items():
            if ev.best(setting) is None and call.kwarg_node(keyword) is not None:
                ev.setting(setting, call.kwarg(keyword))
        first = call.arg_node(0)
        written = (dotted_name(first) or "").lower() if first is not None else ""
        if ev.best("dataset") is None and any(w in lowered for w in _LOADER_WORDS) and "train" in written:
            value = call.arg(0)
            if value is not None and (isinstance(value.value, str) or (
                    isinstance(value.value, list) and value.value and all(isinstance(v, str) for v in value.value))):
                ev.setting("dataset", value)


_REWARD_KWARGS = ("reward_function", "reward_fn", "reward_funcs", "reward_functions")


def _reward_functions(src: PySource, ev: Evidence) -> None:
    """A reward function the loop hands to its rollout (`rollout(..., reward_function=reward_function)`),
    preferring the call in the function that also builds the optimizer (training, not evaluation)."""
    optimizer_scopes = {call.scope for call, _ in optimizer_lr(src)}
    sites = [(call, key) for call in src.calls for key in _REWARD_KWARGS if call.kwarg_node(key) is not None]
    sites.sort(key=lambda site: site[0].scope not in optimizer_scopes)
    for call, key in sites[:1]:
        names = function_names(call.kwarg_node(key), src, call.scope)
        if names:
            ev.setting("reward_functions", Value(names, src.loc(call.kwarg_node(key))))


def _is_loss(node: cst.BaseExpression) -> bool:
    """`loss`, `outputs.loss`, `model(**batch).loss`: the thing divided by the accumulation steps."""
    if isinstance(node, cst.Name):
        return "loss" in node.value.lower()
    if isinstance(node, cst.Attribute):
        return "loss" in node.attr.value.lower()
    return False


def _module_constant(src: PySource, name: str) -> Value | None:
    """A named value: the module constant, else the one assignment in a function (`beta = cfg.loss.beta`)."""
    defs = [a for a in src.assigns.get(name, []) if a.scope is None and len(a.targets) == 1]
    if defs:
        return src.evaluate(defs[-1].value, None)
    local = [a for a in src.assigns.get(name, []) if len(a.targets) == 1]
    return src.evaluate(local[0].value, local[0].scope) if len(local) == 1 else None


def _downloaded_model(src: PySource) -> Value | None:
    """`snapshot_download("qwen/Qwen2-1.5B-Instruct", cache_dir="./")` (huggingface_hub's or
    modelscope's), when the model is then loaded from the local folder: the id it downloads."""
    for call in src.calls_named("snapshot_download"):
        kind = call.kwarg("repo_type")
        repo = call.kwarg("repo_id") or call.kwarg("model_id") or call.arg(0)
        if (kind is None or kind.value == "model") and repo is not None and isinstance(repo.value, str) \
                and "/" in repo.value and not repo.value.startswith((".", "/", "~")):
            return repo
    return None


def _algorithm(src: PySource, ev: Evidence) -> None:
    calls = {c.name for c in src.calls}
    text = src.text.lower()
    first = {c.name: c.loc for c in reversed(src.calls)}
    trained = trained_model_call(src)
    scorer = trained if trained is not None and "ForSequenceClassification" in (dotted_name(trained.node.func) or "") \
        else None
    if scorer is not None and ("chosen" in text or "rejected" in text):  # the trained model: a scalar head on pairs
        ev.vote("reward_model", scorer.loc, "a sequence-classification head trained on chosen/rejected pairs "
                "(a Bradley-Terry reward model)", 4)
    elif "logsigmoid" in calls and ("chosen" in text or "rejected" in text):
        _vote_preference(ev, first["logsigmoid"], text, "")
    elif (kl := next((n for n in calls if _KL_LOSS.search(n)), None)) is not None and "teacher" in text:
        ev.vote("distillation", first[kl], f"{kl}(student, teacher) loss", 3)
        for call in model_loaders(src):
            if "teacher" in (call.assigned_to or "").lower() and model_id(call) is not None:
                teacher_warning(ev, str(model_id(call).value), call.loc)
                ev.construct(f"teacher {model_id(call).value}", call.loc,
                             TEACHER_FLAG,
                             "the teacher's logprobs come from MinT; forward KL on logits becomes reverse KL on "
                             "sampled tokens (on-policy distillation)")
    elif (_samples_to_train(src) and ("advantage" in text or "reward" in text)) or _policy_gradient_update(src, calls, text):
        algorithm = "grpo" if _group_baseline(ev, text) else "reinforce"
        where = first.get("generate") or first.get("backward")
        ev.vote(algorithm, where, "sampled completions weighted by rewards (policy gradient)", 3)
        if _CRITIC.search(text):
            ev.vote("ppo", where, "a value head / critic", 4)
            ev.warn("CRITIC_GAE", "The loop trains a value head (critic). MinT has no value model: the migration "
                    "uses a group baseline (several samples per prompt, advantage = reward - group mean).",
                    where)
        if "clamp" in calls and "ratio" in text:
            ev.extra("clipped", Value(True, first["clamp"]))
    elif _hydra_loss_group(src) is not None:
        algorithm, where, what = _hydra_loss_group(src)
        ev.vote(algorithm, where, f"the hydra config group selected: {what}", 2)
    elif (named := _imported_loss(src)) is not None:
        algorithm, name, where = named
        if algorithm == "dpo" and "dpo" not in name.lower():  # `preference_loss(r_chosen, r_rejected)`: whose?
            _vote_preference(ev, where, text, f" ({name}(...), the project's own loss)")
        else:
            ev.vote(algorithm, where, f"{name}(...): the project's own loss, named for {algorithm}", 3)
    elif calls & {"cross_entropy", "CrossEntropyLoss", "nll_loss"} or _uses_model_loss(src):
        loc = next((first[n] for n in ("cross_entropy", "CrossEntropyLoss", "nll_loss") if n in first), None)
        ev.vote("sft", loc or _loss_loc(src), "token cross-entropy loss", 2)
    else:
        ev.vote("other", None, "the loss does not match SFT, DPO, distillation or policy-gradient shapes", 0)


def _imported_loss(src: PySource) -> tuple[str, str, Loc] | None:
    """`from src.dpo.loss import kto_loss`: a loss the loop imports from the project's own module, whose
    body is not in the inputs; what its name says (the DPO and KTO losses people write by hand)."""
    for local, qualified in src.imports.items():
        if "loss" not in local.lower() or qualified.split(".", 1)[0] in {"torch", "transformers", "trl", "peft"}:
            continue
        algorithm = algorithm_in_name(local)
        if algorithm is None or algorithm == "sft":
            continue
        used = [c.loc for c in src.calls if c.name == local]
        return algorithm, local, used[0] if used else src.imports_module(qualified.rsplit(".", 1)[0]) or Loc(src.label, 1)
    return None


# A KL between two models' distributions, however a project names it: `kl_div`, `compute_fkl`, `rkl_loss`.
_KL_LOSS = re.compile(r"(^|_)[fr]?kl(_|$|div)|kl_div", re.I)

_SAMPLER_CALLS = {"generate", "sample", "sample_async", "SamplingParams", "LLM", "multinomial"}
_RL = ("grpo", "ppo", "reinforce")
# A group baseline, however a loop writes it: group names, per-prompt sample counts, or rewards
# reshaped to (prompts, samples) and normalised along the samples.
_GROUPED = re.compile(r"(?<!param_)(?<!process_)group(?!by)|per_prompt|per_question|per_problem|num_generations|"
                      r"\.(mean|std)\(\s*(dim\s*=\s*)?-?1\s*,\s*keepdim|\.view\(\s*-1\s*,")


def _group_baseline(ev: Evidence, text: str) -> bool:
    """Several samples per prompt (a stated group size above 1), or a group baseline in the code."""
    group = ev.best("num_generations") or ev.harvested("num_generations")
    return (group is not None and (as_int(group.value) or 0) > 1) or bool(_GROUPED.search(text))


def _split_preference(project: Project, ev: Evidence) -> None:
    """A preference loss (`-logsigmoid(beta * (chosen - rejected))`) in a module of its own
    (`losses.py`) that the training file calls: the inputs together are DPO."""
    if any(v.weight >= 3 for v in ev.votes):
        return
    for f in project.pythons():
        calls = {c.name: c.loc for c in f.python.calls}
        text = f.python.text.lower()
        if "logsigmoid" in calls and "chosen" in text and "rejected" in text:
            _vote_preference(ev, calls["logsigmoid"], text, ", in a module of the loop's")
            return


def _samples_to_train(src: PySource) -> bool:
    """The loop generates outside its evaluation and logging (an SFT loop that logs sampled answers
    with their rewards does not learn from them)."""
    return any(c.name == "generate" and not c.in_evaluation() for c in src.calls)


# A value model trained beside the policy (PPO's critic), by the names loops give it.
_CRITIC = re.compile(r"value_head|critic(?![- _]free)|value_model|value_net|value_loss|old_values|vf_coef")


# DPO's pairwise loss compares log-probabilities with a frozen reference's, scaled by beta; a reward
# model's compares the scalar scores it trains, and has neither (`preference` is not a reference).
_REFERENCE = re.compile(r"(?<![a-z])ref(erence)?(_|\b)|\bbeta\b")
_SCORES = re.compile(r"score|reward")


def _vote_preference(ev: Evidence, where: Loc, text: str, whose: str) -> None:
    if not _REFERENCE.search(text) and _SCORES.search(text):
        ev.vote("reward_model", where, "-logsigmoid(score_chosen - score_rejected) on trained scores, with no "
                f"reference model and no beta (a Bradley-Terry reward model){whose}", 3)
    else:
        ev.vote("dpo", where, f"logsigmoid(beta * (chosen - rejected)) loss{whose}", 3)


def _split_policy_gradient(project: Project, ev: Evidence) -> None:
    """A policy-gradient loop whose sampler, reward and loss live in several files (`rollout.py`,
    `loss.py`): no one file shows the whole shape, the inputs together do. Weighs more than a
    file's own guess (a model's `.loss` in an evaluation helper), less than a named trainer."""
    if any(v.algorithm in _RL and v.weight >= 3 for v in ev.votes):
        return
    sources = [f.python for f in project.pythons()]
    calls = {c.name for src in sources for c in src.calls}
    own = {name.rsplit(".", 1)[-1].lower() for src in sources for name in src.functions}
    text = "\n".join(src.text.lower() for src in sources)
    sampler = calls & _SAMPLER_CALLS or any(w in name for name in own for w in ("rollout", "sample", "generate"))
    if not ("backward" in calls and sampler and "reward" in text and "advantage" in text):
        return
    where = next((c.loc for src in sources for c in src.calls if c.name in _SAMPLER_CALLS or c.name.lower() in own
                  and any(w in c.name.lower() for w in ("rollout", "sample", "generate"))), None)
    grouped = _group_baseline(ev, text)
    ev.vote("grpo" if grouped else "reinforce", where,
            "sampled completions, rewards and advantages across the loop's files (policy gradient"
            + (" with a group baseline)" if grouped else ")"), 3)
    if "clamp" in calls and "ratio" in text:
        ev.extra("clipped", Value(True, where))


def _policy_gradient_update(src: PySource, calls: set[str], text: str) -> bool:
    """A loop's own policy-gradient step without `model.generate` (its own sampler, in a helper
    module): a backward pass, a reward, and log-probs multiplied by advantages in one file."""
    if "backward" not in calls or "reward" not in text or "advantage" not in text:
        return False
    code = src.module.code_for_node
    for node in iter_nodes(src.module):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            sides = (code(node.left).lower(), code(node.right).lower())
            if any("advantage" in a and "log" in b for a, b in (sides, sides[::-1])):
                return True
    return False


_GROUP_ALGORITHMS = {"sft": "sft", "dpo": "dpo", "kto": "kto", "orpo": "orpo", "ipo": "dpo", "grpo": "grpo",
                     "ppo": "ppo", "rloo": "reinforce", "reinforce": "reinforce"}


def _hydra_loss_group(src: PySource):
    """`loss=dpo` on the command line (or the defaults list) of a hydra program whose loss lives
    elsewhere: (algorithm, where, what)."""
    for group in ("loss", "algorithm", "trainer"):
        chosen = src.cli.get(group)
        if chosen is not None and str(chosen.value).lower() in _GROUP_ALGORITHMS:
            return _GROUP_ALGORITHMS[str(chosen.value).lower()], chosen.loc, f"{group}={chosen.value}"
    return None


def _uses_model_loss(src: PySource) -> bool:
    return any(attr == "loss" for attr, _, _ in src.attributes)


def _loss_loc(src: PySource):
    return next((loc for attr, loc, _ in src.attributes if attr == "loss"), None)


def _constructs(src: PySource, ev: Evidence) -> None:
    for call in src.calls_named("backward")[:1]:
        ev.construct("loss.backward(); optimizer.step()", call.loc,
                     "training_client.forward_backward(datums, loss_fn) + optim_step(adam), submitted together",
                     "gradients are computed server-side; the loss lives in the Datum weights / advantages")
    for call in src.calls_named("get_peft_model")[:1]:
        ev.construct("get_peft_model(model, LoraConfig)", call.loc, "create_lora_training_client(base_model, rank)")
    for call in src.calls_named("generate")[:1]:
        ev.construct("model.generate(...)", call.loc,
                     "sampling_client.sample(prompt, num_samples, SamplingParams(max_tokens, temperature, stop))")
    for call in src.calls_named("save_pretrained", "save")[:1]:
        ev.construct(f"{call.name}(...)", call.loc, "training_client.save_state(name) (+ save_weights_for_sampler)")
    for call in src.calls:
        if call.name.startswith("get_") and call.name.endswith("schedule") or call.name in {"LambdaLR", "CosineAnnealingLR"}:
            ev.construct(f"{call.name}(...)", call.loc, "learning rate computed per step in train.py",
                         "pass it in every optim_step(AdamParams(learning_rate=lr))")
            break
    for call in src.calls_named("clip_grad_norm_")[:1]:
        max_norm = call.kwarg("max_norm") or call.arg(1)
        value = max_norm.value if max_norm is not None else "..."
        ev.construct(f"clip_grad_norm_(..., {value})", call.loc, f"AdamParams(grad_clip_norm={value})")
    if src.calls_named("Accelerator"):
        ev.construct("accelerate.Accelerator()", src.calls_named("Accelerator")[0].loc, "(nothing)",
                     "devices and distribution are server-side on MinT")


def detect_python(src: PySource) -> Loc | None:
    """A file that trains with PyTorch / transformers itself: an optimizer, backward() or a Trainer."""
    where = src.imports_module("torch", "transformers", "peft")
    if (where is not None and is_training_script(src)) or src.calls_named(*_HF_TRAINERS):
        return where or Loc(src.label, 1)
    return None


ANALYZER = Analyzer(
    read_task=read_code_task,  # the task is in the code: the shared reader of loops
    name="pytorch",
    signals="hand-written loop: `AutoModelForCausalLM`, `loss.backward()`, `optimizer.step()`, `DataLoader`, "
            "`accelerate`, or transformers' `Trainer`",
    analyze=analyze,
    imports=("torch", "transformers", "peft"),
    detect_python=detect_python,
    own_config=True,
    generic=True,
)
