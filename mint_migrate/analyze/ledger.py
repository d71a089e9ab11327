"""The ledger: every setting the inputs state, and what the migration did with it.

Built from the harvest (harvest.py: every named literal binding) and the finished plan. Each item
is `carried` (train.py uses the value as is), `changed` (train.py uses another value, and why),
`not_carried` (no MinT equivalent, or not done: why, and what to do) or `server_side` (MinT owns
it: GPUs, precision, sharding, engines). A setting the analyzers found that the harvest did not
name (a positional `load_dataset("gsm8k")`, a computed batch) is added under its canonical name,
so nothing the plan reads is missing from the ledger.
"""

from mint_migrate.analyze.evidence import LORA_PARTS, Evidence, Loc, Value
from mint_migrate.analyze.harvest import Stated
from mint_migrate.analyze.optimizer import OptimizerChoice
from mint_migrate.analyze.scalars import as_number
from mint_migrate.analyze.settings import coerce
from mint_migrate.analyze.synonyms import Meaning, meaning, names_for
from mint_migrate.plan import SETTING_KEYS, LedgerItem, MigrationPlan, SettingUse

_CANONICAL = tuple(k for k in SETTING_KEYS if k != "lora") + LORA_PARTS

REASONS = {
    "unread": "the script's own code never reads this key (no `[\"key\"]` or `.key` in its Python), so it does "
              "not change the run; nothing to carry",
    "server": "MinT runs the model on its own GPUs: device placement, precision, parallelism, offload and the "
              "inference engine are the service's, not the script's",
    "logging": "train.py prints a `METRIC step=...` line and appends LOG_DIR/metrics.jsonl every step; point your "
               "tracker (wandb, tensorboard) at those",
    "output": "MinT keeps checkpoints on the service; train.py records each one's tinker:// path in "
              "LOG_DIR/checkpoints.jsonl (--log-dir) and resumes with --resume latest",
    "eval": "train.py has no evaluation pass: evaluate a saved checkpoint with a sampling client "
            "(save_weights_and_get_sampling_client, then sample) on your validation data",
    "other_model": "a setting of another model (critic, reference, reward or teacher): MinT trains one LoRA "
                   "policy; there is no critic, and the reference is the step-0 sampler",
    "sampling": "train.py samples with TEMPERATURE and MAX_TOKENS only: add this option to the "
                "types.SamplingParams in train.py if your run needs it (stop_token_ids is dropped by tinker 0.22: "
                "use stop strings)",
    "data.loader": "train.py reads its rows in its own process: there are no data-loader workers to set",
    "data": "train.py's data step (DATA in train.py, prepare_data.py) does not use this option: map it in DATA "
            "if your data needs it",
    "kl": "MinT's built-in losses have no KL term and train.py adds none: fold a KL penalty into the "
          "advantages with reference log-probs from the step-0 sampler (as tinker-cookbook does), or train "
          "without it",
    "run": "train.py does not use this option",
    "input": "the config file the run reads: this migration read it too (its settings are items of their own)",
    "algorithm.gae": "MinT has no value model: GAE and the critic's settings cannot move; the GRPO scaffold's "
                     "group baseline replaces them",
    "algorithm.entropy": "train.py's losses have no entropy bonus: add it to a forward_backward_custom loss if "
                         "your run needs it",
    "algorithm": "train.py's loss and advantages follow the MinT choices (loss_fn, LOSS_FN_CONFIGS, "
                 "NORMALIZE_ADVANTAGES, LOSS_NORMALIZATION): see 'MinT choices' for what the source's value became",
    "lora": "MinT's LoRA takes only the rank (create_lora_training_client(rank=...)); dropout, bias and the "
            "adapter's other options are the service's",
    "unknown": "mint-migrate does not know this option, so train.py does not use it: check whether your run "
               "depends on it (most framework-only options have no MinT equivalent)",
}


