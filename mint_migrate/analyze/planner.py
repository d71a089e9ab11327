"""Inputs -> MigrationPlan: load the files, detect the framework, run its analyzer, then add what
every launch has in common, the MinT choices, and the user's task (data, reward, schedule: task.py)
with what became of every setting (coverage.py). Nothing is rendered or written here."""

import re
from dataclasses import dataclass, field
from pathlib import Path

from mint_migrate.analyze import choices, confirm, coverage, ledger, optimizer, task
from mint_migrate.analyze.detect import detect
from mint_migrate.analyze.evidence import NOT_USED, Evidence, Level, Value
from mint_migrate.analyze.harvest import Stated, harvest
from mint_migrate.analyze.inputs import Project, load_project
from mint_migrate.analyze.pycommon import algorithm_in_name, server_side
from mint_migrate.analyze.registry import analyzer, analyzers
from mint_migrate.analyze.settings import build_settings, coerce
from mint_migrate.analyze.shell import POSITIONAL_ONLY
from mint_migrate.analyze.synonyms import meaning
from mint_migrate.plan import SETTING_KEYS, Construct, MigrationPlan, MintChoices, PlanWarning, Setting, Settings


@dataclass
class Analysis:
    plan: MigrationPlan
    tinker_fixes: list[Construct] = field(default_factory=list)


def analyze(source_path: Path, config_paths: list[Path], confirmed: list[str] | None = None) -> MigrationPlan:
    """Read the inputs and return the plan: framework, algorithm, traced settings, MinT choices."""
    return analyze_inputs(Path(source_path), [Path(p) for p in config_paths], confirmed).plan


def analyze_inputs(source_path: Path, config_paths: list[Path], confirmed: list[str] | None = None) -> Analysis:
    """The plan, plus the Tinker 0.38 -> 0.22 call fixes the report lists. `confirmed`: settings the
    caller read in the inputs, `key=value@file:line`, each checked against its line (confirm.py)."""
    project = load_project(Path(source_path), [Path(p) for p in config_paths],
                           tuple(name for a in analyzers() for name in a.imports))
    found = detect(project)
    framework, where = found.framework, found.where
    stated = harvest(project)
    ev = Evidence(stated=stated, meaning_of=meaning)
    reader = analyzer(framework)
    reader.analyze(project, ev)
    if found.guessed:
        _named_target(project, ev)
    _launch_context(project, ev)
    unread = _unread(project, stated) if reader.own_config else set()
    voted = ev.algorithm()
    reserved = reader.reserved_names + reader.reserved_in.get(voted.algorithm if voted else "other", ())
    _fill_from_harvest(ev, stated, reserved, unread, "\n".join(f.python.text for f in project.pythons()),
                       own_loop=reader.own_config, batch_is_per_device=reader.batch_is_per_device)
    _cite_the_override(ev, stated, unread)
    agent = confirm.apply(confirm.parse_all(confirmed or []), project, ev)
    vote = ev.algorithm()
    algorithm = vote.algorithm if vote is not None else "other"
    settings = build_settings(ev)
    defaults = {
        key: Setting(value=coerce(value), source=f"{framework} default: {name}")
        for key, (value, name) in reader.defaults(algorithm).items()
        if getattr(settings, key) is None
    }
    mint, more = choices.choose(framework, algorithm, ev.variant, settings, defaults, ev)
    mint.reasons.insert(0, f"framework {framework}: recognised at {where}")
    facts = task.extract(project, ev, reader.read_task, algorithm, mint.kind, settings)
    _task_choices(mint, settings, facts)
    warnings = [*_still_open(ev.warnings, mint.kind, facts), *more, *facts.warnings, *_stray_flags(project),
                *_hydra_skipped(project)]
    if found.guessed:
        warnings.insert(0, PlanWarning(code="FRAMEWORK_GUESSED", message=f"Best effort: {found.guessed}. The "
                                       "framework (a hand-written loop) and every setting below are read from what "
                                       "the inputs state; check each against the training code before you run it.",
                                       source=str(where)))
    if algorithm == "other" and vote is not None and vote.weight == 0:
        warnings.append(PlanWarning(code="ALGORITHM_UNKNOWN", message=f"Could not tell the algorithm: {vote.why}. "
                                    "Check the scaffold choice in MIGRATION.md."))
    plan = MigrationPlan(
        framework=framework,
        algorithm=algorithm,
        variant=ev.variant,
        settings=settings,
        framework_defaults=defaults,
        mint=mint,
        warnings=warnings,
        constructs=ev.constructs,
        data=facts.data,
        reward=facts.reward,
        schedule=facts.schedule,
        inputs=[f.label + (" (found from the inputs: named by them, or the app beside a config)" if f.auto else "")
                for f in project.files],
    )
    if facts.reward is not None and facts.reward.status == "placeholder":
        plan.warnings.append(PlanWarning(code="REWARD_PLACEHOLDER", message="train.py's reward is the scaffold's "
                                         f"placeholder, not yours: {facts.reward.reason}.",
                                         source=facts.reward.source))
    adam = optimizer.choose(framework, stated, reader.optimizer_defaults(algorithm), _optimizer_class(project))
    mint.optimizer = adam.values
    mint.reasons += [f"Adam {param} {adam.values[param]:g}: {origin.text}" for param, origin in adam.origins.items()]
    mint.save_every = _run_int(stated, "save_every", minimum=1)
    mint.seed = _run_int(stated, "seed", minimum=0)
    plan.setting_uses = coverage.setting_uses(plan)
    _reward_constructs(plan)
    infra = {f.label for f in project.infra_configs()}
    texts = {f.label: f.text for f in project.files}
    plan.ledger = ledger.build(plan, stated, ev, adam, infra, agent, texts, unread)
    missing = [key for key in SETTING_KEYS if getattr(settings, key) is None]
    plan.unmapped = ledger.candidates(texts, missing)
    return Analysis(plan, ev.tinker_fixes)


