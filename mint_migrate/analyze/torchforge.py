"""torchforge (meta-pytorch): GRPO/SFT app YAML configs and the actor/service Python around them.

Both spellings of the config are read: the current one (`policy.engine_args`, `policy.sampling_params`,
`local_batch_size`) and the October 2025 one (`policy.engine_config`, `policy.sampling_config`,
`batch_size`). `${key}` interpolations are followed to the line that sets the value.
"""

from mint_migrate.analyze.evidence import Evidence, Level, Loc, Value
from mint_migrate.analyze.inputs import Project
from mint_migrate.analyze.pycommon import function_names, infra_imports, server_side
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.registry import Analyzer
from mint_migrate.analyze.scalars import as_int, as_number
from mint_migrate.analyze.task import Task, data_source, normalize_loss, python_reward, schedule_from, string_constant
from mint_migrate.plan import Algorithm, RewardPlan, ScaffoldKind, Settings
from mint_migrate.pyindex import dotted_name

# Order matters: for the same setting, a later key wins (the one the run really uses).
KEYS = [
    ("model_name", "base_model"), ("trainer.model.hf_assets_path", "base_model"),
    ("policy.engine_config.model", "base_model"), ("policy.engine_args.model", "base_model"), ("model", "base_model"),
    ("dataset.path", "dataset"), ("dataset.dataset_name", "dataset"),
    ("optimizer.lr", "learning_rate"), ("trainer.optimizer.lr", "learning_rate"),
    ("batch_size", "per_device_batch_size"), ("training.local_batch_size", "per_device_batch_size"),
    ("trainer.training.local_batch_size", "per_device_batch_size"), ("local_batch_size", "per_device_batch_size"),
    ("training.steps", "max_steps"), ("trainer.training.steps", "max_steps"),
    ("training.seq_len", "max_seq_length"), ("trainer.training.seq_len", "max_seq_length"),
    ("max_req_tokens", "max_prompt_length"),
    ("max_res_tokens", "max_response_length"), ("policy.sampling_config.max_tokens", "max_response_length"),
    ("policy.sampling_params.max_tokens", "max_response_length"),
    ("group_size", "num_generations"), ("policy.sampling_config.n", "num_generations"),
    ("policy.sampling_params.n", "num_generations"),
    ("policy.sampling_config.temperature", "temperature"), ("policy.sampling_params.temperature", "temperature"),
]
_SERVICE_BLOCKS = ("services.", "actors.", "processes.", "parallelism.", "trainer.parallelism.", "ref_model.parallelism.",
                   "policy.engine_args.tensor_parallel_size", "policy.engine_config.tensor_parallel_size")
_ACTORS = {
    "Generator": "SamplingClient (save_weights_and_get_sampling_client() after each optim_step)",
    "Policy": "SamplingClient (save_weights_and_get_sampling_client() after each optim_step)",
    "TitanTrainer": "TrainingClient.forward_backward + optim_step(AdamParams)",
    "RLTrainer": "TrainingClient.forward_backward + optim_step(AdamParams)",
    "ReferenceModel": "a base-model sampler's compute_logprobs (only if a KL term is kept)",
    "ReplayBuffer": "a plain Python list of Datums",
    "ComputeAdvantages": "advantages = (reward - group mean) / (group std + eps), client-side",
    "RewardActor": "reward_fn(prompt, completion, row) -> float in train.py",
    "DatasetActor": "JSONL rows passed with --data",
}


def looks_like_config(keys: list[str]) -> bool:
    return any(k.startswith(("policy.engine_args", "policy.engine_config", "policy.sampling_params",
                             "policy.sampling_config", "replay_buffer.", "services.", "trainer.optimizer."))
               for k in keys)


def defaults(algorithm: Algorithm) -> dict[str, tuple[object, str]]:
    return {"kl_coef": (0.1, "SimpleGRPOLoss(beta=0.1)")} if algorithm == "grpo" else {}


