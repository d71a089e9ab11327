"""OpenRLHF: `python -m openrlhf.cli.train_*` command lines, legacy flags and the dotted ones.

OpenRLHF >= 0.10.2 renamed its flat flags (`--pretrain`, `--learning_rate`, `--n_samples_per_prompt`)
to a dotted hierarchy (`--model.model_name_or_path`, `--adam.lr`, `--rollout.n_samples_per_prompt`,
and per-role `--actor.adam.lr` for PPO). Both spellings are read; the tool says which one it saw.
"""

from mint_migrate.analyze.evidence import Evidence, Level, Value
from mint_migrate.analyze.inputs import Project
from mint_migrate.analyze.pycommon import (
    TEACHER_FLAG,
    estimator_algorithm,
    infra_imports,
    server_side,
    teacher_warning,
)
from mint_migrate.analyze.registry import Analyzer
from mint_migrate.analyze.scalars import as_int, as_number
from mint_migrate.analyze.shell import Arg, Command
from mint_migrate.analyze.task import (
    Task,
    data_source,
    flag,
    normalize_loss,
    reward_file,
    schedule_from,
    switch,
    updates,
)
from mint_migrate.plan import Algorithm, RewardFunction, RewardPlan, ScaffoldKind, Settings

ENTRY_POINTS: dict[str, Algorithm] = {
    "train_sft": "sft", "train_dpo": "dpo", "train_iterative_dpo": "dpo", "train_rm": "reward_model",
    "train_prm": "reward_model", "train_kto": "kto", "train_kd": "distillation", "train_ppo_ray": "ppo",
    "train_ppo": "ppo", "train_rloo": "reinforce",
}
ESTIMATORS: dict[str, tuple[Algorithm, str | None]] = {
    "gae": ("ppo", None), "reinforce": ("reinforce", "reinforce_plus_plus"), "rloo": ("reinforce", "rloo"),
    "reinforce_baseline": ("reinforce", "reinforce_baseline"), "group_norm": ("grpo", None),
    "dr_grpo": ("grpo", "dr_grpo"),
}
FLAGS = {
    "pretrain": "base_model", "model.model_name_or_path": "base_model", "actor.model_name_or_path": "base_model",
    "dataset": "dataset", "prompt_data": "dataset", "data.dataset": "dataset", "data.prompt_dataset": "dataset",
    "learning_rate": "learning_rate", "actor_learning_rate": "learning_rate", "adam.lr": "learning_rate",
    "actor.adam.lr": "learning_rate",
    "train_batch_size": "global_batch_size", "train.batch_size": "global_batch_size",
    "micro_train_batch_size": "per_device_batch_size", "train.micro_batch_size": "per_device_batch_size",
    "max_epochs": "num_epochs", "train.max_epochs": "num_epochs",
    "max_len": "max_seq_length", "data.max_len": "max_seq_length",
    "prompt_max_len": "max_prompt_length", "data.prompt_max_len": "max_prompt_length",
    "generate_max_len": "max_response_length", "max_new_tokens": "max_response_length",
    "rollout.max_new_tokens": "max_response_length",
    "lora_rank": "lora.rank", "ds.lora.rank": "lora.rank",
    "lora_alpha": "lora.alpha", "ds.lora.alpha": "lora.alpha",
    "target_modules": "lora.target_modules", "ds.lora.target_modules": "lora.target_modules",
    "beta": "beta", "model.beta": "beta",
    "n_samples_per_prompt": "num_generations", "rollout.n_samples_per_prompt": "num_generations",
    "rloo_k": "num_generations",
    "init_kl_coef": "kl_coef", "algo.kl.init_coef": "kl_coef",
    "eps_clip": "clip_ratio", "actor.eps_clip": "clip_ratio", "eps_clip_low": "clip_ratio",
    "temperature": "temperature", "rollout.temperature": "temperature",
}
_SERVER_SIDE = {
    "zero_stage": "DeepSpeed ZeRO", "ds.zero_stage": "DeepSpeed ZeRO", "vllm_num_engines": "vLLM engines",
    "vllm.num_engines": "vLLM engines", "vllm_tensor_parallel_size": "vLLM tensor parallelism",
    "vllm.tensor_parallel_size": "vLLM tensor parallelism", "colocate_all_models": "model colocation",
    "train.colocate_all": "model colocation", "actor_num_gpus_per_node": "GPU placement",
    "actor.num_gpus_per_node": "GPU placement", "adam_offload": "optimizer offload",
    "ds.adam_offload": "optimizer offload", "ref_num_nodes": "GPU placement",
}
_DEFAULTS: dict[str, dict[str, tuple[object, str]]] = {
    "sft": {"learning_rate": (5e-6, "--adam.lr"), "global_batch_size": (128, "--train.batch_size")},
    "rl": {"learning_rate": (1e-6, "--actor.adam.lr"), "num_generations": (1, "--rollout.n_samples_per_prompt"),
           "global_batch_size": (128, "--train.batch_size"), "kl_coef": (0.01, "--algo.kl.init_coef")},
}


