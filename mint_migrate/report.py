"""MIGRATION.md: what the migration read, what it chose, and what could not move as-is.

Rendered from the MigrationPlan alone (plus the Tinker call fixes for Tinker sources), so the
report and the JSON plan never disagree.
"""

import json

from mint_migrate.frameworks import REWARD_STYLES
from mint_migrate.next_steps import Front, after_migration, resume_hint
from mint_migrate.plan import SETTING_KEYS, Construct, MigrationPlan, Setting

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


def render_report(plan: MigrationPlan, tinker_fixes: list[Construct] | None = None,
                  constants: dict | None = None, front: Front = "cli", train: str = "train.py") -> str:
    """MIGRATION.md. `constants` are the defaults the rendered train.py holds (render.train_py_constants):
    given, the report shows exactly those values, so the two never disagree."""
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
        "Every value below names the line it was read from. Every setting the inputs state is in the ledger "
        "below: carried into train.py, changed (and why), not carried (and what to do) or owned by the MinT "
        "service. A value train.py uses that the inputs do not state is the source framework's default or a "
        "MinT choice, each marked as such; a canonical setting the analysis could not find is listed as not "
        "found, with the lines that may hold it.",
        "",
        "train.py holds the recipe and its settings; `mint_run.py` beside it holds the plumbing it imports "
        "(command line, data loading, schedule, reward adapters, logging, checkpoints and resume), the same "
        "file for every kind. Keep the two together: train.py stops with a clear message without it.",
        "",
        "## Run it",
        "",
        "```bash",
        *(["python prepare_data.py                   # the source's data -> train.jsonl (the data step)"]
          if plan.data is not None and plan.data.source else []),
        "mint-migrate lint train.py                 # MinT pitfalls",
        f"python train.py --dry-run{_TEACHER.get(mint.kind, '')}   # arguments, data and prompts, no network",
        "mint-migrate smoke train.py --steps 2      # 2 real steps against the offline mint-local backend",
        "MINT_API_KEY=sk-... python train.py" + ("" if plan.data is not None and plan.data.source else " --data train.jsonl")
        + f"{_TEACHER.get(mint.kind, '')}   # the real run",
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

    uses = {u.key: u for u in plan.setting_uses}
    out += ["## Settings read from the inputs", "", "| Setting | Value | Source | In train.py |", "|---|---|---|---|"]
    for key in SETTING_KEYS:
        setting = getattr(plan.settings, key)
        if setting is not None:
            use = uses.get(key)
            where = ("not applied (see below)" if use is not None and not use.applied else
                     f"`{use.constant} = {use.value}`" if use is not None and use.constant else
                     "applied" if use is not None else "")
            agent = " *agent*" if setting.confirmed_by else ""
            out.append(f"| {key}{agent} | {_cell(_value(setting, key))} | {_cell(setting.source)} | {_cell(where)} |")
    unset = [k for k in SETTING_KEYS if getattr(plan.settings, k) is None]
    out.append("")
    if unset:
        out += _not_found(plan, unset)
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
    if mint.kind == "grpo":
        out.append(f"- **scaffold:** {'the throughput variant' if mint.throughput else 'the plain GRPO recipe'}")
    out += ["", "Why:", ""] + [f"- {r}" for r in mint.reasons] + [""]
    if constants:
        out += ["### train.py's defaults", "",
                "The values the generated train.py starts with (each is a constant at its top, and most a flag):", "",
                "| Constant | Value |", "|---|---|"]
        for name, value in constants.items():
            out.append(f"| {name} | `{_cell(repr(value) if value is None or isinstance(value, bool) else value)}` |")
        out.append("")
    out += _task_sections(plan)
    out += _ledger_section(plan)

    out += ["## What cannot move as-is", ""]
    dropped = [item for item in plan.ledger if item.disposition == "not_carried"]
    for w in plan.warnings:
        where = f" ({w.source})" if w.source else ""
        out.append(f"- **{w.code}**{where}: {w.message}")
    for item in dropped:
        out.append(f"- **{item.key}** = `{_cell(_shown(item.value))}` ({item.source}): not carried: {item.reason}.")
    if not plan.warnings and not dropped:
        out.append("Nothing: every construct found has a direct MinT equivalent, and every stated setting is "
                   "carried, changed with its reason, or owned by the MinT service (see the ledger).")
    out.append("")

    if plan.framework == "tinker":
        out += _tinker_section(tinker_fixes or [])
    checks = ", then ".join(f"`{step}`" for step in after_migration(front, train))
    out += ["## Next", "",
            "1. Read the side-by-side table, the data and reward sections, and move any logic they do not cover "
            "(custom data formatting, a reward that lives in a framework package) into train.py.",
            f"2. {checks} (offline, 2 steps on mint-local).",
            "3. Run on MinT with `MINT_API_KEY` set; compare the first steps' METRIC lines with the source run.",
            f"4. Resume a stopped run: {resume_hint()}.", ""]
    return "\n".join(out)


