"""The MinT side of the plan: which scaffold, which loss, which learning rate, and why.

Every choice carries its reason. Values the inputs state are kept; values they leave out come
from the source framework's default (said so) or from MinT / Tinker guidance (said so too).
"""

import re

from mint_migrate.analyze.evidence import Evidence
from mint_migrate.analyze.scalars import as_int, as_number
from mint_migrate.plan import Algorithm, MintChoices, PlanWarning, ScaffoldKind, Setting, Settings
from mint_migrate.sdk_facts import (
    DEFAULT_BASE_MODEL,
    DEFAULT_LORA_RANK,
    LORA_LR_FACTOR,
    LORA_LR_FLOOR,
    PPO_CLIP,
    RL_LOSSES,
)

KIND: dict[Algorithm, ScaffoldKind] = {
    "sft": "sft", "dpo": "dpo", "grpo": "grpo", "ppo": "grpo", "reinforce": "grpo", "kto": "dpo", "orpo": "dpo",
    "reward_model": "dpo", "distillation": "distill", "other": "sft",
}
DEFAULT_MODEL = DEFAULT_BASE_MODEL
# The LoRA learning-rate policy and its evidence: mint_facts (read through sdk_facts).
LORA_FACTOR = LORA_LR_FACTOR
# MinT / Tinker guidance when the source says nothing and its framework has no default.
_LR_GUIDANCE = {
    "sft": (2e-4, "MinT guidance for LoRA SFT is 1e-4 to 5e-4"),
    "dpo": (1e-5, "tinker-cookbook's DPO default (LoRA)"),
    "grpo": (4e-5, "tinker-cookbook rl_loop default (LoRA); MinT guidance for RL is 1e-5 to 1e-4"),
    "distill": (1e-4, "MinT guidance for LoRA training is 1e-4 to 5e-4 (SFT-like objective)"),
}
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+\Z")


def _number(setting: Setting | None, defaults: dict[str, Setting], key: str) -> tuple[float | None, str | None, bool]:
    """(value, source, read) from the settings, else from the framework defaults."""
    if setting is not None and as_number(setting.value) is not None:
        return as_number(setting.value), setting.source, True
    if key in defaults and as_number(defaults[key].value) is not None:
        return as_number(defaults[key].value), defaults[key].source, False
    return None, None, False