# Canonical settings the synonym table may fill when a framework reader found nothing: names that
# mean one thing wherever they are written. The global batch is not among them (a DataLoader's
# `batch_size` is per device in one script and global in another; a micro batch is one thing), nor
# reward functions (code, not a value).
_FILLABLE = ("base_model", "dataset", "learning_rate", "per_device_batch_size", "gradient_accumulation_steps",
             "num_epochs", "max_steps", "max_seq_length", "max_prompt_length", "max_response_length",
             "num_generations", "kl_coef", "clip_ratio", "temperature", "lora.rank", "lora.alpha",
             "lora.target_modules")


_BETA_WEIGHS = re.compile(r"\bbeta\s*\*|\*\s*(\w+\.)*beta\b")
# TRL's GRPO and RLOO configs name their KL coefficient `beta`: a config handed to them by `**kwargs`
# keeps its `beta` key
_KL_BETA_CONFIGS = re.compile(r"\b(GRPOConfig|RLOOConfig)\b")
_EPS_CLIPS = re.compile(r"\b1\s*[-+]\s*(\w+\.)*(eps|clip)\b")
_GLOBAL_BATCH_NAMES = ("global_batch_size", "prompts_per_step", "num_prompts_per_step", "prompts_per_batch",
                       "groups_per_batch", "total_batch_size", "total_batch")
_MODEL_NAMES = ("model", "model.name", "model.id", "model.name_or_path")
# A hub id or a folder (`Qwen/Qwen3-8B`, `/ckpt/llama-7b`, `$MODEL_ROOT/qwen`), not a config file.
_MODEL_ID = re.compile(r"[\w.$/{}~-]*/[\w.${}-]+/?(?<!\.yaml)(?<!\.yml)(?<!\.json)(?<!\.py)")

_TEXT_SETTINGS = ("base_model", "dataset", "lora.target_modules")
# Sampling and policy-loss settings: a training setting only in an RL run (in an SFT script a
# `temperature` is its evaluation's).
_SAMPLING_CALLS = ("SamplingParams", "SampleParams", "GenerationConfig", "generate", "sample")
_SAMPLING_NAME = re.compile(r"sampl|generat", re.I)
_RL_ONLY = ("num_generations", "kl_coef", "clip_ratio", "temperature")