def build(plan: MigrationPlan, stated: list[Stated], ev: Evidence, optimizer: OptimizerChoice,
          infra_labels: set[str], confirmed: set[str], texts: dict[str, str],
          unread: set[int] = frozenset()) -> list[LedgerItem]:
    """`unread`: ids of the config items the inputs' own code never reads."""
    uses = {u.key: u for u in plan.setting_uses}
    canonical = {key: ev.best(key) for key in _CANONICAL}
    by_loc: dict[tuple[str, int], list[str]] = {}
    for key, value in canonical.items():
        if value is not None:
            by_loc.setdefault((value.loc.path, value.loc.line), []).append(key)
    linked: set[str] = set()
    items: list[LedgerItem] = []
    for s in stated:
        setting = _linked_setting(s, canonical, by_loc)
        if setting is not None:
            linked.add(setting)
            items.append(_canonical_item(plan, s.key, setting, s.value, str(s.loc), uses, confirmed))
            continue
        if id(s) in unread:
            items.append(LedgerItem(key=s.key, value=_shown_value(s.value), source=str(s.loc),
                                    disposition="not_carried", reason=REASONS["unread"]))
            continue
        items.append(_other_item(plan, s, canonical, optimizer, infra_labels))
    for key, value in canonical.items():  # read by an analyzer, but not a named literal the harvest saw
        if value is not None and key not in linked and _shown(value):
            written = _written_key(texts, value.loc, key)
            items.append(_canonical_item(plan, written, key, _as_written(texts, value, key), str(value.loc), uses,
                                         confirmed))
    items += _framework_defaults(optimizer)
    return items


def _written_key(texts: dict[str, str], loc: Loc, setting: str) -> str:
    """The name the cited line writes the setting under (`lora_alpha=2 * rank` -> lora_alpha), else the
    setting's own name."""
    lines = texts.get(loc.path, "").splitlines()
    line = lines[loc.line - 1].lower() if 0 < loc.line <= len(lines) else ""
    concept = "lora" if setting.startswith("lora.") else setting
    names = names_for(setting) if setting.startswith("lora.") else names_for(concept)
    for name in names:
        if _word_in(name, line):
            return name
    return setting


def _as_written(texts: dict[str, str], value: Value, setting: str):
    """The value as its line writes it: one reward function passed by name, not in a list
    (`reward_function=reward_function`), is that name."""
    shown = coerce(value.value)
    if setting == "reward_functions" and isinstance(shown, list) and len(shown) == 1:
        lines = texts.get(value.loc.path, "").splitlines()
        line = lines[value.loc.line - 1] if 0 < value.loc.line <= len(lines) else ""
        if "[" not in line and "(" not in line.split("=", 1)[-1]:
            return shown[0]
    return shown


def _shown(value: Value) -> bool:
    return coerce(value.value) is not None


def _linked_setting(s: Stated, canonical: dict[str, Value | None], by_loc) -> str | None:
    """The canonical setting this item is: the analyzers read its line and its value."""
    for key in by_loc.get((s.loc.path, s.loc.line), []):
        value = canonical[key]
        if _same(coerce(value.value), s.value) or _contains(value.value, s.value):
            return key
    return None


def _canonical_item(plan: MigrationPlan, key: str, setting: str, value, source: str,
                    uses: dict[str, SettingUse], confirmed: set[str]) -> LedgerItem:
    use_key = "lora" if setting.startswith("lora.") else setting
    use = uses.get(use_key)
    agent = "agent" if setting in confirmed or use_key in confirmed else None
    shown = "lora" if setting.startswith("lora.") else setting
    if setting in ("lora.alpha", "lora.target_modules"):
        return LedgerItem(key=key, setting=shown, value=_shown_value(value), source=source,
                          disposition="not_carried", confirmed_by=agent,
                          reason="MinT's LoRA takes only the rank (create_lora_training_client(rank=...)); "
                                 "alpha and target modules are the service's")
    if use is None:
        return LedgerItem(key=key, setting=shown, value=_shown_value(value), source=source, disposition="not_carried",
                          confirmed_by=agent, reason="the plan does not use it")
    if not use.applied:
        return LedgerItem(key=key, setting=shown, value=_shown_value(value), source=source, disposition="not_carried",
                          confirmed_by=agent, reason=use.note)
    kept = use.value if setting != "lora.rank" else plan.mint.lora_rank
    if use.constant is None:  # applied without a constant: e.g. a zero KL, which train.py has none of either
        return LedgerItem(key=key, setting=shown, value=_shown_value(value), source=source, disposition="carried",
                          confirmed_by=agent, reason=use.note)
    if setting == "reward_functions" and isinstance(kept, list):  # `file.py:name` as a flag writes it
        kept_names = sorted(str(k) for k in kept)
        value_names = sorted(str(v).rsplit(":", 1)[-1] for v in (value if isinstance(value, list) else [value]))
        kept, value_same = kept_names, kept_names == value_names
    else:
        value_same = False
    same = value_same or _same(kept, value) or (setting == "dataset" and _contains(value, kept)) or (
        setting == "clip_ratio" and isinstance(kept, dict) and as_number(value) is not None
        and abs(kept.get("clip_low_threshold", 0) - (1 - as_number(value))) < 1e-9)
    return LedgerItem(key=key, setting=shown, value=_shown_value(value), source=source,
                      disposition="carried" if same else "changed", constant=use.constant,
                      confirmed_by=agent, reason=use.note if same else f"train.py uses {kept}: {use.note}".rstrip(": "))