def choose(framework: str, algorithm: Algorithm, variant: str | None, settings: Settings,
           defaults: dict[str, Setting], ev: Evidence) -> tuple[MintChoices, list[PlanWarning]]:
    kind = KIND[algorithm]
    hint = ev.extras.get("kind_hint")
    if algorithm == "other" and hint is not None and hint.value in KIND.values():
        kind = hint.value  # e.g. an RL trainer with an estimator we do not know: still an RL scaffold
    warnings: list[PlanWarning] = []
    reasons: list[str] = []
    if algorithm != kind and algorithm not in {"distillation"}:
        what = {"grpo": "the GRPO scaffold (group sampling + group-centred advantages)",
                "dpo": "the DPO scaffold (pairwise forward_backward_custom)", "sft": "the SFT scaffold",
                "distill": "the distillation scaffold"}[kind]
        why = {
            "ppo": "PPO's critic cannot move (MinT has no value model); a group baseline replaces GAE",
            "reinforce": "REINFORCE-style baselines (RLOO, REINFORCE++, ReMax) are group advantages computed "
                         "client-side; edit the advantage line for leave-one-out",
            "kto": "KTO needs a custom loss; the DPO scaffold's forward_backward_custom is where it goes",
            "orpo": "ORPO needs a custom loss (odds ratio + NLL); the DPO scaffold's forward_backward_custom is where "
                    "it goes",
            "reward_model": "a reward-model head cannot be trained on MinT; a pairwise loss on sequence logprobs is "
                            "the closest thing",
            "other": "the algorithm could not be identified from the inputs; this scaffold is the starting point",
        }.get(algorithm, "")
        vote = ev.algorithm()
        warnings.append(PlanWarning(code="ALGORITHM_MAPPED", message=f"{algorithm} runs on {what}: {why}.",
                                    source=str(vote.loc) if vote is not None and vote.loc else None))
    vote = ev.algorithm()
    if vote is not None:
        reasons.append(f"algorithm {algorithm}" + (f" ({variant})" if variant else "") + f": {vote.why}"
                       + (f" at {vote.loc}" if vote.loc else ""))

    base_model, model_reason = _base_model(settings, warnings)
    loss_fn, loss_config, loss_reason = _loss(kind, algorithm, variant, settings, defaults, ev, warnings)
    lr, lr_reason = _learning_rate(framework, kind, settings, defaults, ev)
    rank, rank_reason = _rank(settings)
    reasons += [model_reason, loss_reason, rank_reason]

    choices = MintChoices(kind=kind, loss_fn=loss_fn, loss_fn_config=loss_config, base_model=base_model,
                          learning_rate=lr, learning_rate_reason=lr_reason, lora_rank=rank, reasons=reasons)
    if kind == "grpo":
        _group_shape(choices, settings, defaults, ev)
    else:
        _batch_shape(choices, settings, defaults, ev)
    response = settings.max_response_length
    if response is not None and as_int(response.value):
        choices.max_tokens = as_int(response.value)
        reasons.append(f"max_tokens {choices.max_tokens} (SamplingParams.max_tokens) from {response.source}")
    seq = settings.max_seq_length
    if seq is not None and (as_int(seq.value) or 0) >= 8:
        choices.max_length = as_int(seq.value)
        reasons.append(f"max_length {choices.max_length} from {seq.source}")
    elif settings.max_prompt_length is not None and response is not None and \
            as_int(settings.max_prompt_length.value) and as_int(response.value):
        choices.max_length = as_int(settings.max_prompt_length.value) + as_int(response.value)
        reasons.append(f"max_length {choices.max_length} = max_prompt_length + max_response_length")
    temperature, t_source, _ = _number(settings.temperature, defaults, "temperature")
    if temperature is not None and temperature <= 0 and kind in {"grpo", "distill"}:
        reasons.append(f"temperature: the source samples greedily ({t_source}); RL needs sampling, so the "
                       "scaffold's default temperature stays")
    elif temperature is not None and kind in {"grpo", "distill"}:
        choices.temperature = float(temperature)
        reasons.append(f"temperature {temperature:g} from {t_source}")
    if kind == "dpo":
        beta, b_source, _ = _number(settings.beta, defaults, "beta")
        if beta is not None and beta > 0:
            choices.beta = float(beta)
            reasons.append(f"DPO beta {beta:g} from {b_source}")
    steps = settings.max_steps
    if steps is not None and (as_int(steps.value) or 0) > 0:
        choices.steps = as_int(steps.value)
        reasons.append(f"{choices.steps} steps from {steps.source}")
    return choices, warnings


def _base_model(settings: Settings, warnings: list[PlanWarning]) -> tuple[str, str]:
    model = settings.base_model
    if model is None or not isinstance(model.value, str):
        return DEFAULT_MODEL, (f"base model {DEFAULT_MODEL}: the inputs name none; it is one MinT serves, check "
                               "service_client.get_server_capabilities() for the current list")
    hub_id = model.value.removeprefix("hf://")  # torchtitan's asset path names the hub id
    if _HUB_ID.match(hub_id):
        return hub_id, (f"base model {hub_id} from {model.source}; check that MinT serves it "
                        "(service_client.get_server_capabilities())")
    warnings.append(PlanWarning(
        code="LOCAL_MODEL_PATH",
        message=f"The source loads the model from a local path ({model.value}); MinT serves hub model ids. "
        f"The train.py uses {DEFAULT_MODEL}: pass --base-model with the id MinT serves for it.",
        source=model.source,
    ))
    return DEFAULT_MODEL, f"base model {DEFAULT_MODEL}: the source's model is a local path ({model.value})"