def _named_target(project: Project, ev: Evidence) -> None:
    """A guessed framework's reader found no algorithm: what the launched script is named for
    (`run_grpo.py`) is the best evidence left."""
    vote = ev.algorithm()
    if (vote is not None and vote.algorithm != "other") or not project.launches:
        return
    command, _script = project.launches[0]
    named = algorithm_in_name(command.target_parts[-1])
    if named is not None:
        ev.vote(named, command.loc, f"{command.target}: what the script it runs is named for", 1)


def _fill_from_harvest(ev: Evidence, stated: list[Stated], reserved: tuple[str, ...], unread: set[int],
                       code: str = "", own_loop: bool = False, batch_is_per_device: bool = False) -> None:
    """A setting the framework reader did not find, stated once under a name that means it: the
    harvest's value, at its line. Two different values for one setting fill nothing (the reader
    would have to know which one the run uses); nor do names the framework uses for something else
    (`reserved`: OpenRLHF's PPO `max_epochs` is updates per batch), unresolved interpolations, or
    LoRA options when the inputs switch LoRA off, or config keys nothing reads (`unread`: ids). `code`:
    the inputs' Python, where a policy loop's bare `beta` / `eps` must weigh or clip something; `own_loop`:
    the training loop is the source's own (plain PyTorch or the Tinker SDK), not a trainer library's;
    `batch_is_per_device`: the framework has no global batch, so a bare `batch_size` is per device."""
    vote = ev.algorithm()
    rl = vote is not None and vote.algorithm in ("grpo", "ppo", "reinforce", "distillation")
    leaves = {s.norm.rsplit(".", 1)[-1]: s.value for s in stated}
    kl_off = leaves.get("disable_kl") is True or (leaves.get("use_kl_loss") is False
                                                  and leaves.get("use_kl_in_reward") is not True)
    lora_off = any((s.norm.rsplit(".", 1)[-1] in ("use_peft", "use_lora", "lora") and s.value is False)
                   or ((s.norm.rsplit(".", 1)[-1] in ("lora_rank", "lora_r")
                        or s.norm.endswith(("lora.rank", "lora.r"))) and s.value == 0) for s in stated)

    def by_leaf(names: tuple[str, ...], fits) -> Value | None:
        """The one value stated under a name whose last part is one of `names` and that `fits`."""
        return ev.harvested_where(lambda s: s.norm.rsplit(".", 1)[-1].lower() in names and id(s) not in unread
                                  and not s.incidental and fits(s.value))

    preference = vote is not None and vote.algorithm in ("dpo", "kto", "orpo")
    if preference and ev.best("beta") is None:  # a DPO trainer's plain `beta` (`loss.beta=0.1`) is its beta
        best = by_leaf(("beta",), lambda v: _usable("beta", v)) \
            or ev.harvested("beta", lambda s: id(s) not in unread and not s.incidental and _usable("beta", s.value))
        if best is not None:
            ev.setting("beta", best)
    if ev.best("base_model") is None:  # a bare `--model` / `model.name` that names a checkpoint, not an object
        best = ev.harvested_where(lambda s: s.norm.lower() in _MODEL_NAMES and isinstance(s.value, str)
                                  and not s.incidental
                                  and id(s) not in unread and _MODEL_ID.fullmatch(s.value) is not None)
        if best is not None:
            ev.setting("base_model", best)
    for key in _FILLABLE:
        if ev.best(key) is not None or (lora_off and key.startswith("lora.")) or (key in _RL_ONLY and not rl) \
                or (key == "kl_coef" and kl_off) or (key == "num_epochs" and "update_epochs" in ev.extras):
            continue
        best = ev.harvested(key, lambda s, key=key: not _reserved(s.norm, reserved) and _usable(key, s.value)
                            and not s.incidental and id(s) not in unread
                            # SFT/DPO sample only to look (`SamplingParams(...)`, `SAMPLING_MAX_TOKENS = ...`)
                            and (rl or (s.owner not in _SAMPLING_CALLS and not _SAMPLING_NAME.search(s.key))))
        if best is not None:
            ev.setting(key, best)
            if key == "lora.rank" and "used_lora" not in ev.extras:
                ev.extra("used_lora", best.with_value(True))  # the stated rate is already a LoRA rate
    policy = vote is not None and vote.algorithm in ("grpo", "ppo", "reinforce")  # GKD's beta weighs its JSD
    if policy and not kl_off and ev.best("kl_coef") is None and (_BETA_WEIGHS.search(code)
                                                                  or _KL_BETA_CONFIGS.search(code)):
        # GRPO's paper notation: `beta` weighs the KL term (`cfg.beta * kl`), when the loop multiplies by it;
        # a `beta` the reader took for DPO's is that KL weight too (a policy-gradient run has no DPO beta)
        read = ev.best("beta")
        best = read if read is not None and _usable("kl_coef", read.value) else \
            by_leaf(("beta",), lambda v: _usable("kl_coef", v))
        if best is not None:
            ev.setting("kl_coef", best)
            ev.candidates.pop("beta", None)
    if policy and ev.best("clip_ratio") is None and _EPS_CLIPS.search(code):
        # a bare `eps` of a policy loop, `clamp(ratio, 1 - cfg.eps, 1 + cfg.eps)`: the clip range, not Adam's 1e-8
        best = by_leaf(("eps", "clip"), lambda v: isinstance(v, float) and 0.01 <= v <= 0.5)
        if best is not None:
            ev.setting("clip_ratio", best)
    # `--batch_size 4` to a TRL wrapper; classic PPO's batch_size is its rollout batch
    if batch_is_per_device and ev.best("per_device_batch_size") is None and (vote is None or vote.algorithm != "ppo"):
        best = by_leaf(("batch_size",), lambda v: _usable("per_device_batch_size", v))
        if best is not None:
            ev.setting("per_device_batch_size", best)
    # names no per-device share can have (a bare batch_size can), in a loop of the source's own (a trainer
    # library's global batch counts completions: per-device x accumulation x devices, which prompts only feed)
    if own_loop and ev.best("global_batch_size") is None and ev.best("per_device_batch_size") is None:
        # an RL loop's `train_batch_size` counts prompts per step, as verl's and OpenRLHF's do; an SFT or
        # reward-model launcher's is often HF's per-device batch under a shorter name
        names = _GLOBAL_BATCH_NAMES + (("train_batch_size",) if rl else ())
        best = by_leaf(names, lambda v: _usable("global_batch_size", v))
        if best is not None:
            ev.setting("global_batch_size", best)


