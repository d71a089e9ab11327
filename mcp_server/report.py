"""MIGRATION.md: what the migration read, what it chose, and what could not move as-is.

Rendered from the MigrationPlan alone (plus the Tinker call fixes for Tinker sources), so the
report and the JSON plan never disagree.
"""

from mcp_server.plan import SETTING_KEYS, Construct, MigrationPlan, Setting

_KIND_TEXT = {
    "sft": "supervised fine-tuning: `forward_backward(datums, loss_fn=\"cross_entropy\")` + `optim_step`",
    "grpo": "group RL: `sample(num_samples=group_size)` -> reward -> group-centred advantages -> "
            "`forward_backward(datums, loss_fn)` + `optim_step`",
    "dpo": "preference training: `forward_backward_custom(pairs, dpo_loss)` with reference logprobs from the "
           "step-0 sampler",
    "distill": "on-policy distillation: `mint.mint.forward_backward_reverse_kl` against the teacher",
}
_MAPPING_TEXT = {
    "ppo": "PPO trains a critic for GAE advantages; MinT has no value model, so the GRPO scaffold replaces the "
           "critic with a group baseline (several samples per prompt, advantage = reward - group mean) and keeps "
           "the clipped `ppo` loss.",
    "reinforce": "REINFORCE-family estimators (RLOO, REINFORCE++, ReMax) are baselines computed from the samples "
                 "themselves: the GRPO scaffold computes them client-side. Edit its advantage line for a "
                 "leave-one-out baseline if you want RLOO exactly.",
    "kto": "KTO has no built-in loss: the DPO scaffold's `forward_backward_custom` is where its objective goes "
           "(replace `dpo_loss` with the KTO loss over the per-token logprobs it receives).",
    "orpo": "ORPO has no built-in loss: the DPO scaffold's `forward_backward_custom` is where its objective goes "
            "(NLL on the chosen answer plus the odds-ratio term), without the reference model.",
    "reward_model": "A reward model is a scalar head trained on chosen/rejected pairs; MinT trains LoRA adapters "
                    "of a causal LM without a value head. The DPO scaffold's pairwise loss on sequence logprobs is "
                    "the closest MinT training, and it is an approximation: the result is a policy, not a scorer. "
                    "To score rollouts on MinT, use a rule-based reward or a MinT sampler as a judge.",
    "other": "The algorithm could not be identified from the inputs, so the scaffold is a starting point: check "
             "its loss and data shape against the source before training.",
}


def _cell(value: object) -> str:
    text = str(value) if value is not None else ""
    return text.replace("|", "\\|").replace("\n", " ")


def _value(setting: Setting | None, key: str) -> str:
    if setting is None:
        return ""
    if key == "lora":
        return ", ".join(f"{k}={v}" for k, v in setting.value.model_dump(exclude_none=True).items())
    return f"`{setting.value}`"


# The distillation scaffold cannot start without a teacher (a sampler checkpoint).
_TEACHER = {"distill": " --teacher-path tinker://RUN/sampler_weights/TEACHER"}