def _loss(kind: ScaffoldKind, algorithm: Algorithm, variant: str | None, settings: Settings,
          defaults: dict[str, Setting], ev: Evidence, warnings: list[PlanWarning]):
    if kind == "sft":
        return "cross_entropy", None, "loss_fn cross_entropy: supervised next-token loss, weights 1 on completion tokens"
    if kind == "dpo":
        return "cross_entropy", None, ("loss_fn cross_entropy: tinker 0.22 has no dpo loss; forward_backward_custom "
                                       "computes the DPO loss client-side and sends its gradient as cross_entropy "
                                       "weights")
    if kind == "distill":
        return "importance_sampling", None, ("distillation runs through mint.mint.forward_backward_reverse_kl (reverse "
                                             "KL to the teacher); loss_fn importance_sampling is the equivalent "
                                             "built-in with per-token advantages = teacher - student logprob")
    x = ev.extras
    source_loss = x.get("loss_fn") or x.get("loss_mode") or x.get("trl.loss_type")
    if source_loss is not None and source_loss.value in RL_LOSSES:
        name = str(source_loss.value)
        return name, None, f"loss_fn {name}: the source's own loss ({source_loss.loc})"
    if variant == "gspo" or (source_loss is not None and source_loss.value == "gspo"):
        said = source_loss if source_loss is not None and source_loss.value == "gspo" else x.get("variant")
        warnings.append(PlanWarning(
            code="GSPO_UNSUPPORTED",
            message="GSPO (sequence-level importance ratio) is a tinker 0.38 loss ('gspo'); tinker 0.22 has the "
            "token-level importance_sampling / ppo only. The migration uses importance_sampling; a sequence-level "
            "ratio would need forward_backward_custom.",
            source=str(said.loc) if said is not None and said.loc else None,
        ))
        return "importance_sampling", None, "loss_fn importance_sampling: GSPO's loss is not in tinker 0.22"
    low = x.get("clip_low")
    high = x.get("clip_high")
    clip = settings.clip_ratio
    low = low if low is not None and as_number(low.value) is not None else None
    high = high if high is not None and as_number(high.value) is not None else None
    clip = clip if clip is not None and as_number(clip.value) is not None else None
    eps_low = as_number(low.value) if low is not None else (as_number(clip.value) if clip is not None else None)
    eps_high = as_number(high.value) if high is not None else eps_low
    if eps_low is not None and (algorithm == "ppo" or clip is not None or low is not None or high is not None):
        config = {"clip_low_threshold": round(1 - eps_low, 6), "clip_high_threshold": round(1 + eps_high, 6)}
        where = str(low.loc) if low is not None else (clip.source if clip is not None else str(high.loc))
        return "ppo", config, (f"loss_fn ppo with ratio bounds [{config['clip_low_threshold']:g}, "
                               f"{config['clip_high_threshold']:g}] = 1 - {eps_low:g} / 1 + {eps_high:g}: the "
                               f"source clips the ratio ({where}); the thresholds are ratio bounds, not epsilons")
    if algorithm == "ppo":
        bounds = f"{PPO_CLIP['clip_low_threshold']:g} / {PPO_CLIP['clip_high_threshold']:g}"
        return "ppo", None, f"loss_fn ppo: the source is PPO; Tinker's default ratio bounds are {bounds}"
    default_clip = defaults.get("clip_ratio")
    note = (f" ({default_clip.source} would clip at {default_clip.value}; use --loss-fn ppo to keep clipping)"
            if default_clip else "")
    return "importance_sampling", None, ("loss_fn importance_sampling: the tinker-cookbook GRPO recipe "
                                         "(group-centred advantages, no clipping read from the inputs)" + note)


def _learning_rate(framework: str, kind: ScaffoldKind, settings: Settings, defaults: dict[str, Setting],
                   ev: Evidence) -> tuple[float, str]:
    lr, source, read = _number(settings.learning_rate, defaults, "learning_rate")
    used_lora = framework == "tinker" or "used_lora" in ev.extras
    if lr is None:
        value, why = _LR_GUIDANCE[kind]
        return value, f"{value:g}: the inputs set no learning rate; {why}"
    origin = f"{lr:g} from {source}" if read else f"{lr:g}, the {source}"
    if used_lora:
        where = ev.extras.get("used_lora")
        at = f" ({where.loc})" if where is not None and where.loc else ""
        value, why = float(lr), f"{origin}: the source already trains LoRA{at}, so the rate carries over"
    else:
        value = float(f"{lr * LORA_FACTOR:.6g}")
        why = (f"{origin} is a full fine-tuning rate; LoRA needs a larger one: x{LORA_FACTOR} (tinker-cookbook's "
               f"get_lora_lr_over_full_finetune_lr; the LoRA primer says 20-100x, so raise it if training is slow) "
               f"-> {value:g}")
    if value < LORA_LR_FLOOR:
        return LORA_LR_FLOOR, (f"{why}; that is still a full fine-tune's range for LoRA (below {LORA_LR_FLOOR:g}, "
                               f"which `mint-migrate lint` flags as MINT023), so the rate is raised to "
                               f"{LORA_LR_FLOOR:g}, the low end of MinT's LoRA range")
    return value, why