def _other_item(plan: MigrationPlan, s: Stated, canonical: dict[str, Value | None], optimizer: OptimizerChoice,
                infra_labels: set[str]) -> LedgerItem:
    value = _shown_value(s.value)
    base = {"key": s.key, "value": value, "source": str(s.loc)}
    if s.loc.path in infra_labels or s.kind == "launcher":
        return LedgerItem(**base, disposition="server_side", reason=REASONS["server"])
    m = meaning(s.key, s.owner)
    if m is None:
        return LedgerItem(**base, disposition="not_carried", reason=REASONS["unknown"])
    if m.family == "server":
        return LedgerItem(**base, disposition="server_side", reason=REASONS["server"])
    if m.family == "input":
        return LedgerItem(**base, disposition="carried", reason=REASONS["input"])
    if m.family == "optimizer":
        return _optimizer_item(base, s, m, optimizer)
    if m.family == "schedule":
        return _schedule_item(plan, base, m)
    if m.family == "setting":
        return _shadowed(base, m, canonical)
    if m.family == "run":
        return _run_item(plan, base, m, s)
    if m.family == "data":
        return _data_item(plan, base, m, s)
    if m.family == "kl":
        return _kl_item(plan, base, m, s)
    used_by = _reason_citing(plan, s.loc)
    if used_by is not None:
        return LedgerItem(**base, disposition="carried", reason=f"read by the migration: {used_by}")
    if m.concept == "algorithm.loss_agg" and plan.schedule is not None:
        kept = plan.schedule.loss_normalization
        same = str(s.value).replace("-", "_").startswith(kept) or (kept == "sum" and "sum" in str(s.value))
        return LedgerItem(**base, disposition="carried" if same else "changed", constant="LOSS_NORMALIZATION",
                          reason="" if same else f"train.py normalises the loss as {kept}")
    if m.concept == "algorithm.ppo_updates" and plan.schedule is not None:
        return _updates_item(plan, base, s)
    if m.family == "algorithm":
        return LedgerItem(**base, disposition="not_carried", reason=REASONS.get(m.concept, REASONS["algorithm"]))
    return LedgerItem(**base, disposition="not_carried", reason=REASONS.get(m.family, REASONS["unknown"]))


def _updates_item(plan: MigrationPlan, base: dict, s: Stated) -> LedgerItem:
    """PPO's passes over each batch and its mini-batches: UPDATES_PER_BATCH and MINIBATCHES in train.py."""
    schedule = plan.schedule
    passes = s.norm.rsplit(".", 1)[-1] in ("ppo_epochs", "num_ppo_epochs", "num_iterations")
    kept, constant = (schedule.updates_per_batch, "UPDATES_PER_BATCH") if passes else (schedule.minibatches,
                                                                                       "MINIBATCHES")
    if plan.mint is None or plan.mint.kind != "grpo" or plan.mint.throughput:
        return LedgerItem(**base, disposition="not_carried", reason="train.py takes one optim_step per sampled "
                          "batch (the throughput variant streams minibatches instead)")
    if passes:
        same = _same(kept, s.value)
        return LedgerItem(**base, disposition="carried" if same else "changed", constant=constant,
                          reason="" if same else f"train.py makes {kept} pass(es) over each batch")
    return LedgerItem(**base, disposition="changed", constant=constant,
                      reason=f"train.py holds the equivalent count: {kept} optim_step(s) per sampled batch (the "
                             "batch divided by this mini-batch size)")


def _reason_citing(plan: MigrationPlan, loc: Loc) -> str | None:
    """The MinT choice (or schedule decision) that names this line as its source, if one does."""
    cited = str(loc)
    reasons = [*(plan.mint.reasons if plan.mint else []), *(plan.schedule.reasons if plan.schedule else [])]
    for reason in reasons:
        at = reason.find(cited)
        if at != -1 and not reason[at + len(cited):at + len(cited) + 1].isdigit():
            return reason
    return None