_DISPOSITIONS = (
    ("changed", "Changed: train.py uses another value", "why"),
    ("not_carried", "Not carried: no MinT equivalent, or not done", "why, and what to do"),
    ("carried", "Carried: train.py uses the value as is", "note"),
    ("server_side", "Server-side: the MinT service owns it", "why"),
)


def _shown(value: object) -> str:
    text = json.dumps(value) if isinstance(value, list | dict | bool) or value is None else str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _ledger_section(plan: MigrationPlan) -> list[str]:
    """Every setting the inputs state, grouped by what became of it."""
    if not plan.ledger:
        return []
    counts = {d: sum(1 for i in plan.ledger if i.disposition == d) for d, _, _ in _DISPOSITIONS}
    out = ["## Ledger: every setting the inputs state", "",
           f"{len(plan.ledger)} settings: " + ", ".join(f"{n} {d.replace('_', ' ')}" for d, n in counts.items()) + ".",
           "Values marked *default* are not written in the inputs: they are the source framework's (or its "
           "optimizer's) defaults, which the source trained with, kept in train.py. *agent*: confirmed by the "
           "caller with a citation the tool checked.", ""]
    for disposition, title, why in _DISPOSITIONS:
        items = [i for i in plan.ledger if i.disposition == disposition]
        if not items:
            continue
        out += [f"### {title} ({len(items)})", "", f"| Key | Value | Source | train.py | {why.capitalize()} |",
                "|---|---|---|---|---|"]
        for item in items:
            marks = " *default*" if item.framework_default else ""
            marks += " *agent*" if item.confirmed_by else ""
            out.append(f"| {_cell(item.key)}{marks} | `{_cell(_shown(item.value))}` | {_cell(item.source)} | "
                       f"{_cell(item.constant or '')} | {_cell(item.reason)} |")
        out.append("")
    return out


def _not_found(plan: MigrationPlan, unset: list[str]) -> list[str]:
    """Canonical settings the analysis could not find: never called "not stated", since the inputs may
    say them in a shape the analyzer does not read. The lines that name them are where to look."""
    out = ["### Not found in the inputs", "",
           "The analysis did not find these settings. The inputs may not state them, or state them in a shape "
           "it does not read: check the lines below, and confirm a value with `--set KEY=VALUE@FILE:LINE` "
           "(`confirmed` in migrate_script).", ""]
    for key in unset:
        lines = plan.unmapped.get(key, [])
        if lines:
            out.append(f"- **{key}**: " + "; ".join(f"`{_cell(line)}`" for line in lines[:3]))
        else:
            out.append(f"- **{key}**: no input line names it")
    out.append("")
    return out


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


def _task_sections(plan: MigrationPlan) -> list[str]:
    """Data, reward and schedule: what train.py does with the user's task, and why."""
    out: list[str] = []
    data = plan.data
    if data is not None and data.source:
        where = data.local_path or data.source
        out += ["## Data", "",
                f"- **source:** `{data.source}` ({data.source_kind}" + (f", subset `{data.subset}`" if data.subset
                                                                         else "")
                + (f", split `{data.split}`" if data.split else "") + ")" + (f", from {data.source_loc}"
                                                                            if data.source_loc else ""),
                "- **the data step:** `python prepare_data.py` writes train.jsonl beside train.py"
                + ("" if data.source_kind == "hub" else f"; train.py also reads `{where}` directly"),
                "- **columns:** " + (", ".join(f"`{k}` <- `{v}`" for k, v in data.fields.items())
                                     or "the source's own names (prompt, completion, messages, chosen, ...)")]
        extras = [f"{label} `{value}`" for label, value in (
            ("chat template on string prompts:", data.chat_template), ("system prompt:", data.system_prompt),
            ("prompt template:", data.prompt_template), ("answer after:", data.answer_after),
            ("first rows only:", data.max_samples)) if value]
        if extras:
            out.append("- **prompt handling:** " + "; ".join(extras))
        out += [f"- {note}" for note in data.notes] + [""]
    reward = plan.reward
    if reward is not None:
        names = ", ".join(f.name + (f" (weight {f.weight:g})" if f.weight != 1 else "") for f in reward.functions)
        call = REWARD_STYLES[reward.style]
        out += ["## Reward", ""]
        if reward.status == "user":
            origin = "copied verbatim into rewards.py" if reward.extract else "imported from its file, unchanged"
            out += [f"- **yours:** {names} ({reward.reason}); {origin}.",
                    f"- **called as:** {call}.",
                    "- `python train.py --dry-run` calls it on each row's reference answer; a smoke run reports what it "
                    "returned (REWARD line)."]
        else:
            out += [f"- **placeholder:** train.py scores with its own example reward (last number equals the "
                    f"answer), because {reward.reason}.",
                    f"- your reward would be called as: {call}; pass it with `--reward FILE:NAME`."]
        out.append("")
    schedule = plan.schedule
    if schedule is not None and schedule.reasons:
        out += ["## Schedule and shape", ""] + [f"- {r}" for r in schedule.reasons] + [""]
    return out