def defaults(algorithm: Algorithm) -> dict[str, tuple[object, str]]:
    if algorithm in {"ppo", "grpo", "reinforce", "other"}:
        return _DEFAULTS["rl"]
    return _DEFAULTS["sft"] if algorithm == "sft" else {}


def optimizer_defaults(algorithm: Algorithm) -> dict[str, tuple[float, str]]:
    """OpenRLHF's DeepSpeed Adam: --adam_betas (0.9, 0.95), --l2 0, --max_norm 1.0."""
    return {"beta1": (0.9, "--adam_betas[0]"), "beta2": (0.95, "--adam_betas[1]"), "eps": (1e-8, "DeepSpeed Adam eps"),
            "weight_decay": (0.0, "--l2"), "grad_clip_norm": (1.0, "--max_norm")}


# Flags only OpenRLHF's trainers take (DeepSpeed-Chat and the no_trainer loops share its zero_stage).
_OWN_FLAGS = {"pretrain", "micro_train_batch_size", "reward_pretrain", "critic_pretrain", "micro_rollout_batch_size"}


def is_openrlhf_command(command: Command) -> bool:
    """OpenRLHF's entry points, or a fork's (`openrlhf_m.cli.train_ppo_ray`, `my_rlhf/cli/train_dpo.py`), or
    the scripts of its first layout (`examples/train_dpo.py`, run as `../train_dpo.py` from examples/scripts)
    given OpenRLHF's own flags."""
    target = command.module or command.script or ""
    if target.startswith("openrlhf") or "openrlhf/cli" in (command.script or ""):
        return True
    parts = target.removesuffix(".py").replace("/", ".").split(".")
    if len(parts) >= 2 and parts[-2] == "cli" and _known_entry(parts[-1]) is not None:
        return True
    return _known_entry(parts[-1]) is not None and bool({a.name for a in command.flags()} & _OWN_FLAGS)


def entry_point(command: Command) -> str:
    """The OpenRLHF entry point a command runs; a fork's own variant (`multi_agent_train_ppo_ray`) is
    the entry point its name ends with."""
    name = (command.module or command.script or "").removesuffix(".py").replace("/", ".").rsplit(".", 1)[-1]
    return _known_entry(name) or name


def _known_entry(name: str) -> str | None:
    if name in ENTRY_POINTS:
        return name
    ends = [entry for entry in ENTRY_POINTS if name.endswith("_" + entry)]
    return max(ends, key=len) if ends else None


def training_commands(project: Project) -> list[Command]:
    """The OpenRLHF commands that train (an iterative-DPO loop also generates and judges with
    openrlhf.cli.batch_inference); all OpenRLHF commands when none is a known trainer."""
    commands = [c for c in project.commands() if is_openrlhf_command(c)]
    return [c for c in commands if entry_point(c) in ENTRY_POINTS] or commands


