"""What became of every setting the inputs state: the train.py constant that carries it, or why none does.

A migration never drops a setting silently (DESIGN.md). For each Settings key with a value, this
says which constant of the rendered train.py holds it (and the value it holds there, which can be
derived: a LoRA rate from a full fine-tune's, a batch from per-device x accumulation x devices),
or why it cannot move. MIGRATION.md lists the second kind under "What cannot move as-is"; a test
renders every fixture and checks the first kind against the script's constants.
"""

from mint_migrate.analyze.scalars import as_int, as_number
from mint_migrate.plan import MigrationPlan, Settings, SettingUse

# The constant of each kind that carries a MinT choice.
_BATCH = {"sft": "BATCH_SIZE", "dpo": "BATCH_SIZE", "distill": "BATCH_SIZE", "grpo": "GROUPS_PER_BATCH"}
_PROMPT_LIMIT = {"grpo": "MAX_PROMPT_TOKENS", "distill": "MAX_PROMPT_TOKENS", "dpo": "MAX_PROMPT_LENGTH"}


def prompt_limit(kind: str, settings: Settings, max_tokens: int | None) -> tuple[int | None, str | None]:
    """The longest prompt train.py keeps: max_prompt_length, else max_seq_length - max_tokens (RL)."""
    if kind not in _PROMPT_LIMIT:
        return None, None
    prompt = settings.max_prompt_length
    if prompt is not None and (as_int(prompt.value) or 0) > 0:
        return as_int(prompt.value), f"longest prompt {prompt.value} tokens from {prompt.source} (kept from the end)"
    seq = settings.max_seq_length
    if kind != "dpo" and seq is not None and max_tokens and (as_int(seq.value) or 0) > max_tokens:
        limit = as_int(seq.value) - max_tokens
        return limit, f"longest prompt {limit} tokens = max_seq_length {seq.value} ({seq.source}) - max tokens"
    return None, None


