"""verl: `python -m verl.trainer.main_ppo` hydra overrides, verl YAML configs, SFT trainers, recipes.

Settings are hydra keys. A YAML config (the trainer config, or a user config passed with
--config / --config-name) is read first; the command's `key=value` overrides win over it, as in
hydra. Key names and defaults follow verl's `ppo_trainer.yaml` / `sft_trainer.yaml`.
"""

from pathlib import PurePosixPath

from mint_migrate.analyze.evidence import Evidence, Level, Loc, Value
from mint_migrate.analyze.inputs import InputFile, Project, add_file
from mint_migrate.analyze.pycommon import (
    TEACHER_FLAG,
    algorithm_in_name,
    estimator_algorithm,
    infra_imports,
    server_side,
    teacher_warning,
)
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.registry import Analyzer
from mint_migrate.analyze.scalars import as_int, as_number
from mint_migrate.analyze.shell import Arg, Command
from mint_migrate.analyze.task import (
    Task,
    data_source,
    normalize_loss,
    python_reward,
    reward_file,
    schedule_from,
    updates,
)
from mint_migrate.plan import Algorithm, RewardFunction, RewardPlan, ScaffoldKind, Settings

RL_KEYS = {
    "actor_rollout_ref.model.path": "base_model",
    "data.train_files": "dataset",
    "actor_rollout_ref.actor.optim.lr": "learning_rate",
    "data.train_batch_size": "global_batch_size",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "per_device_batch_size",
    "trainer.total_epochs": "num_epochs",
    "trainer.total_training_steps": "max_steps",
    "data.max_prompt_length": "max_prompt_length",
    "data.max_response_length": "max_response_length",
    "actor_rollout_ref.model.lora_rank": "lora.rank",
    "actor_rollout_ref.model.lora_alpha": "lora.alpha",
    "actor_rollout_ref.model.target_modules": "lora.target_modules",
    "actor_rollout_ref.rollout.n": "num_generations",
    "actor_rollout_ref.rollout.n_agent": "num_generations",  # Search-R1's forks: samples per prompt of the agent loop
    "actor_rollout_ref.rollout.temperature": "temperature",
    # EasyR1 and its forks: verl's trainer under a `worker.` layout (rollout_batch_size is verl's
    # data.train_batch_size, worker.actor.global_batch_size its ppo_mini_batch_size)
    "worker.actor.model.model_path": "base_model",
    "worker.actor.optim.lr": "learning_rate",
    "data.rollout_batch_size": "global_batch_size",
    "worker.actor.micro_batch_size_per_device_for_update": "per_device_batch_size",
    "trainer.max_steps": "max_steps",
    "trainer.total_episodes": "num_epochs",  # early EasyR1: passes over the prompts
    "worker.actor.model.lora.rank": "lora.rank",
    "worker.actor.model.lora.alpha": "lora.alpha",
    "worker.actor.model.lora.target_modules": "lora.target_modules",
    "worker.rollout.n": "num_generations",
    "worker.rollout.temperature": "temperature",
}
SFT_KEYS = {
    "model.partial_pretrain": "base_model",
    "model.path": "base_model",
    "data.train_files": "dataset",
    "optim.lr": "learning_rate",
    "data.train_batch_size": "global_batch_size",
    "data.micro_batch_size_per_gpu": "per_device_batch_size",
    "data.max_length": "max_seq_length",
    "model.lora_rank": "lora.rank",
    "model.lora_alpha": "lora.alpha",
    "model.target_modules": "lora.target_modules",
    "trainer.total_epochs": "num_epochs",
    "trainer.total_training_steps": "max_steps",
}
ESTIMATORS: dict[str, tuple[Algorithm, str | None]] = {
    "gae": ("ppo", None),
    "grpo": ("grpo", None), "grpo_passk": ("grpo", "grpo_passk"), "grpo_vectorized": ("grpo", None),
    "reinforce_plus_plus": ("reinforce", "reinforce_plus_plus"),
    "reinforce_plus_plus_baseline": ("reinforce", "reinforce_plus_plus_baseline"),
    "remax": ("reinforce", "remax"), "rloo": ("reinforce", "rloo"), "rloo_vectorized": ("reinforce", "rloo"),
    # group-sampled policy-gradient estimators with their own baselines: the GRPO scaffold, variant named
    "opo": ("grpo", "opo"), "gpg": ("grpo", "gpg"), "optimal_token_baseline": ("grpo", "optimal_token_baseline"),
    "tir_optimal_token_baseline": ("grpo", "tir_optimal_token_baseline"),
}
DEFAULTS_RL = {
    "learning_rate": (1e-6, "actor_rollout_ref.actor.optim.lr"),
    "global_batch_size": (1024, "data.train_batch_size"),
    "max_prompt_length": (512, "data.max_prompt_length"),
    "max_response_length": (512, "data.max_response_length"),
    "num_generations": (1, "actor_rollout_ref.rollout.n"),
    "clip_ratio": (0.2, "actor_rollout_ref.actor.clip_ratio"),
    "temperature": (1.0, "actor_rollout_ref.rollout.temperature"),
    "num_epochs": (30, "trainer.total_epochs"),
}
DEFAULTS_SFT = {
    "learning_rate": (1e-5, "optim.lr"),
    "global_batch_size": (256, "data.train_batch_size"),
    "max_seq_length": (1024, "data.max_length"),
}
_SERVER_SIDE_KEYS = ("actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.tensor_model_parallel_size",
                     "actor_rollout_ref.rollout.gpu_memory_utilization", "actor_rollout_ref.actor.fsdp_config",
                     "actor_rollout_ref.ref.fsdp_config", "actor_rollout_ref.actor.strategy", "trainer.n_gpus_per_node",
                     "trainer.nnodes", "actor_rollout_ref.actor.megatron", "actor_rollout_ref.model.enable_gradient_checkpointing",
                     "actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "model.fsdp_config", "ulysses_sequence_parallel_size")


def defaults(algorithm: Algorithm) -> dict[str, tuple[object, str]]:
    return DEFAULTS_SFT if algorithm == "sft" else DEFAULTS_RL


def optimizer_defaults(algorithm: Algorithm) -> dict[str, tuple[float, str]]:
    """verl's FSDP AdamW: the actor's optim config (RL) or the SFT trainer's optim config."""
    if algorithm == "sft":
        return {"beta1": (0.9, "optim.betas[0]"), "beta2": (0.95, "optim.betas[1]"), "eps": (1e-8, "torch AdamW eps"),
                "weight_decay": (0.01, "optim.weight_decay"), "grad_clip_norm": (1.0, "optim.clip_grad")}
    return {"beta1": (0.9, "actor_rollout_ref.actor.optim.betas[0]"),
            "beta2": (0.999, "actor_rollout_ref.actor.optim.betas[1]"), "eps": (1e-8, "torch AdamW eps"),
            "weight_decay": (0.01, "actor_rollout_ref.actor.optim.weight_decay"),
            "grad_clip_norm": (1.0, "actor_rollout_ref.actor.grad_clip")}


def is_verl_command(command: Command) -> bool:
    """verl's own entry points, or a fork's (its package renamed) given verl's config overrides."""
    target = command.module or command.script or ""
    if target.startswith(("verl.", "recipe.")) or "/verl/" in target or ".verl." in target:
        return True
    keys = [a.name for a in command.args if a.kind == "override" and a.name]
    return sum(k.startswith(("actor_rollout_ref.", "algorithm.adv_estimator", "critic.", "data.train_files"))
               for k in keys) >= 2


def looks_like_config(keys: list[str]) -> bool:
    return any(k.startswith(("actor_rollout_ref.", "critic.", "algorithm.adv_estimator", "custom_reward_function."))
               for k in keys) or "model.partial_pretrain" in keys


def reward_module(src: PySource) -> Loc | None:
    """A verl reward function file: a top-level `compute_score(data_source, solution_str, ground_truth, ...)`,
    or EasyR1's (`compute_score(reward_inputs)` reading each input's response and ground_truth)."""
    fn = src.functions.get("compute_score")
    if fn is None or not ({"solution_str", "ground_truth"} <= set(fn.params) or easyr1_reward(src)):
        return None
    return src.at(fn.line)


def easyr1_reward(src: PySource) -> bool:
    """EasyR1's reward module: `compute_score` over dicts with response and ground_truth, its calling
    convention declared by a module-level REWARD_TYPE ("batch" or "sequential")."""
    fn = src.functions.get("compute_score")
    return fn is not None and ("REWARD_TYPE" in src.assigns or (
        "reward_input" in next(iter(fn.params), "") and '"ground_truth"' in src.text))


def detect_python(src: PySource) -> Loc | None:
    return src.imports_module("verl") or reward_module(src)


def analyze(project: Project, ev: Evidence) -> None:
    command = next((c for c in project.commands() if is_verl_command(c)), None)
    config, args = _merged(project, command)
    if command is None and not config:
        _reward_alone(project, ev)
        return
    sft = _is_sft(command, config)
    keys = SFT_KEYS if sft else RL_KEYS
    for f in project.pythons():
        infra_imports(f.python, ev)
    if command is not None:
        ev.construct(command.text, command.loc, "python train.py (the MinT scaffold) with argparse flags")
        if len([c for c in project.commands() if is_verl_command(c)]) > 1:
            ev.warn("MULTIPLE_COMMANDS", "The script launches several verl runs; the first one was migrated.",
                    command.loc)
        if command.world_size is not None:
            ev.extra("world_size", command.world_size)

    for key, setting in keys.items():
        value = config.get(key)
        if value is None and key in args and setting in {"dataset", "base_model"}:
            value = args[key].setting_literal(Level.COMMAND)
            if value is not None:
                ev.warn("UNRESOLVED", f"{key}={value.value}: part of this value comes from the environment "
                        "(or a positional parameter); it is reported as written.", value.loc)
        if value is not None and setting == "lora.rank" and as_number(value.value) == 0:
            ev.construct(f"{key}=0", value.loc, "create_lora_training_client(rank=...)",
                         "0 means full fine-tuning in verl; MinT always trains LoRA")
            continue
        if value is not None and setting in {"lora.alpha", "lora.target_modules"}:
            prefix = key.rsplit(".", 1)[0]
            rank = config.get(prefix + ".lora_rank") or config.get(prefix + ".rank")
            if rank is None or as_number(rank.value) in (None, 0):
                continue  # LoRA options without LoRA: verl ignores them
        ev.setting(setting, value)
    prefix, (alpha, modules) = "model." if sft else "actor_rollout_ref.model.", ("lora_alpha", "target_modules")
    rank = config.get(prefix + "lora_rank")
    if rank is None and config.get("worker.actor.model.lora.rank") is not None:  # EasyR1's layout
        prefix, (alpha, modules) = "worker.actor.model.lora.", ("alpha", "target_modules")
        rank = config.get(prefix + "rank")
    if rank is not None and (as_number(rank.value) or 0) > 0:
        ev.extra("used_lora", rank)
        extra = [k for k in (alpha, modules) if config.get(prefix + k) is not None]
        if extra:
            ev.warn("LORA_OPTIONS", f"LoRA {', '.join(extra)} {'has' if len(extra) == 1 else 'have'} no MinT "
                    "equivalent: MinT takes only the rank "
                    "and trains attention, MLP and unembedding.", rank.loc)
    if sft:
        ev.vote("sft", command.loc if command else _first_loc(project), "verl SFT trainer", 3)
        return
    _rl(project, config, ev, command)


def _merged(project: Project, command: Command | None) -> tuple[dict[str, Value], dict[str, Arg]]:
    config: dict[str, Value] = {}
    for y in project.yamls():
        config.update(y.yaml.values)
    args: dict[str, Arg] = {}
    if command is not None:
        for arg in command.overrides():
            args[arg.name] = arg
            if arg.value is not None:
                config[arg.name] = arg.value
            else:
                config.pop(arg.name, None)
    return _older_names(config), args


# verl's later layout nests the reward under `reward.` (`reward.custom_reward_function.path`); read under
# the names every version's readers here use
_MOVED = {"reward.custom_reward_function.": "custom_reward_function."}


def _older_names(config: dict[str, Value]) -> dict[str, Value]:
    for key in list(config):
        for newer, older in _MOVED.items():
            if key.startswith(newer):
                config.setdefault(older + key.removeprefix(newer), config[key])
    return config


def _is_sft(command: Command | None, config: dict[str, Value]) -> bool:
    if command is not None:
        target = command.module or command.script or ""
        return "sft" in target.rsplit(".", 1)[-1] or "sft_trainer" in target
    return "model.partial_pretrain" in config or (
        not any(k.startswith("actor_rollout_ref.") for k in config) and "optim.lr" in config)


def _first_loc(project: Project) -> Loc:
    return Loc(project.primary.label, 1)


def _rl(project: Project, config: dict[str, Value], ev: Evidence, command: Command | None) -> None:
    where = command.loc if command else _first_loc(project)
    estimator = config.get("algorithm.adv_estimator")
    samples = next((config[k] for k in ("actor_rollout_ref.rollout.n", "actor_rollout_ref.rollout.n_agent",
                                        "worker.rollout.n") if k in config), None)
    grouped = samples is not None and (as_int(samples.value) or 0) > 1
    critic_keys = [k for k in config if k.startswith("critic.")]
    named = None  # the algorithm the launcher's name or its missing critic says, when no estimator is stated
    if estimator is not None:
        algorithm, variant = estimator_algorithm(str(estimator.value), ESTIMATORS)
        if algorithm == "other" and grouped and not critic_keys:
            algorithm = "grpo"  # a fork's own estimator over groups of samples, with no critic: GRPO's family
        ev.vote(algorithm, estimator.loc, f"algorithm.adv_estimator={estimator.value}", 3)
        ev.extra("kind_hint", Value("grpo", estimator.loc))
        ev.set_variant(variant, estimator.loc)
    else:
        ev.vote("ppo", where, "verl's default estimator is gae (PPO with a critic)", 2)
        launcher = PurePosixPath(where.path).stem if command is not None else ""
        named = algorithm_in_name(launcher) if launcher else None
        if named in ("grpo", "reinforce"):  # `train_grpo.sh` of a fork whose own config sets the estimator
            ev.vote(named, where, f"{where.path} names it, and no adv_estimator is stated", 3)
        elif not critic_keys and any(k.startswith("actor_rollout_ref.") for k in config):
            named = "grpo"  # a PPO run always sizes its critic; a fork whose own config picks the estimator
            ev.vote("grpo", where, "no adv_estimator and no critic settings: the fork's own config picks a "
                    "critic-free estimator (GRPO's family)", 3)
        elif any(k.startswith("worker.") for k in config):
            named = "grpo"  # EasyR1's layout (`worker.actor...`): its AlgorithmConfig defaults to grpo
            ev.vote("grpo", where, "no algorithm.adv_estimator in EasyR1's layout (worker.*): its default is grpo", 3)
    enabled = config.get("distillation.enabled")
    if enabled is not None and enabled.value is True:  # verl's on-policy distillation: a teacher's logprobs, in main_ppo
        ev.vote("distillation", enabled.loc, "distillation.enabled=True (on-policy distillation from a teacher)", 4)
        teacher = next((config[k] for k in config if k.startswith("distillation.") and k.endswith(".model_path")), None)
        if teacher is not None and teacher.value:
            teacher_warning(ev, str(teacher.value), teacher.loc)
            ev.construct(f"teacher {teacher.value}", teacher.loc, TEACHER_FLAG)
    target = (command.module or command.script or "") if command else ""
    if target.startswith("recipe."):
        recipe = target.split(".")[1]
        ev.set_variant(recipe, where)
        ev.construct(f"verl recipe {recipe}", where, "the MinT grpo scaffold", f"recipe-specific logic of {recipe} "
                     "(filters, schedules) has to be ported by hand")
    ev.extra("prompts_per_step", config.get("data.train_batch_size") or config.get("data.rollout_batch_size"))
    ev.extra("global_counts_prompts", Value(True, where))  # verl's (and its forks') train batch counts prompts
    ev.extra("mini_batch", config.get("actor_rollout_ref.actor.ppo_mini_batch_size")
             or config.get("worker.actor.global_batch_size"))

    # the clipped objective
    low = config.get("actor_rollout_ref.actor.clip_ratio_low")
    high = config.get("actor_rollout_ref.actor.clip_ratio_high")
    ev.setting("clip_ratio", low or config.get("actor_rollout_ref.actor.clip_ratio"))  # verl's own precedence
    ev.extra("clip_low", low or config.get("actor_rollout_ref.actor.clip_ratio"))
    ev.extra("clip_high", high)
    if high is not None and (low is None or as_number(high.value) != as_number(low.value)):
        ev.set_variant("dapo", high.loc, override=False)
    mode = config.get("actor_rollout_ref.actor.policy_loss.loss_mode")
    if mode is not None and mode.value != "vanilla":
        ev.extra("loss_mode", mode)
        if mode.value in {"gspo", "cispo", "sapo", "gpg", "clip_cov", "kl_cov", "geo_mean"}:
            ev.set_variant(str(mode.value), mode.loc)
    if config.get("algorithm.filter_groups.enable") is not None and config["algorithm.filter_groups.enable"].value:
        ev.construct("algorithm.filter_groups (dynamic sampling)", config["algorithm.filter_groups.enable"].loc,
                     "groups whose rewards are all equal are skipped", "the scaffold drops zero-variance groups")
        ev.set_variant("dapo", config["algorithm.filter_groups.enable"].loc, override=False)
    norm = config.get("algorithm.norm_adv_by_std_in_grpo")
    if norm is not None:
        ev.construct(f"algorithm.norm_adv_by_std_in_grpo={norm.value}", norm.loc,
                     "advantages = reward - group mean" + (" (÷ group std)" if norm.value else ""))

    # KL terms
    kl_loss, kl_reward = config.get("actor_rollout_ref.actor.use_kl_loss"), config.get("algorithm.use_kl_in_reward")
    if kl_loss is not None and kl_loss.value is True:
        ev.setting("kl_coef", config.get("actor_rollout_ref.actor.kl_loss_coef"))
        _kl_warning(ev, "actor_rollout_ref.actor.use_kl_loss=True", config.get("actor_rollout_ref.actor.kl_loss_coef")
                    or kl_loss)
    in_reward = kl_reward is not None and kl_reward.value is True
    if not in_reward and (kl_loss is None or kl_loss.value is not True) and _before_kl_in_reward(config):
        in_reward = config.get("algorithm.kl_ctrl.kl_coef") is not None
    if in_reward:
        ev.setting("kl_coef", config.get("algorithm.kl_ctrl.kl_coef"))
        _kl_warning(ev, "algorithm.use_kl_in_reward=True", config.get("algorithm.kl_ctrl.kl_coef") or kl_reward)
    _easyr1_kl(config, ev)

    # critic / GAE
    if (estimator is None or estimator.value == "gae" or critic_keys) and named not in ("grpo", "reinforce"):
        loc = estimator.loc if estimator is not None else (config[critic_keys[0]].loc if critic_keys else where)
        ev.warn("CRITIC_GAE", "GAE advantages need a critic (value model), and MinT has none. The migration uses a "
                "group baseline instead: several samples per prompt (rollout.n), advantage = reward - group mean "
                "(GRPO), with the ppo clipped loss. Set rollout.n > 1 worth of samples with --group-size.", loc)
    reward_model = config.get("reward_model.enable")
    if reward_model is not None and reward_model.value is True:
        ev.warn("REWARD_MODEL_SCORING", "reward_model.enable=True scores rollouts with a learned reward model; MinT "
                "serves no reward-model head. Score in Python, or call a MinT sampler as a judge.", reward_model.loc)
    agg = config.get("actor_rollout_ref.actor.loss_agg_mode")
    ev.warn("LOSS_AGGREGATION", "MinT's losses sum over tokens; verl averages them (loss_agg_mode="
            f"{agg.value if agg else 'token-mean'}). Scale the advantages by 1/len(response) to keep the same "
            "per-token weighting.", agg.loc if agg else None)
    entropy = config.get("actor_rollout_ref.actor.entropy_coeff")
    if entropy is not None and (as_number(entropy.value) or 0) > 0:
        ev.warn("ENTROPY_BONUS", f"entropy_coeff={entropy.value}: MinT's built-in losses have no entropy bonus; "
                "drop it (or write a custom loss).", entropy.loc)
    epochs = config.get("actor_rollout_ref.actor.ppo_epochs")
    if epochs is not None and (as_number(epochs.value) or 1) > 1:
        ev.warn("MULTI_UPDATE", f"ppo_epochs={epochs.value}: several updates per batch. On MinT repeat "
                "forward_backward + optim_step over the same Datums, or keep one update per batch.", epochs.loc)
    for key in _SERVER_SIDE_KEYS:
        hits = [k for k in config if k == key or k.startswith(key + ".")]
        if hits:
            server_side(ev, f"{hits[0]}={config[hits[0]].value}", config[hits[0]].loc)
            break
    _reward_function(project, config, ev, command)


def _easyr1_kl(config: dict[str, Value], ev: Evidence) -> None:
    """EasyR1's KL: `algorithm.use_kl_loss` puts it in the loss with `algorithm.kl_coef` (early
    versions: `worker.actor.kl_loss_coef`), else in the reward; `algorithm.disable_kl` turns it off."""
    disabled = config.get("algorithm.disable_kl")
    if not any(k.startswith("worker.") for k in config) or (disabled is not None and disabled.value is True):
        return
    kl_loss = config.get("algorithm.use_kl_loss") or config.get("worker.actor.use_kl_loss")
    coef = (config.get("worker.actor.kl_loss_coef") if kl_loss is not None and kl_loss.value is True else None) \
        or config.get("algorithm.kl_coef")
    if coef is not None:
        ev.setting("kl_coef", coef)
        _kl_warning(ev, "algorithm.use_kl_loss=True" if kl_loss is not None and kl_loss.value is True
                    else "algorithm.kl_coef", coef)


def _reward_alone(project: Project, ev: Evidence) -> None:
    """Only a reward module: report the reward function, and that there is no trainer to migrate."""
    for f in project.pythons():
        where = reward_module(f.python)
        if where is None:
            continue
        ev.setting("reward_functions", Value(["compute_score"], where, Level.CODE))
        ev.extra("kind_hint", Value("grpo", where))
        ev.vote("other", where, "a verl reward function (compute_score) with no trainer config or launch command", 0)
        ev.construct("compute_score(data_source, solution_str, ground_truth, extra_info)", where,
                     "reward_fn(prompt, completion, row) -> float in train.py",
                     "call it with the decoded completion as solution_str and the row's answer as ground_truth")
        ev.warn("NO_TRAINER", f"{f.label} is a verl reward function with no trainer: the run that uses it (its launch "
                "script or config, with custom_reward_function.path) says the algorithm and the settings. Pass "
                "that as the source and this file with --config; the train.py here is the GRPO scaffold with this "
                "reward.", where)
        return


def _kl_warning(ev: Evidence, what: str, value: Value) -> None:
    ev.warn("KL_REFERENCE", f"{what}: MinT's built-in losses have no KL term. Fold the KL penalty into the reward "
            "(reward - coef * (logp - logp_ref), reference logprobs from a base-model sampler's compute_logprobs), "
            "or drop it.", value.loc)


def _before_kl_in_reward(config: dict[str, Value]) -> bool:
    """verl before `algorithm.use_kl_in_reward` existed (early 2025), and the forks copied from it,
    put the KL penalty in the reward whenever it is not in the loss. Their launches say so by keys
    that verl has since renamed or dropped: micro batch sizes not yet per GPU, `data.val_batch_size`,
    `fsdp_config.grad_offload`."""
    if any(k.endswith("use_kl_in_reward") for k in config):
        return False
    return any(k.endswith((".ppo_micro_batch_size", ".log_prob_micro_batch_size", "data.val_batch_size",
                           "fsdp_config.grad_offload")) for k in config)


def _reward_function(project: Project, config: dict[str, Value], ev: Evidence, command: Command | None = None) -> None:
    # `./reward_function/math.py:compute_score`; early versions name a built-in scorer (compute_score=math)
    # (ZeroSearch-style forks name theirs `trainer.reward_function=f1`)
    named = config.get("worker.reward.reward_function") or config.get("worker.reward.compute_score") \
        or config.get("trainer.reward_function")
    if named is not None and isinstance(named.value, str):
        ev.setting("reward_functions", named.with_value([named.value]))
    path = config.get("custom_reward_function.path")
    if path is None:
        return
    name = config.get("custom_reward_function.name")
    fn = str(name.value) if name is not None else "compute_score"
    # `path:name` is made of the two keys: cited where the path key is written on the command line
    # (not where a variable it reads was set), else where the file is named
    flag = next((a for a in (command.overrides() if command is not None else [])
                 if a.name.endswith("custom_reward_function.path") and a.at is not None), None)
    ev.setting("reward_functions", Value([f"{path.value}:{fn}"], flag.at if flag else path.loc, path.level))
    reward_file = _reward_file(project, str(path.value))
    if reward_file is None or reward_file.python is None:
        ev.construct(f"custom_reward_function {path.value}:{fn}", path.loc, "reward_fn in train.py",
                     "pass the reward module with --config to check it")
        return
    info = reward_file.python.functions.get(fn)
    if info is None:
        ev.warn("REWARD_FN_MISSING", f"{reward_file.label} defines no function {fn}; verl would fail to load it.",
                path.loc)
        return
    ev.construct(f"custom_reward_function {fn}(data_source, solution_str, ground_truth, extra_info)", reward_file.python.at(info.line),
                 "reward_fn(prompt, completion, row) -> float in train.py",
                 "call it with the decoded completion as solution_str and the row's answer as ground_truth")


def _reward_file(project: Project, written: str) -> InputFile | None:
    found = project.find(written)
    if found is not None:
        return found
    for base in {f.path.parent for f in project.files}:
        candidate = base / written
        if candidate.is_file() and candidate.suffix == ".py":
            return add_file(project, candidate, auto=True)
    return None

# --- the task: data, reward and schedule (the planner calls read_task through the registry) ----------


def _hydra(project: Project) -> dict[str, Value]:
    """verl's config: the YAML files, then the launch command's key=value overrides on top."""
    config: dict[str, Value] = {}
    for y in project.yamls():
        config.update(y.yaml.values)
    command = next((c for c in project.commands() if is_verl_command(c)), None)
    for arg in command.overrides() if command is not None else []:
        if arg.value is not None:
            config[arg.name] = arg.value
    return _older_names(config)


_VERL_AGG = {"token-mean": "token_mean", "seq-mean-token-mean": "sequence_mean", "seq-mean-token-sum": "sum",
             "seq-mean-token-sum-norm": "constant"}


def read_task(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
          task: Task) -> None:
    c = _hydra(project)

    def get(key: str):
        return c[key].value if key in c else None

    data = None
    if settings.dataset is not None:
        data = task.data = data_source(project, settings.dataset.value, settings.dataset.source)
    if kind == "sft":
        if data is not None:
            prompt_key, response_key = get("data.prompt_key") or "prompt", get("data.response_key") or "response"
            prompt_sub, response_sub = get("data.prompt_dict_keys"), get("data.response_dict_keys")
            prompt_sub = prompt_sub[0] if isinstance(prompt_sub, list) and prompt_sub else None
            response_sub = response_sub[0] if isinstance(response_sub, list) and response_sub else None
            data.fields = {"prompt": f"{prompt_key}.{prompt_sub}" if prompt_sub else str(prompt_key),
                           "completion": f"{response_key}.{response_sub}" if response_sub else str(response_key)}
            data.chat_template, data.format = True, "prompt_completion"
            data.notes.append("verl's SFT dataset puts the prompt in a user message (chat template) and appends the "
                              "response and eos")
        schedule_from(task, str(get("optim.warmup_style") or get("optim.lr_scheduler") or "cosine"),
                       why="verl's fsdp_sft_trainer: cosine after a warmup of optim.warmup_steps_ratio",
                       warmup_ratio=get("optim.warmup_steps_ratio"))
        normalize_loss(task, "token_mean", "verl's SFT loss averages over the batch's response tokens")
        return
    if data is not None:
        prompt_key = get("data.prompt_key") or "prompt"
        # verl forks name the answer column (EasyR1's data.answer_key); verl keeps it in reward_model
        data.fields = {"prompt": str(prompt_key), "answer": str(get("data.answer_key") or "reward_model.ground_truth")}
        data.format = "prompt_answer"
        data.max_samples = as_int(get("data.train_max_samples")) if (as_int(get("data.train_max_samples")) or 0) > 0 \
            else None
        data.notes.append("verl's RL parquet: a chat `prompt` column (messages), the answer in "
                          "reward_model.ground_truth, data_source and extra_info for the reward")
    optim = "actor_rollout_ref.actor.optim."
    style = get(optim + "warmup_style") or get(optim + "lr_scheduler_type") or "constant"
    steps = get(optim + "lr_warmup_steps")
    schedule_from(task, str(style), steps if (as_int(steps) or -1) > 0 else None,
                   get(optim + "lr_warmup_steps_ratio"), get(optim + "min_lr_ratio"),
                   why="actor_rollout_ref.actor.optim (verl's default: constant, no warmup)")
    agg = get("actor_rollout_ref.actor.loss_agg_mode") or "token-mean"
    normalize_loss(task, _VERL_AGG.get(str(agg), "token_mean"), f"loss_agg_mode={agg}")
    norm = c.get("algorithm.norm_adv_by_std_in_grpo")
    task.schedule.normalize_advantages = norm is None or norm.value is not False
    prompts, mini = as_int(get("data.train_batch_size")), as_int(get("actor_rollout_ref.actor.ppo_mini_batch_size"))
    updates(task, prompts, mini, f"data.train_batch_size {prompts} / ppo_mini_batch_size {mini}",
             as_int(get("actor_rollout_ref.actor.ppo_epochs")), "ppo_epochs")
    if str(get("actor_rollout_ref.rollout.mode") or "") == "async":
        task.throughput = f"actor_rollout_ref.rollout.mode=async ({c['actor_rollout_ref.rollout.mode'].loc})"
    task.reward = _verl_reward(project, c)


def _easyr1_reward(project: Project, spec: Value) -> RewardPlan:
    """EasyR1's `worker.reward.reward_function: ./reward_function/math.py:compute_score`."""
    path, _, fn = str(spec.value).partition(":")
    fn = fn or "compute_score"
    plan = RewardPlan(style="easyr1", status="placeholder", functions=[RewardFunction(name=fn)], source=str(spec.loc))
    return _with_reward_file(project, plan, path, fn, "worker.reward.reward_function")


def _with_reward_file(project: Project, plan: RewardPlan, path: str, fn: str, named_by: str) -> RewardPlan:
    """The plan with the user's reward module, when `path` is among the inputs or beside them."""
    found = reward_file(project, path)
    if found is None or found.python is None:
        plan.reason = f"{path} was not given and is not beside the inputs: pass it with --config"
    elif fn not in found.python.functions:
        plan.reason = f"{found.label} defines no {fn}"
    else:
        plan.status, plan.file = "user", str(found.path.resolve())
        plan.reason = f"{fn} from {found.label} ({named_by})"
    return plan


def _verl_reward(project: Project, c: dict[str, Value]) -> RewardPlan:
    path = c.get("custom_reward_function.path")
    if c.get("reward_model.enable") is not None and c["reward_model.enable"].value is True:
        return RewardPlan(style="verl", status="placeholder", source=str(c["reward_model.enable"].loc),
                          reason="reward_model.enable=True scores with a learned reward model, which MinT does not "
                                 "serve: write a Python reward (or call a MinT sampler as a judge)")
    easyr1 = c.get("worker.reward.reward_function")
    if easyr1 is not None and isinstance(easyr1.value, str):
        return _easyr1_reward(project, easyr1)
    given = [f for f in project.pythons() if "compute_score" in f.python.functions]
    if path is None and given:  # the reward module was given itself (with --config, or alone)
        style = "easyr1" if any(easyr1_reward(f.python) for f in given) else "verl"
        return python_reward(project, ["compute_score"], [1.0], style, None)
    if path is None:
        return RewardPlan(style="verl", status="placeholder",
                          reason="no custom_reward_function: verl scores with its built-in scorer for each row's "
                                 "data_source (verl.utils.reward_score, e.g. gsm8k, math), part of the verl package a "
                                 "MinT machine does not have; pass --reward FILE:compute_score")
    name = c.get("custom_reward_function.name")
    fn = str(name.value) if name is not None else "compute_score"
    kwargs = c.get("custom_reward_function.reward_kwargs")
    plan = RewardPlan(style="verl", status="placeholder", functions=[RewardFunction(name=fn)], source=str(path.loc),
                      kwargs=dict(kwargs.value) if kwargs is not None and isinstance(kwargs.value, dict) else {})
    return _with_reward_file(project, plan, str(path.value), fn, "custom_reward_function")


ANALYZER = Analyzer(
    read_task=read_task,
    name="verl",
    signals="`python -m verl.trainer.main_ppo` with hydra overrides (`actor_rollout_ref.rollout.n=5`), "
            "`ppo_trainer.yaml`, `fsdp_sft_trainer`, a `compute_score` reward module",
    analyze=analyze,
    defaults=defaults,
    optimizer_defaults=optimizer_defaults,
    reserved_names=("kl_loss_coef", "kl_ctrl.kl_coef"),  # the reader knows when the KL term is on
    imports=("verl",),
    detect_python=detect_python,
    detect_command=lambda command, script: is_verl_command(command),
    detect_config=looks_like_config,
)