def _rank(settings: Settings) -> tuple[int, str]:
    lora = settings.lora
    if lora is not None and lora.value.rank and lora.value.rank > 0:
        return lora.value.rank, f"LoRA rank {lora.value.rank} from {lora.source}"
    return DEFAULT_LORA_RANK, (f"LoRA rank {DEFAULT_LORA_RANK}: Tinker's default (the source trains full parameters "
                               "or names no rank)")


def _batch_shape(choices: MintChoices, settings: Settings, defaults: dict[str, Setting], ev: Evidence) -> None:
    glob = settings.global_batch_size
    if glob is not None and as_int(glob.value):
        choices.batch_size = as_int(glob.value)
        choices.reasons.append(f"batch size {choices.batch_size} sequences per optim_step from {glob.source}")
        return
    per, p_source, p_read = _number(settings.per_device_batch_size, defaults, "per_device_batch_size")
    accum, a_source, _ = _number(settings.gradient_accumulation_steps, defaults, "gradient_accumulation_steps")
    if per is None:
        return
    accum = accum or 1
    world = ev.extras.get("world_size")
    devices = as_int(world.value) if world is not None else None
    size = int(per * accum * (devices or 1))
    choices.batch_size = size
    parts = f"per-device {per:g} ({p_source}) x accumulation {accum:g}" + (f" ({a_source})" if a_source else "")
    if devices:
        choices.reasons.append(f"batch size {size} = {parts} x {devices} processes ({world.loc}): one optim_step "
                               "per global batch")
    else:
        choices.reasons.append(f"batch size {size} = {parts}; multiply by the number of GPUs the source ran on "
                               "(the inputs do not say) to match its global batch")


def _group_shape(choices: MintChoices, settings: Settings, defaults: dict[str, Setting], ev: Evidence) -> None:
    group, g_source, read = _number(settings.num_generations, defaults, "num_generations")
    if group is not None and group > 1:
        choices.group_size = int(group)
        choices.reasons.append(f"group size {int(group)} (samples per prompt) from {g_source}"
                               + ("" if read else " (not set in the inputs)"))
    else:
        choices.group_size = 8
        said = f"{int(group)} ({g_source})" if group is not None else "not set"
        choices.reasons.append(f"group size 8: the source samples {said} per prompt, and a group baseline needs "
                               "several samples to compare")
    prompts = ev.extras.get("prompts_per_step")
    glob = settings.global_batch_size
    if prompts is not None and as_int(prompts.value):
        choices.groups_per_batch = as_int(prompts.value)
        choices.reasons.append(f"{choices.groups_per_batch} groups (prompts) per step from {prompts.loc}")
    elif glob is not None and as_int(glob.value) and ev.extras.get("global_counts_prompts"):
        choices.groups_per_batch = as_int(glob.value)
        choices.reasons.append(f"{choices.groups_per_batch} groups (prompts) per step from {glob.source}")
    else:
        per = settings.per_device_batch_size
        if per is not None and as_int(per.value):
            accum = as_int(settings.gradient_accumulation_steps.value) if settings.gradient_accumulation_steps else 1
            world = ev.extras.get("world_size")
            completions = as_int(per.value) * (accum or 1) * (as_int(world.value) if world else 1)
            if completions % choices.group_size == 0 and completions >= choices.group_size:
                choices.groups_per_batch = completions // choices.group_size
                sources = ", ".join(s.source for s in (per, settings.gradient_accumulation_steps) if s is not None)
                choices.reasons.append(
                    f"{choices.groups_per_batch} groups per step = {completions} completions per step "
                    f"({sources}) / group size {choices.group_size}")