def setting_uses(plan: MigrationPlan) -> list[SettingUse]:
    mint, settings, kind = plan.mint, plan.settings, plan.mint.kind
    uses: list[SettingUse] = []

    def applied(key: str, constant: str | None, value, note: str = "") -> None:
        uses.append(SettingUse(key=key, applied=True, constant=constant, value=value, note=note))

    def dropped(key: str, note: str) -> None:
        uses.append(SettingUse(key=key, applied=False, note=note))

    for key in Settings.model_fields:
        setting = getattr(settings, key)
        if setting is None:
            continue
        value = setting.value
        if key == "base_model":
            note = "" if mint.base_model == value else "a local path: MinT serves hub ids (LOCAL_MODEL_PATH)"
            applied(key, "BASE_MODEL", mint.base_model, note)
        elif key == "dataset":
            _dataset(plan, applied, dropped)
        elif key == "learning_rate":
            applied(key, "LEARNING_RATE", mint.learning_rate, mint.learning_rate_reason)
        elif key in ("per_device_batch_size", "global_batch_size", "gradient_accumulation_steps"):
            _batch(plan, key, applied, dropped)
        elif key == "num_epochs":
            if mint.steps is not None:
                dropped(key, f"max_steps ({mint.steps}) bounds the run, as in the source: STEPS wins over epochs")
            else:
                applied(key, "EPOCHS", plan.schedule.epochs, "steps = rows x EPOCHS / rows per step")
        elif key == "max_steps":
            if mint.steps is not None:
                applied(key, "STEPS", mint.steps)
            else:
                dropped(key, f"{value} is not a positive step count")
        elif key == "max_seq_length":
            if kind in ("sft", "dpo") and mint.max_length is not None:
                applied(key, "MAX_LENGTH", mint.max_length)
            elif kind in _PROMPT_LIMIT and mint.max_prompt_tokens is not None and settings.max_prompt_length is None:
                applied(key, _PROMPT_LIMIT[kind], mint.max_prompt_tokens, "minus the longest answer (MAX_TOKENS)")
            else:
                dropped(key, "the sampled answer's length (MAX_TOKENS) and the prompt limit bound RL sequences; "
                        "there is no separate total length on MinT")
        elif key == "max_prompt_length":
            if kind in _PROMPT_LIMIT and mint.max_prompt_tokens is not None:
                applied(key, _PROMPT_LIMIT[kind], mint.max_prompt_tokens, "longer prompts keep their last tokens")
            else:
                dropped(key, "SFT trains whole examples up to MAX_LENGTH; there is no separate prompt limit")
        elif key == "max_response_length":
            if kind in ("grpo", "distill") and mint.max_tokens is not None:
                applied(key, "MAX_TOKENS", mint.max_tokens)
            else:
                dropped(key, f"the {kind} scaffold samples nothing; MAX_LENGTH bounds prompt + answer")
        elif key == "lora":
            if setting.value.rank:
                applied(key, "LORA_RANK", mint.lora_rank, "MinT takes only the rank (LORA_OPTIONS)"
                        if setting.value.alpha or setting.value.target_modules else "")
            else:
                dropped(key, "no rank: MinT takes only the LoRA rank; alpha and target modules do not apply")
        elif key == "beta":
            if kind == "dpo" and mint.beta is not None:
                applied(key, "BETA", mint.beta)
            else:
                dropped(key, f"the {kind} scaffold has no beta")
        elif key == "num_generations":
            group = "SAMPLES_PER_PROMPT" if kind == "distill" else "GROUP_SIZE"
            if kind in ("grpo", "distill") and mint.group_size == as_int(value):
                applied(key, group, mint.group_size)
            elif kind in ("grpo", "distill"):
                dropped(key, f"{value} sample(s) per prompt cannot form a group baseline; {group} is "
                        f"{mint.group_size}")
            else:
                dropped(key, f"the {kind} scaffold samples nothing")
        elif key == "kl_coef":
            if (as_number(value) or 0) == 0:
                applied(key, None, value, "no KL term, as in train.py")
            else:
                dropped(key, "MinT's built-in losses have no KL term (KL_REFERENCE): fold it into the reward or drop it")
        elif key == "clip_ratio":
            if mint.loss_fn == "ppo" and mint.loss_fn_config:
                applied(key, "LOSS_FN_CONFIGS.ppo", dict(mint.loss_fn_config),
                        "ratio bounds 1 - eps / 1 + eps of the ppo loss")
            else:
                dropped(key, f"loss_fn {mint.loss_fn} does not clip the ratio (pass --loss-fn ppo to clip)")
        elif key == "temperature":
            if kind in ("grpo", "distill") and mint.temperature is not None and mint.temperature == as_number(value):
                applied(key, "TEMPERATURE", mint.temperature)
            else:
                dropped(key, "RL needs sampling: the scaffold's temperature stays" if kind in ("grpo", "distill")
                        else f"the {kind} scaffold samples nothing")
        elif key == "reward_functions":
            reward = plan.reward
            if kind == "grpo" and reward is not None and reward.status == "user":
                applied(key, "REWARD.functions", [f.name for f in reward.functions], reward.reason)
            else:
                dropped(key, reward.reason if reward is not None else f"the {kind} scaffold has no reward")
    return uses


def _dataset(plan: MigrationPlan, applied, dropped) -> None:
    data = plan.data
    if data is not None and data.source:
        applied("dataset", "DATA.source", data.source, "converted by prepare_data.py / read with --data")
    else:
        dropped("dataset", "not a dataset this migration can name: pass --data FILE")


def _batch(plan: MigrationPlan, key: str, applied, dropped) -> None:
    mint, settings, kind = plan.mint, plan.settings, plan.mint.kind
    constant = _BATCH[kind]
    value = mint.groups_per_batch if kind == "grpo" else mint.batch_size
    used = [r for r in mint.reasons if ("batch" in r or "groups" in r) and getattr(settings, key).source in r]
    if value is not None and used:
        applied(key, constant, value, used[0])
    elif key == "global_batch_size" and kind == "grpo" and plan.schedule and plan.schedule.minibatches > 1:
        applied(key, "MINIBATCHES", plan.schedule.minibatches, "optim_steps per sampled batch")
    else:
        dropped(key, f"{constant} ({value if value is not None else 'the scaffold default'}) is set from "
                f"{'the other batch settings' if value is not None else 'none of the inputs'}; MinT batches on the "
                "server, so a per-device split has no meaning there")