def _optimizer_item(base: dict, s: Stated, m: Meaning, optimizer: OptimizerChoice) -> LedgerItem:
    param = optimizer.used.get((s.key, s.loc.line, s.loc.path))
    if m.concept == "optimizer.name":
        name = str(s.value).lower()
        if "adam" in name:
            return LedgerItem(**base, disposition="carried", constant="OPTIMIZER",
                              reason="MinT trains with Adam (decoupled weight decay): types.AdamParams(**OPTIMIZER)")
        return LedgerItem(**base, disposition="changed", constant="OPTIMIZER",
                          reason=f"MinT trains with Adam only (types.AdamParams); {s.value} has no MinT equivalent")
    if param is None:
        return LedgerItem(**base, disposition="not_carried",
                          reason="another line states this optimizer setting for the run (see the item with "
                                 "constant OPTIMIZER); this one is not what train.py uses")
    if m.concept == "optimizer.betas":
        kept = [optimizer.values["beta1"], optimizer.values["beta2"]]
        constant = "OPTIMIZER.beta1/beta2"
    else:
        kept = optimizer.values[param]
        constant = f"OPTIMIZER.{param}"
    same = _same(kept, s.value)
    return LedgerItem(**base, disposition="carried" if same else "changed", constant=constant,
                      reason="types.AdamParams(**OPTIMIZER)" if same else
                      f"train.py uses {kept}: " + ("a negative norm means no clipping (grad_clip_norm=0)"
                                                   if param == "grad_clip_norm" else "another line states it too"))


def _schedule_item(plan: MigrationPlan, base: dict, m: Meaning) -> LedgerItem:
    schedule = plan.schedule
    value = base["value"]
    if schedule is None:
        return LedgerItem(**base, disposition="not_carried", reason="train.py's schedule is constant")
    if m.concept == "schedule.lr_schedule":
        kept = schedule.lr_schedule
        same = isinstance(value, str) and value.lower().replace("-", "_") == kept
        return LedgerItem(**base, disposition="carried" if same else "changed", constant="LR_SCHEDULE",
                          reason="" if same else f"train.py decays the rate as `{kept}` (constant, linear or cosine "
                                                 f"after warmup): {'; '.join(schedule.reasons[:1])}".rstrip(": "))
    if m.concept == "schedule.warmup_steps":
        kept = schedule.warmup_steps
    elif m.concept == "schedule.warmup_ratio":
        kept = schedule.warmup_ratio
    elif m.concept == "schedule.min_lr_ratio":
        kept = schedule.min_lr_ratio
    else:
        return LedgerItem(**base, disposition="not_carried",
                          reason="train.py's schedule floor is a share of the rate (min_lr_ratio), not an absolute "
                                 "rate: set LR_SCHEDULE's min_lr_ratio to min_lr / learning rate")
    if kept is None and as_number(value) == 0:
        kept = 0  # no warmup, no floor: what train.py's schedule does when it is not told otherwise
    if kept is None:
        return LedgerItem(**base, disposition="not_carried", reason="train.py's schedule does not use it "
                          "(LR_SCHEDULE in train.py is where warmup and decay are set)")
    same = _same(kept, value)
    return LedgerItem(**base, disposition="carried" if same else "changed", constant="LR_SCHEDULE",
                      reason="" if same else f"train.py uses {kept}")


def _shadowed(base: dict, m: Meaning, canonical: dict[str, Value | None]) -> LedgerItem:
    """A name of a canonical setting whose value is not the one the plan reads."""
    used = canonical.get(m.concept)
    if used is None:
        return LedgerItem(**base, setting=_setting_name(m.concept), disposition="not_carried",
                          reason=f"named like {m.concept}, but the analysis could not tell that the run uses it "
                                 "for that: if it does, confirm it (migrate --set "
                                 f"{m.concept}={base['value']}@{base['source']})")
    return LedgerItem(**base, setting=_setting_name(m.concept), disposition="not_carried",
                      reason=f"the run's {m.concept} is {coerce(used.value)} from {used.loc}; this value is not the "
                             "one used")


def _run_item(plan: MigrationPlan, base: dict, m: Meaning, s: Stated) -> LedgerItem:
    if m.concept == "save_every":
        kept = plan.mint.save_every if plan.mint else None
        if kept is not None and _same(kept, s.value):
            return LedgerItem(**base, disposition="carried", constant="SAVE_EVERY")
        return LedgerItem(**base, disposition="not_carried",
                          reason="not a step count train.py can use (--save-every N saves every N steps)")
    if m.concept == "seed":
        kept = plan.mint.seed if plan.mint else None
        if kept is not None and _same(kept, s.value):
            return LedgerItem(**base, disposition="carried", constant="SEED",
                              reason="train.py's --seed default: the LoRA init, data order and sampling")
        return LedgerItem(**base, disposition="changed", constant="SEED",
                          reason=f"train.py seeds with {kept if kept is not None else 0} (another line states the "
                                 "run's seed, or this one is not an integer seed)")
    if m.concept == "resume":
        return LedgerItem(**base, disposition="changed", constant="--resume",
                          reason="train.py resumes from its own checkpoints.jsonl: --resume latest")
    return LedgerItem(**base, disposition="not_carried", reason=REASONS["run"])