def analyze(project: Project, ev: Evidence) -> None:
    for f in project.pythons():
        infra_imports(f.python, ev)
    commands = training_commands(project)
    if not commands:
        ev.vote("other", None, "no openrlhf.cli command found", 0)
        return
    command = commands[0]
    if len(commands) > 1:
        ev.warn("MULTIPLE_COMMANDS", f"The script launches {len(commands)} OpenRLHF runs; the first one "
                f"({command.target}) was migrated.", command.loc)
    entry = entry_point(command)
    algorithm = ENTRY_POINTS.get(entry, "other")
    flags = {a.name: a for a in command.flags()}
    dotted = sorted(n for n in flags if "." in n)
    style = "dotted flags (OpenRLHF >= 0.10.2)" if dotted else "legacy flat flags (OpenRLHF <= 0.10.1)"
    ev.construct(f"{command.text} ({style})", command.loc, "python train.py (the MinT scaffold) with argparse flags")
    if entry == "train_ppo_ray" and "ray" not in command.launchers:
        server_side(ev, "train_ppo_ray (Ray actors for actor, critic, reference and vLLM)", command.loc)
    if command.world_size is not None:
        ev.extra("world_size", command.world_size)

    rl = algorithm in ("ppo", "reinforce")  # the PPO family: max_epochs counts updates per rollout batch
    if rl:
        estimator = flags.get("advantage_estimator") or flags.get("algo.advantage.estimator")
        if entry == "train_rloo":  # a fork's own RLOO trainer: leave-one-out baseline over --rloo_k samples
            ev.vote("reinforce", command.loc, f"openrlhf.cli.{entry}", 3)
            ev.set_variant("rloo", command.loc)
        elif estimator is not None and estimator.value is not None:
            algorithm, variant = estimator_algorithm(str(estimator.value.value), ESTIMATORS)
            samples = _value(flags, "n_samples_per_prompt", "rollout.n_samples_per_prompt")
            if algorithm == "other" and samples is not None and (as_number(samples.value) or 1) > 1:
                # a fork's own estimator over groups of samples (`gd2po`): GRPO's family. Critic flags beside
                # it are the PPO example's, copied; an estimator that needs no critic never builds one
                algorithm = "grpo"
            ev.extra("kind_hint", Value("grpo", estimator.value.loc))
            ev.vote(algorithm, estimator.value.loc, f"{estimator.written} {estimator.value.value}", 3)
            ev.set_variant(variant, estimator.value.loc)
        else:
            ev.vote("ppo", command.loc, "OpenRLHF's default advantage estimator is gae (PPO with a critic)", 2)
    else:
        ev.vote(algorithm, command.loc, f"openrlhf.cli.{entry}", 3)

    for name, arg in flags.items():
        setting = FLAGS.get(name)
        if setting is None:
            continue
        value = arg.value
        if value is None and setting in {"dataset", "base_model"}:
            value = arg.setting_literal(Level.COMMAND)
        if setting == "num_epochs" and rl:
            continue  # in the PPO-family trainer, max_epochs is update epochs per rollout batch (MULTI_UPDATE)
        if setting == "lora.rank" and value is not None and as_number(value.value) == 0:
            continue
        ev.setting(setting, value)
    episodes = flags.get("num_episodes") or flags.get("train.num_episodes")
    if rl and episodes is not None and episodes.value is not None:
        ev.setting("num_epochs", episodes.value)  # the PPO family's passes over the prompts
    rank = flags.get("lora_rank") or flags.get("ds.lora.rank")
    if rank is not None and rank.value is not None and (as_number(rank.value.value) or 0) > 0:
        ev.extra("used_lora", rank.value)
        extra = [a.written for n, a in flags.items() if n in {"lora_alpha", "ds.lora.alpha", "target_modules",
                                                              "ds.lora.target_modules", "lora_dropout", "ds.lora.dropout"}]
        if extra:
            ev.warn("LORA_OPTIONS", f"{', '.join(extra)} {'has' if len(extra) == 1 else 'have'} no MinT equivalent: "
                    "MinT takes only the LoRA rank.",
                    rank.value.loc)
    ev.extra("prompts_per_step", _value(flags, "rollout_batch_size", "rollout.batch_size"))
    _warnings(project, flags, algorithm, ev, command, rl)


def _value(flags: dict[str, Arg], *names: str) -> Value | None:
    for name in names:
        if name in flags and flags[name].value is not None:
            return flags[name].value
    return None