def _unread(project: Project, stated: list[Stated]) -> set[int]:
    """The ids of the YAML keys no Python file of the inputs names (GRPO-Zero's `max_prompt_len`):
    when the inputs' own code reads the config, nothing reads them."""
    unread = _unread_constants(project, stated)
    texts = [f.python.text for f in project.pythons()]
    if not any(_PLAIN_LOAD.search(t) for t in texts) or any(_FIELD_LOAD.search(t) for t in texts):
        return unread  # an argument parser fills dataclass fields the inputs may not name
    for s in stated:
        if s.kind != "config" or not s.loc.path.endswith((".yaml", ".yml")):
            continue
        # every part of the path is named (`config["training"]["lr"]`, `cfg.training.lr`): a profile
        # the code never selects (`quick_test.max_steps`) is not read, even when its leaf is
        parts = s.norm.split(".")
        for k, part in enumerate(parts):
            name = re.escape(part)
            # a section is read from the config itself (`config["quick_test"]`, `cfg.training`), never as
            # another object's attribute (`args.quick_test` is a flag of the same name)
            read = re.compile(rf"['\"]{name}['\"]|\.{name}\b" if k == len(parts) - 1
                              else rf"['\"]{name}['\"]|\b\w*(cfg|conf|config|params|hp)\w*(\.\w+)*\.{name}\b")
            if not any(read.search(t) for t in texts):
                unread.add(id(s))
                break
    return unread