def _data_item(plan: MigrationPlan, base: dict, m: Meaning, s: Stated) -> LedgerItem:
    data = plan.data
    if m.concept == "data.loader":
        return LedgerItem(**base, disposition="not_carried", reason=REASONS["data.loader"])
    if data is None:
        return LedgerItem(**base, disposition="not_carried", reason=REASONS["data"])
    value = s.value
    carried = False
    if m.concept == "data.system_prompt":
        carried = data.system_prompt == value
    elif m.concept == "data.prompt_template":
        carried = data.prompt_template == value
    elif m.concept in ("data.prompt_key", "data.answer_key"):
        carried = isinstance(value, str) and value in data.fields.values()
    elif m.concept == "data.split":
        carried = data.split == value
    elif m.concept == "data.apply_chat_template":
        carried = data.chat_template == value or (data.chat_template and bool(value))
    elif m.concept == "data.max_samples":
        carried = data.max_samples == value
    elif m.concept == "data.assistant_only_loss":
        kept = plan.schedule.train_on if plan.schedule else None
        carried = kept == "completion" if value else kept in ("all", "conversation")
        if plan.mint and plan.mint.kind == "sft":
            return LedgerItem(**base, disposition="carried" if carried else "changed", constant="TRAIN_ON",
                              reason="" if carried else f"train.py trains on {kept} tokens")
    if carried:
        return LedgerItem(**base, disposition="carried", constant="DATA")
    return LedgerItem(**base, disposition="not_carried", reason=REASONS["data"])


def _kl_item(plan: MigrationPlan, base: dict, m: Meaning, s: Stated) -> LedgerItem:
    if m.concept == "kl.use_kl_loss" and s.value is False:
        return LedgerItem(**base, disposition="carried", reason="no KL term, as in train.py")
    return LedgerItem(**base, disposition="not_carried", reason=REASONS["kl"])


def _framework_defaults(optimizer: OptimizerChoice) -> list[LedgerItem]:
    """The values train.py takes from the source's optimizer or framework defaults: not written in the
    inputs, but what the source trained with."""
    out = []
    for param, origin in optimizer.origins.items():
        if origin.kind in ("optimizer_class", "framework"):
            out.append(LedgerItem(key=param, value=optimizer.values[param], source=origin.text,
                                  disposition="carried", constant=f"OPTIMIZER.{param}", framework_default=True,
                                  reason="the source's default (the inputs do not state it), kept"))
    return out


def _setting_name(concept: str) -> str:
    return "lora" if concept.startswith("lora.") else concept


def _shown_value(value):
    """A value as the ledger's JSON holds it: a tuple as a list, a list of anything else as text."""
    if isinstance(value, list | tuple):
        plain = all(isinstance(v, bool | int | float | str) or v is None for v in value)
        return list(value) if plain else [str(v) for v in value]
    return value


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    na, nb = as_number(a), as_number(b)
    if na is not None and nb is not None and not isinstance(a, str | list) and not isinstance(b, str | list):
        return float(na) == float(nb)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b or str(a) == str(b)


def _contains(container, value) -> bool:
    return isinstance(container, list | tuple) and any(_same(v, value) for v in container)


def candidates(texts: dict[str, str], missing: list[str], limit: int = 5) -> dict[str, list[str]]:
    """For each canonical setting not found, the input lines that name it (by the synonym table), so
    a reader knows where to look: `file:line: text`."""
    out: dict[str, list[str]] = {}
    for key in missing:
        words = names_for(key)
        hits = []
        for label, text in texts.items():
            for number, line in enumerate(text.splitlines(), 1):
                low = line.lower()
                reward_def = key == "reward_functions" and low.lstrip().startswith("def ") and "reward" in low
                if reward_def or any(_word_in(w, low) for w in words):
                    hits.append(f"{Loc(label, number)}: {line.strip()[:160]}")
                    if len(hits) >= limit:
                        break
            if len(hits) >= limit:
                break
        out[key] = hits
    return out


def _word_in(word: str, line: str) -> bool:
    start = line.find(word)
    while start != -1:
        before = line[start - 1] if start > 0 else " "
        after = line[start + len(word)] if start + len(word) < len(line) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = line.find(word, start + 1)
    return False


def counts(items: list[LedgerItem]) -> dict[str, int]:
    out = {"carried": 0, "changed": 0, "not_carried": 0, "server_side": 0}
    for item in items:
        out[item.disposition] += 1
    return out