def _warnings(project: Project, flags: dict[str, Arg], algorithm: Algorithm, ev: Evidence, command: Command,
              rl: bool) -> None:
    for name, what in _SERVER_SIDE.items():
        if name in flags:
            server_side(ev, f"--{name} ({what})", flags[name].loc or command.loc)
            break
    if rl:
        critic = _value(flags, "critic_pretrain", "critic.model_name_or_path", "critic_learning_rate", "critic.adam.lr")
        estimator = _value(flags, "advantage_estimator", "algo.advantage.estimator")
        if algorithm == "ppo" or critic is not None:
            loc = (estimator or critic).loc if (estimator or critic) else command.loc
            ev.warn("CRITIC_GAE", "GAE advantages need a critic (value model), and MinT has none. The migration uses "
                    "a group baseline instead (several samples per prompt, advantage = reward - group mean) with "
                    "the ppo clipped loss.", loc)
        kl = _value(flags, "init_kl_coef", "algo.kl.init_coef")
        use_kl_loss = _value(flags, "use_kl_loss", "algo.kl.use_loss")
        if kl is None:
            ev.warn("KL_REFERENCE", "OpenRLHF adds a KL penalty to the reward by default (init_kl_coef=0.01). "
                    "MinT's losses have no KL term: fold it into the reward with reference logprobs from a "
                    "base-model sampler, or drop it.", None)
        elif (as_number(kl.value) or 0) > 0 or (use_kl_loss is not None and use_kl_loss.value is True):
            ev.warn("KL_REFERENCE", f"KL to the reference model (coef {kl.value}): MinT's losses have no KL term. "
                    "Fold it into the reward (reward - coef * (logp - logp_ref)), or drop it.", kl.loc)
        reward_model = _value(flags, "reward_pretrain", "reward.model_name_or_path")
        if reward_model is not None:
            ev.warn("REWARD_MODEL_SCORING", f"A learned reward model ({reward_model.value}) scores the rollouts; MinT "
                    "serves no reward-model head. Score in Python, or call a MinT sampler as a judge.",
                    reward_model.loc)
        entropy = _value(flags, "entropy_loss_coef", "actor.entropy_coef")
        if entropy is not None and (as_number(entropy.value) or 0) > 0:
            ev.warn("ENTROPY_BONUS", f"entropy coefficient {entropy.value}: MinT's losses have no entropy bonus.",
                    entropy.loc)
        loss_type = _value(flags, "policy_loss_type", "actor.policy_loss_type")
        if loss_type is not None and loss_type.value == "gspo":
            ev.set_variant("gspo", loss_type.loc)
        ev.extra("clip_low", _value(flags, "eps_clip", "actor.eps_clip", "eps_clip_low"))
        ev.extra("clip_high", _value(flags, "eps_clip_high"))
        pair = _value(flags, "eps_clip_low_high", "actor.eps_clip_low_high")
        if pair is not None and isinstance(pair.value, list) and len(pair.value) == 2:
            ev.setting("clip_ratio", pair.with_value(pair.value[0]))
            ev.extra("clip_low", pair.with_value(pair.value[0]))
            ev.extra("clip_high", pair.with_value(pair.value[1]))
        epochs = _value(flags, "max_epochs", "train.max_epochs")
        if epochs is not None and (as_number(epochs.value) or 1) > 1:
            ev.warn("MULTI_UPDATE", f"{epochs.value} update epochs per rollout batch: on MinT repeat forward_backward + "
                    "optim_step over the same Datums, or keep one update per batch.", epochs.loc)
        ev.warn("LOSS_AGGREGATION", "MinT's losses sum over tokens; OpenRLHF averages them per token. Scale the "
                "advantages by 1/len(response) to keep the same per-token weighting.", None)
        for name in ("dynamic_filtering", "algo.dynamic_filtering_enable"):
            if name in flags:
                ev.construct(f"--{name}", flags[name].loc, "groups whose rewards are all equal are skipped")
        _reward(project, flags, ev)
    if algorithm == "reward_model":
        ev.warn("REWARD_MODEL_TRAINING", "Reward-model training (a scalar head on chosen/rejected pairs) has no MinT "
                "equivalent: MinT trains LoRA adapters of a causal LM. The migration uses the DPO scaffold's pairwise "
                "forward_backward_custom (Bradley-Terry on sequence logprobs), an approximation.", command.loc)
    if algorithm == "kto":
        ev.warn("CUSTOM_LOSS", "KTO has no built-in MinT loss: the migration uses the DPO scaffold's "
                "forward_backward_custom; replace its pairwise loss with the KTO objective.", command.loc)
    if algorithm == "dpo":
        for name in ("ipo", "model.ipo_enable", "label_smoothing", "model.label_smoothing", "nll_loss_coef",
                     "model.nll_loss_coef"):
            if name in flags:
                ev.construct(f"--{name}", flags[name].loc, "edit dpo_loss in train.py",
                             "a DPO loss variant; the scaffold implements the sigmoid loss")
    if algorithm == "distillation":
        teacher = _value(flags, "teacher_model", "teacher.model_name_or_path")
        if teacher is not None:
            teacher_warning(ev, str(teacher.value), teacher.loc)
            ev.construct(f"teacher {teacher.value}", teacher.loc, TEACHER_FLAG)