def analyze(project: Project, ev: Evidence) -> None:
    config: dict[str, Value] = {}
    for y in project.yamls():
        config.update(y.yaml.values)
    for key, setting in KEYS:
        value = config.get(key)
        if value is not None and isinstance(value.value, str) and "${" in value.value:
            continue
        ev.setting(setting, value)
    assets = config.get("model.hf_assets_path") or config.get("trainer.model.hf_assets_path")
    if assets is not None and str(assets.value).startswith("hf://") and not any(
            k.startswith(("policy.", "generator.")) for k in config):  # SFT: the hub weights the trainer loads
        ev.setting("base_model", assets)

    key = next((k for k in ("training.datasets", "dataset.datasets", "training.dataset") if config.get(k)), None)
    datasets = config[key] if key is not None else None
    if datasets is not None and isinstance(datasets.value, list):
        paths = [d["path"] for d in datasets.value if isinstance(d, dict) and isinstance(d.get("path"), str)]
        if paths:
            line = next((y.yaml.item_lines[f"{key}.0.path"] for y in project.yamls()
                         if y.yaml.label == datasets.loc.path and f"{key}.0.path" in y.yaml.item_lines), None)
            where = datasets if line is None else Value(datasets.value, Loc(datasets.loc.path, line), datasets.level)
            ev.setting("dataset", where.with_value(paths if len(paths) > 1 else paths[0]))

    rl = any(k in config for k in ("group_size", "policy.sampling_params.n", "policy.sampling_config.n"))
    first = next(iter(config.values())).loc if config else Loc(project.primary.label, 1)
    if rl:
        ev.vote("grpo", first, "torchforge GRPO config (group_size / policy.sampling_params)", 2)
    elif config:
        ev.vote("sft", first, "torchforge config without a policy or groups (SFT app)", 1)
    for key in config:
        if key.startswith(_SERVICE_BLOCKS):
            server_side(ev, f"{key.rsplit('.', 1)[0]} (Monarch services, procs, GPUs, parallelism)", config[key].loc)
            break
    if any(k.startswith("ref_model.") for k in config):
        loc = next(config[k].loc for k in config if k.startswith("ref_model."))
        ev.warn("KL_REFERENCE", "A reference model feeds the KL term of SimpleGRPOLoss. MinT's built-in losses have "
                "no KL term: fold the KL into the reward (reference logprobs from a base-model sampler's "
                "compute_logprobs), or drop it.", loc)
    for key in ("off_by_n", "replay_buffer.max_policy_age"):
        if key in config:
            ev.construct(f"{key}={config[key].value}", config[key].loc, "refresh the sampler every step",
                         "the scaffold samples from the latest weights; importance sampling corrects small staleness")
            break
    if "trainer.training.max_norm" in config:
        v = config["trainer.training.max_norm"]
        ev.construct(f"trainer.training.max_norm={v.value}", v.loc, f"AdamParams(grad_clip_norm={v.value})")

    for f in project.pythons():
        src = f.python
        infra_imports(src, ev)
        for call in src.calls:
            owner = call.qualname.rsplit(".", 2)[-2] if "." in call.qualname else call.name
            if owner in _ACTORS and call.name in {"options", "as_service", "as_actor"} or call.name in _ACTORS:
                name = owner if owner in _ACTORS else call.name
                ev.construct(f"{name} (torchforge actor/service)", call.loc, _ACTORS[name])
                if name in {"Generator", "Policy"}:
                    server_side(ev, "vLLM Generator service", call.loc)
            if call.name in {"SimpleGRPOLoss", "GRPOLoss"}:
                ev.vote("grpo", call.loc, f"{call.name}(...)", 3)
                beta = call.kwarg("beta") or src.field_value(call.name, "beta", parsed=False)
                ev.setting("kl_coef", beta)
                ev.construct(f"{call.name}(beta=...)", call.loc, "forward_backward(data, 'importance_sampling')",
                             "per-token mean in forge, sum on MinT: scale advantages by 1/len for parity")
                if beta is None or (as_number(beta.value) or 0) > 0:
                    ev.warn("KL_REFERENCE", f"{call.name} adds beta * KL(policy || reference) to the loss; MinT's "
                            "losses have no KL term. Fold it into the reward, or drop it.", call.loc)
            elif call.name == "ReinforceLoss":
                ev.vote("reinforce", call.loc, "ReinforceLoss(...)", 3)
            if call.name == "as_service" and call.kwarg_node("reward_functions") is not None:
                names = function_names(call.kwarg_node("reward_functions"), src, call.scope)
                if names:
                    ev.setting("reward_functions", Value(names, src.loc(call.kwarg_node("reward_functions"))))
        _actor_arguments(src, ev)
        for fn in src.functions.values():  # a GRPO loss written in the app: `def simple_grpo_loss(..., beta=0.1)`
            if "grpo" in fn.name.lower() and "loss" in fn.name.lower() and "beta" in fn.params \
                    and fn.params["beta"].default is not None and ev.best("kl_coef") is None:
                default = src.evaluate(fn.params["beta"].default, fn.node)
                ev.setting("kl_coef", None if default is None else Value(default.value, default.loc, Level.DEFAULT))
        if src.imports_module("forge.actors.trainer") and not ev.votes:
            ev.vote("sft", src.imports_module("forge.actors.trainer"), "a torchforge trainer without GRPO", 0)
        for module in ("apps.sft", "forge.apps.sft"):
            loc = src.imports_module(module)
            if loc:
                ev.vote("sft", loc, f"imports {module}", 2)
    if rl or any(v.algorithm == "grpo" for v in ev.votes):
        ev.warn("LOSS_AGGREGATION", "torchforge's GRPO loss averages per token, then over the batch; MinT's losses "
                "sum over tokens. Scale the advantages by 1/len(response) to keep the same weighting.", None)
    if not ev.votes:
        ev.vote("other", None, "no torchforge GRPO or SFT construct found", 0)


# What an actor's own arguments mean, for the values an app writes in Python (the August 2025 apps:
# `spawn_service(ServiceConfig(...), Trainer, learning_rate=1e-5, beta=0.1)`).
_ACTOR_KWARGS = {
    "learning_rate": "learning_rate", "lr": "learning_rate", "beta": "kl_coef", "model_name": "base_model",
    "batch_size": "per_device_batch_size", "local_batch_size": "per_device_batch_size",
}
_CONFIG_KWARGS = {  # the config objects built inline: WorkerConfig(model=...), SamplingOverrides(num_samples=...)
    "model": "base_model", "num_samples": "num_generations", "n": "num_generations",
    "max_tokens": "max_response_length", "temperature": "temperature",
}