def render_report(plan: MigrationPlan, tinker_fixes: list[Construct] | None = None) -> str:
    mint = plan.mint
    primary = plan.inputs[0] if plan.inputs else "the source"
    variant = f" ({plan.variant})" if plan.variant else ""
    out: list[str] = [
        f"# Migration to MinT: {primary}",
        "",
        f"**Source:** {plan.framework}, {plan.algorithm}{variant}.  ",
        f"**MinT:** the `{mint.kind}` scaffold, {_KIND_TEXT[mint.kind]}.  ",
        f"**Inputs read:** {', '.join(plan.inputs)}.",
        "",
        "Every value below names the line it was read from. A setting the inputs do not state is left "
        "empty, never guessed; where the source framework has a default it is listed separately.",
        "",
        "## Run it",
        "",
        "```bash",
        "mint-migrate lint train.py                 # MinT pitfalls",
        f"python train.py --dry-run{_TEACHER.get(mint.kind, '')}   # arguments, data and prompts, no network",
        "mint-migrate smoke train.py --steps 2      # 2 real steps against the offline mint-local backend",
        f"MINT_API_KEY=sk-... python train.py --data train.jsonl{_TEACHER.get(mint.kind, '')}   # the real run",
        "```",
        "",
    ]
    if plan.algorithm in _MAPPING_TEXT or (plan.algorithm == "dpo" and plan.variant in {"cpo", "online_dpo"}):
        out += ["## Why this scaffold", "", _MAPPING_TEXT.get(plan.algorithm, "The DPO scaffold carries the pairwise "
                "loss; adapt `dpo_loss` to the variant."), ""]

    out += ["## Side by side", "", "| Source | Where | MinT | Note |", "|---|---|---|---|"]
    for c in plan.constructs:
        out.append(f"| {_cell(c.source)} | {_cell(c.location)} | {_cell(c.mint)} | {_cell(c.note)} |")
    if not plan.constructs:
        out.append("| (no framework construct recognised) | | | |")
    out.append("")

    out += ["## Settings read from the inputs", "", "| Setting | Value | Source |", "|---|---|---|"]
    for key in SETTING_KEYS:
        setting = getattr(plan.settings, key)
        if setting is not None:
            out.append(f"| {key} | {_cell(_value(setting, key))} | {_cell(setting.source)} |")
    unset = [k for k in SETTING_KEYS if getattr(plan.settings, k) is None]
    out.append("")
    if unset:
        out += [f"Not stated in the inputs: {', '.join(unset)}.", ""]
    if plan.framework_defaults:
        out += ["### Framework defaults (what the source would have used; not read from the inputs)", "",
                "| Setting | Default | Where it is defined |", "|---|---|---|"]
        for key, setting in plan.framework_defaults.items():
            out.append(f"| {key} | `{_cell(setting.value)}` | {_cell(setting.source)} |")
        out.append("")

    out += ["## MinT choices", "",
            f"- **loss_fn:** `{mint.loss_fn}`" + (f" with `loss_fn_config={mint.loss_fn_config}`" if mint.loss_fn_config
                                                  else ""),
            f"- **learning rate:** `{mint.learning_rate:g}`: {mint.learning_rate_reason}",
            f"- **LoRA rank:** `{mint.lora_rank}`",
            f"- **base model:** `{mint.base_model}`"]
    shape = [f"{name} `{value}`" for name, value in (
        ("batch size", mint.batch_size), ("group size", mint.group_size), ("groups per batch", mint.groups_per_batch),
        ("max tokens", mint.max_tokens), ("max length", mint.max_length), ("temperature", mint.temperature),
        ("beta", mint.beta), ("steps", mint.steps)) if value is not None]
    if shape:
        out.append(f"- **shape:** {', '.join(shape)}")
    out += ["", "Why:", ""] + [f"- {r}" for r in mint.reasons] + [""]

    out += ["## What cannot move as-is", ""]
    if plan.warnings:
        for w in plan.warnings:
            where = f" ({w.source})" if w.source else ""
            out.append(f"- **{w.code}**{where}: {w.message}")
    else:
        out.append("Nothing: every construct found has a direct MinT equivalent.")
    out.append("")

    if plan.framework == "tinker":
        out += _tinker_section(tinker_fixes or [])
    out += ["## Next", "",
            "1. Read the side-by-side table and move any custom logic (reward functions, data formatting) into "
            "train.py.",
            "2. `mint-migrate lint train.py`, then `mint-migrate smoke train.py` (offline, 2 steps).",
            "3. Run on MinT with `MINT_API_KEY` set; compare the first steps' METRIC lines with the source run.", ""]
    return "\n".join(out)


def _tinker_section(fixes: list[Construct]) -> list[str]:
    out = [
        "## Tinker SDK code: the bridge and the 0.38 -> 0.22 fixes",
        "",
        "MinT speaks the Tinker API pinned at tinker 0.22.0, so this code can also move with the smallest change:",
        "",
        "1. Install `mindlab-toolkit` (it pins `tinker==0.22.0`); keep `tinker-cookbook<=0.4.1` if the code "
        "imports it.",
        "2. Replace `import tinker` with `import mint as tinker` (or import `mint` before anything imports "
        "`tinker`). `mint` reads `MINT_BASE_URL` / `MINT_API_KEY` and re-exports the 0.22 API.",
        "3. Apply the fixes below: code written against the latest Tinker docs (0.38) uses calls that 0.22 does "
        "not have or shapes it returns differently.",
        "4. Prefer the generated train.py for new work: it is the same algorithm on the MinT scaffold, with "
        "`--dry-run`, smoke mode and resume built in.",
        "",
    ]
    if fixes:
        out += ["| Where | Code | Change to (tinker 0.22 / MinT) | Why |", "|---|---|---|---|"]
        for fix in fixes:
            out.append(f"| {_cell(fix.location)} | `{_cell(fix.source)}` | `{_cell(fix.mint)}` | {_cell(fix.note)} |")
    else:
        out.append("No 0.38-only calls were found: after the import change the code targets 0.22 as written.")
    out.append("")
    return out


def with_section(markdown: str, heading: str, body: str) -> str:
    """`markdown` with its `## heading` section replaced by `body`, or the section appended.

    For results that arrive after the migration (e.g. `mint-migrate parity`): running it again
    replaces its section instead of piling up copies."""
    lines = markdown.rstrip("\n").split("\n")
    title = f"## {heading}"
    new = [title, "", *body.rstrip("\n").split("\n")]
    if title in lines:
        start = lines.index(title)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        lines[start:end] = [*new, ""] if end < len(lines) else new
    else:
        lines += ["", *new]
    return "\n".join(lines) + "\n"