def _reward(project: Project, flags: dict[str, Arg], ev: Evidence) -> None:
    named = _value(flags, "reward_func_names")  # a fork's registry of rule rewards: `--reward_func_names accuracy format`
    if named is not None:
        names = _reward_names(named.value)
        ev.setting("reward_functions", named.with_value(names))
        ev.construct(f"--reward_func_names {' '.join(names)}", named.loc,
                     "reward_fn(prompt, completion, row) -> float in train.py",
                     "the fork's own rule rewards, looked up by name: port each one (and --reward_weights) to Python")
    remote = _value(flags, "remote_rm_url", "reward.remote_url") or next(
        (flags[n].literal(Level.COMMAND) for n in ("remote_rm_url", "reward.remote_url") if n in flags), None)
    if remote is None or remote.value is None:
        return
    target = str(remote.value)  # as written when only the machine knows part of it (`$(cd ... && pwd)/r.py`)
    if not target.endswith(".py"):  # a reward server: a model behind a URL, not a function of the inputs
        ev.warn("REWARD_MODEL_SCORING", f"Rewards come from a remote server ({target}); call it from the reward "
                "function in train.py, or port its logic to Python.", remote.loc)
        return
    # `path:reward_func`, cited where the flag is written (not where a variable it reads was set)
    written = next((flags[n].at for n in ("remote_rm_url", "reward.remote_url") if n in flags and flags[n].at), None)
    ev.setting("reward_functions", Value([f"{target}:reward_func"], written or remote.loc, remote.level))
    module = reward_file(project, target)  # the same file read_task gives train.py
    info = module.python.functions.get("reward_func") if module and module.python else None
    if module is not None and module.python is not None and info is None:
        ev.warn("REWARD_FN_MISSING", f"{module.label} defines no reward_func; OpenRLHF would fail to load it.",
                remote.loc)
    ev.construct("reward_func(queries, prompts, labels)", module.python.at(info.line) if info else remote.loc,
                 "reward_fn(prompt, completion, row) -> float in train.py",
                 "OpenRLHF returns {'rewards': ...}; MinT's reward is one float per completion")

# --- the task: data, reward and schedule (the planner calls read_task through the registry) ----------


def read_task(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
              task: Task) -> None:
    command = next(iter(training_commands(project)), None)
    if command is None:
        return
    flags = {a.name: a for a in command.flags()}

    def text(*names: str) -> str | None:
        v = flag(flags, *names)
        return None if v is None else str(v.value)

    if settings.dataset is not None:
        data = task.data = data_source(project, settings.dataset.value, settings.dataset.source)
        if data is not None:
            data.chat_template = switch(flags, "apply_chat_template")
            data.prompt_template = text("input_template")
            data.split = text("prompt_split", "dataset_split") or data.split
            samples = flag(flags, "max_samples")
            data.max_samples = as_int(samples.value) if samples is not None and (as_int(samples.value) or 0) < 10**8 \
                else None
            key = text("input_key") or "input"
            if kind == "grpo":
                data.fields = {"prompt": key, **({"answer": text("label_key")} if text("label_key") else {})}
            elif kind == "sft":
                data.fields = {"prompt": key, "completion": text("output_key") or "output"}
                data.format = "prompt_completion"
            elif kind == "dpo":
                prompt = text("prompt_key")
                data.fields = {"chosen": text("chosen_key") or "chosen", "rejected": text("rejected_key") or "rejected",
                               **({"prompt": prompt} if prompt else {})}
            data.notes.append("OpenRLHF's keys: " + ", ".join(f"{k} <- {v}" for k, v in data.fields.items())
                              + ("; --apply_chat_template: a string prompt becomes a user message"
                                 if data.chat_template else ""))
    scheduler = text("lr_scheduler") or "cosine_with_min_lr"
    ratio = flag(flags, "lr_warmup_ratio")
    schedule_from(task, "cosine" if "cosine" in scheduler else ("linear" if "linear" in scheduler else "constant"),
                   warmup_ratio=ratio.value if ratio is not None else 0.03,
                   min_lr_ratio=0.1 if scheduler == "cosine_with_min_lr" else None,
                   why=f"--lr_scheduler {scheduler}" + ("" if ratio is not None else ", OpenRLHF's default "
                                                        "--lr_warmup_ratio 0.03 and min lr 0.1 x LR"))
    normalize_loss(task, "token_mean", "OpenRLHF's losses average over the action tokens")
    if kind != "grpo":
        return
    episodes = flag(flags, "num_episodes")
    if episodes is not None and as_number(episodes.value):
        task.schedule.epochs = float(as_number(episodes.value))
        task.schedule.reasons.append(f"{episodes.value} passes over the prompts (num_episodes, {episodes.loc})")
    else:
        task.schedule.epochs = 1.0
    samples_flag = "rloo_k" if flag(flags, "rloo_k") is not None else "n_samples_per_prompt"
    rollout, samples = as_int(text("rollout_batch_size")), as_int(text(samples_flag)) or 1
    train = as_int(text("train_batch_size", "train.batch_size"))
    updates(task, rollout * samples if rollout else None, train, f"rollout_batch_size {rollout} x "
             f"{samples_flag} {samples} / train_batch_size {train}", as_int(text("max_epochs")), "max_epochs")
    estimator = text("advantage_estimator", "estimator") or "gae"
    task.schedule.normalize_advantages = estimator in {"group_norm", "reinforce_baseline"}
    if switch(flags, "async_train"):
        task.throughput = "--async_train (rollouts run while the actor trains)"
    task.reward = _openrlhf_reward(project, flags)