def _unread_constants(project: Project, stated: list[Stated]) -> set[int]:
    """The ids of a config module's constants that no script importing it reads: never imported
    (`from config import LR` leaves `MAX_LEN` alone), or only printed. A script that imports the module
    itself (`import config`) may read any of them."""
    unread = set()
    for f in project.pythons():
        module_src = f.python
        modules = {m for imp in module_src.importers for m, src in imp.own_modules.items() if src is module_src}
        read: set[str] = set()
        whole = False
        for imp in module_src.importers:
            for local, qualified in imp.imports.items():
                module, _, name = qualified.rpartition(".")
                whole = whole or qualified in modules
                if module in modules and imp.used_beyond_print(local):
                    read.add(name)
        if not module_src.importers or whole:
            continue
        unread |= {id(s) for s in stated if s.kind == "constant" and s.loc.path == f.label and s.key not in read}
    return unread


_PLAIN_LOAD = re.compile(r"\b(yaml\.(safe_|full_)?load|OmegaConf\.load|json\.load)\(")
_FIELD_LOAD = re.compile(r"\b(HfArgumentParser|TrlParser|parse_yaml_file|from_yaml|structured)\b")


def _cite_the_override(ev: Evidence, stated: list[Stated], unread: set[int]) -> None:
    """A setting read from code (`config = {"learning_rate": 5e-4}`) that a config or the command
    line states again with the same value (the YAML the loop merges over its dict): cited where the
    run takes it from, the higher level. A different value changes nothing here: which one the run
    uses is the reader's call."""
    for key in _FILLABLE:
        best = ev.best(key)
        if best is None or best.loc is None:
            continue
        over = [s for s in stated
                if s.level > best.level and s.level in (Level.CONFIG, Level.COMMAND) and not s.incidental
                and repr(s.value) == repr(best.value) and id(s) not in unread
                and (m := meaning(s.key, s.owner)) is not None and m.family == "setting" and m.concept == key]
        if over:
            top = max(over, key=lambda s: s.level)
            ev.setting(key, Value(top.value, top.loc, top.level))


def _reserved(norm: str, reserved: tuple[str, ...]) -> bool:
    """A name the framework reader owns: its last part, or a dotted ending (`kl_ctrl.kl_coef`)."""
    return any(norm == r or norm.endswith("." + r) for r in reserved)


def _usable(key: str, value: object) -> bool:
    if value in (None, "", []) or isinstance(value, bool):
        return False
    if isinstance(value, str) and ("${" in value or POSITIONAL_ONLY.fullmatch(value.strip())):
        return False  # an interpolation the config reader could not resolve, or only "the caller's 3rd argument"
    if key in _TEXT_SETTINGS:
        return isinstance(value, str | list) and not (isinstance(value, str) and NOT_USED.search(value))
    if key.startswith("lora.") or key in ("num_generations", "max_steps", "num_epochs"):
        return isinstance(value, int | float) and value > 0  # 0 and -1 mean off / unset there
    return isinstance(value, int | float) and value >= 0


def _optimizer_class(project: Project) -> str | None:
    """The optimizer class the source builds itself (`torch.optim.AdamW(model.parameters(), ...)`)."""
    for f in project.pythons():
        for call in f.python.calls:
            if call.name in optimizer.TORCH_CLASSES and not call.switched_off():
                return call.name
    return None


def _run_int(stated: list[Stated], concept: str, minimum: int) -> int | None:
    """The source's save interval or seed, when it states one (the highest-level statement wins)."""
    found = [s for s in stated if (m := meaning(s.key, s.owner)) is not None and m.concept == concept
             and isinstance(s.value, int) and not isinstance(s.value, bool) and s.value >= minimum]
    return max(found, key=lambda s: s.level).value if found else None