def _actor_arguments(src: PySource, ev: Evidence) -> None:
    for call in src.calls:
        if call.name == "spawn_service" and call.arg_node(1) is not None:
            actor = (dotted_name(call.arg_node(1)) or "").rsplit(".", 1)[-1]
            for keyword, setting in _ACTOR_KWARGS.items():
                ev.setting(setting, call.kwarg(keyword))
            if actor == "DatasetActor":
                ev.setting("dataset", call.arg(2) or call.kwarg("path"))
            if actor in {"Trainer", "RLTrainer", "TitanTrainer"} and call.kwarg_node("beta") is not None:
                ev.vote("grpo", call.loc, f"a {actor} with a KL beta beside a policy's samples", 1)
            if call.kwarg_node("reward_functions") is not None:
                names = function_names(call.kwarg_node("reward_functions"), src, call.scope)
                if names:
                    ev.setting("reward_functions", Value(names, src.loc(call.kwarg_node("reward_functions"))))
        elif call.name in {"WorkerConfig", "SamplingOverrides", "SamplingConfig", "EngineConfig"}:
            for keyword, setting in _CONFIG_KWARGS.items():
                ev.setting(setting, call.kwarg(keyword))
    groups = [c for c in src.calls if c.name in {"SamplingOverrides", "SamplingConfig"}]
    if groups and any(c.name == "spawn_service" for c in src.calls) and "ComputeAdvantages" in src.text:
        ev.vote("grpo", groups[0].loc, "a policy's sample groups scored by ComputeAdvantages (torchforge GRPO app)", 2)


def is_forge_command(command, script) -> bool:
    target = command.module or command.script or ""
    return target.startswith(("apps.grpo", "apps.sft", "forge.")) or "/apps/grpo/" in target or "/apps/sft/" in target

# --- the task: data, reward and schedule (the planner calls read_task through the registry) ----------


def read_task(project: Project, ev: Evidence, algorithm: Algorithm, kind: ScaffoldKind, settings: Settings,
                task: Task) -> None:
    config: dict[str, Value] = {}
    for y in project.yamls():
        config.update(y.yaml.values)

    def get(key: str):
        return config[key].value if key in config else None

    if settings.dataset is not None:
        data = task.data = data_source(project, settings.dataset.value, settings.dataset.source)
        if data is not None and kind == "grpo":
            data.subset = str(get("dataset.revision")) if get("dataset.revision") else None
            data.split = str(get("dataset.data_split") or "train")
            data.fields, data.chat_template, data.answer_after = {"prompt": "question", "answer": "answer"}, True, "#### "
            data.system_prompt = string_constant(project, "system_prompt")
            data.notes.append("torchforge's GSM8K transform: the question as a user message through the chat "
                              "template, the target after '#### '")
    warmup = get("trainer.lr_scheduler.warmup_steps") or get("lr_scheduler.warmup_steps")
    schedule_from(task, "linear", warmup, why="torchtitan's LR scheduler: linear warmup, then linear decay to 0")
    if kind == "grpo":
        normalize_loss(task, "sequence_mean", "simple_grpo_loss averages each response over its tokens, then the batch")
        task.schedule.normalize_advantages = True
        task.schedule.reasons.append("advantages divided by the group's std (ComputeAdvantages)")
        lag = config.get("off_by_n") or config.get("replay_buffer.max_policy_age")
        if lag is not None and (as_int(lag.value) or 0) >= 1:
            task.throughput = f"off-policy rollouts (max_policy_age {lag.value}, {lag.loc}): sampling runs while " \
                              "the trainer trains"
        task.reward = _torchforge_reward(project, settings)
    else:
        normalize_loss(task, "token_mean", "the SFT app's cross-entropy averages over the batch's tokens")


def _torchforge_reward(project: Project, settings: Settings) -> RewardPlan:
    names = settings.reward_functions.value if settings.reward_functions is not None else []
    where = settings.reward_functions.source if settings.reward_functions is not None else None
    if not names:
        return RewardPlan(style="torchforge", status="placeholder",
                          reason="no reward_functions found: pass your reward class with --reward FILE:NAME")
    weights = [1.0 / len(names)] * len(names)  # RewardActor averages its functions
    return python_reward(project, names, weights, "torchforge", where)


ANALYZER = Analyzer(
    read_task=read_task,
    name="torchforge",
    signals="`apps.grpo.main` / `apps.sft.main --config *.yaml`, `Generator`/`Policy`, `TitanTrainer`, `Episode`, `ReplayBuffer`, "
            "Monarch `.route()` / `.fanout()`",
    analyze=analyze,
    defaults=defaults,
    imports=("forge", "monarch", "apps.grpo", "apps.sft"),
    detect_command=is_forge_command,
    detect_config=looks_like_config,
)