def _reward_names(value: object) -> list[str]:
    """`--reward_func_names accuracy format` (a list), or one word, or `accuracy,format`."""
    return [str(n) for n in value] if isinstance(value, list) else str(value).replace(",", " ").split()


def _openrlhf_reward(project: Project, flags: dict) -> RewardPlan:
    remote = flag(flags, "remote_rm_url", "remote_url")
    model = flag(flags, "reward_pretrain")
    named = flag(flags, "reward_func_names")
    if remote is None and named is not None:
        return RewardPlan(style="openrlhf", status="placeholder", source=str(named.loc),
                          reason=f"--reward_func_names {' '.join(_reward_names(named.value))}: the fork's own rule "
                                 "rewards, looked up by name; "
                                 "port them to a Python reward_func(queries, prompts, labels) and pass --reward "
                                 "FILE:reward_func")
    if remote is None:
        why = f"a reward model ({model.value})" if model is not None else "no --remote_rm_url"
        return RewardPlan(style="openrlhf", status="placeholder", source=str(model.loc) if model else None,
                          reason=f"{why}: MinT serves no reward-model head; write a Python reward_func(queries, "
                                 "prompts, labels) and pass --reward FILE:reward_func")
    target = str(remote.value)
    if not target.endswith(".py"):
        return RewardPlan(style="openrlhf", status="placeholder", source=str(remote.loc),
                          reason=f"rewards come from a remote server ({target}); call it from a Python reward_func "
                                 "and pass --reward FILE:reward_func")
    found = reward_file(project, target)
    plan = RewardPlan(style="openrlhf", status="placeholder", functions=[RewardFunction(name="reward_func")],
                      source=str(remote.loc))
    if found is None or found.python is None:
        plan.reason = f"{target} was not given and is not beside the inputs: pass it with --config"
    elif "reward_func" not in found.python.functions:
        plan.reason = f"{found.label} defines no reward_func"
    else:
        plan.status, plan.file = "user", str(found.path.resolve())
        plan.reason = f"reward_func from {found.label} (--remote_rm_url)"
    return plan


ANALYZER = Analyzer(
    read_task=read_task,
    name="openrlhf",
    signals="`openrlhf.cli.train_ppo_ray / train_sft / train_dpo`; flags `--pretrain` (up to v0.10.1) or "
            "`--model.model_name_or_path`, `--actor.adam.lr` (v0.10.2 and later)",
    analyze=analyze,
    defaults=defaults,
    optimizer_defaults=optimizer_defaults,
    reserved_names=("max_epochs",),  # PPO family: update epochs per rollout batch, not passes over the prompts
    imports=("openrlhf",),
    detect_command=lambda command, script: is_openrlhf_command(command),
)