def _task_choices(mint: MintChoices, settings: Settings, facts: task.Task) -> None:
    """The choices the task adds: the prompt limit, and the throughput variant when the source samples
    while it trains."""
    mint.max_prompt_tokens, why = coverage.prompt_limit(mint.kind, settings, mint.max_tokens)
    if why:
        mint.reasons.append(why)
    several = facts.schedule.minibatches > 1 or facts.schedule.updates_per_batch > 1
    if mint.kind == "grpo" and facts.throughput and several:
        mint.reasons.append(f"the plain GRPO recipe, although the source samples while it trains "
                            f"({facts.throughput}): only the plain recipe takes several optim_steps per batch")
    elif mint.kind == "grpo" and facts.throughput:
        mint.throughput = True
        mint.reasons.append(f"the throughput variant (sampling while training, streaming minibatches): the source "
                            f"samples while it trains ({facts.throughput})")


def _still_open(warnings: list[PlanWarning], kind: str, facts: task.Task) -> list[PlanWarning]:
    """The analyzers' warnings, without the ones train.py now handles: the loss normalisation (in
    the datum weights / advantages) and several updates per batch (--updates-per-batch)."""
    handled = set()
    if kind in ("sft", "grpo"):
        handled.add("LOSS_AGGREGATION")
    if kind == "grpo" and facts.schedule.updates_per_batch > 1:
        handled.add("MULTI_UPDATE")
    return [w for w in warnings if w.code not in handled]


def _reward_constructs(plan: MigrationPlan) -> None:
    """The side-by-side rows of reward functions name what train.py really does with them."""
    reward = plan.reward
    if reward is None:
        return
    for construct in plan.constructs:
        if construct.mint.startswith("reward_fn("):
            if reward.status == "user":
                construct.mint = (f"called unchanged from train.py (REWARD, the {reward.style} signature)"
                                  + (", copied into rewards.py" if reward.extract else ""))
                construct.note = reward.reason
            else:
                construct.mint, construct.note = "train.py's placeholder reward", reward.reason


def _launch_context(project: Project, ev: Evidence) -> None:
    """What every framework's launch has in common: the process count, and launchers and cluster
    configs that become server-side on MinT."""
    main = project.main_command()
    if main is not None and main.world_size is not None and "world_size" not in ev.extras:
        ev.extra("world_size", main.world_size)
    for command in project.commands():
        for launcher in command.launchers:
            if launcher in {"torchrun", "deepspeed", "accelerate"}:
                server_side(ev, f"{launcher} (multi-process GPU launch)", command.loc)
            elif launcher == "ray":
                server_side(ev, "ray job submit (Ray cluster)", command.loc)
    for f in project.files:
        gpu_env = sorted(k for k in (f.shell.exports if f.shell else {}) if k.startswith(("VLLM_", "NCCL_", "CUDA_")))
        if gpu_env:
            server_side(ev, f"GPU engine environment ({', '.join(gpu_env)})", f.shell.exports[gpu_env[0]].loc)
    for f in project.infra_configs():
        values = f.yaml.values
        # accelerate's config file sets the process count when the command line does not
        processes = values.get("num_processes")
        if processes is not None and isinstance(processes.value, int) and "world_size" not in ev.extras:
            ev.extra("world_size", processes)
        keys = ("distributed_type", "deepspeed_config.zero_stage", "zero_optimization.stage")
        what = next((f"{k}={values[k].value}" for k in keys if k in values), "cluster settings")
        loc = next((values[k].loc for k in keys if k in values), None)
        server_side(ev, f"{f.label} ({what})", loc)


def _hydra_skipped(project: Project) -> list[PlanWarning]:
    """Defaults-list entries of a hydra composition that were not read: said, never skipped silently."""
    out = []
    for config in project.hydra_configs():
        for what in getattr(config, "skipped", []):
            where, _, message = what.partition(": ")
            out.append(PlanWarning(code="HYDRA_UNRESOLVED", message=f"{message}. Its settings are not in the plan: "
                                   "pass the file with --config, or confirm the values with --set.", source=where))
    return out


def _stray_flags(project: Project) -> list[PlanWarning]:
    out = []
    for f in project.files:
        if f.shell is None:
            continue
        for loc in f.shell.stray_flags:
            out.append(PlanWarning(code="STRAY_FLAGS", message="A line starts with a flag but is not part of a "
                                   "command: a comment or a missing backslash cut the command above it short, and "
                                   "bash ignores these flags too.", source=str(loc)))
    return out
