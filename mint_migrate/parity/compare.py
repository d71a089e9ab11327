"""Compare the two sides' first steps and explain every difference (pure Python, no torch).

The rules, in order, per data row (and role, for DPO pairs):
1. the same token sequence; if not, the likely cause: EOS dropped or added, the chat template
   applied twice or not at all, BOS, truncation length or side, or the first differing token;
2. the same trained positions (weight != 0); if not: the prompt trained on one side only
   (masking), the EOS position, or the first position that differs;
3. per-token weights equal up to one constant c for the whole step (weight_mint = c *
   weight_source); a c that is the step's trained-token count is not a constant but a missing
   normalisation (MinT sums where the source averages, or the other way round), and weights that
   scale per sequence are a token-mean / sequence-mean mix-up;
4. the step-0 loss equal after c: |loss_mint / c - loss_source| / |loss_source| < 1e-4.
DPO compares the trained tokens and each answer's summed log-probability; the constant there is
the DPO gradient factor beta * sigmoid(-margin) / pairs, which MinT's loss applies itself.
"""

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from mint_migrate import userfiles
from mint_migrate.parity.records import ParityFinding, ParityReport, SequenceRecord, SideRecord

LOSS_TOLERANCE = 1e-4  # float32 on both sides
WEIGHT_TOLERANCE = 1e-4
# GRPO's advantages divide by the group's std plus an epsilon that differs by framework (TRL 1e-4,
# the scaffold 1e-6): a relative wobble far below anything that changes training.
GRPO_WEIGHT_TOLERANCE = 1e-3


class Vocab:
    """The shared model folder's tokenizer, for decoding (the `tokenizers` library: no torch)."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        config_path = model_dir / "tokenizer_config.json"
        config = json.loads(userfiles.read_text(config_path)) if config_path.is_file() else {}  # the one door
        self.eos = self._id(config.get("eos_token"))
        self.bos = self._id(config.get("bos_token"))
        self.special = {i for i, t in self.tokenizer.get_added_tokens_decoder().items() if t.special}

    def _id(self, token: Any) -> int | None:
        if isinstance(token, dict):
            token = token.get("content")
        return self.tokenizer.token_to_id(token) if isinstance(token, str) else None

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def piece(self, ids: list[int], at: int, width: int = 6) -> str:
        """The text around position `at`, for a finding."""
        return json.dumps(self.decode(ids[max(0, at - width) : at + width]))


# --- which data row each sequence came from --------------------------------------------------------------


def text_leaves(value: Any) -> list[str]:
    """Every non-blank string inside a data row (nested dicts and lists included)."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in text_leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in text_leaves(v)]
    return []


def assign_rows(sequences: list[SequenceRecord], rows: list[dict], vocab: Vocab) -> None:
    """Set each sequence's `row`: the row whose texts it contains most of.

    Content, not order: each side may shuffle its step, and a broken migration still holds the
    row's texts (templated twice, unmasked, without EOS)."""
    leaves = [text_leaves(row) for row in rows]
    used: dict[tuple[int, str], int] = defaultdict(int)
    for sequence in sequences:
        text = vocab.decode(sequence.tokens)
        best, best_score = None, -1.0
        for index, row_leaves in enumerate(leaves):
            total = sum(len(leaf) for leaf in row_leaves) or 1
            score = sum(len(leaf) for leaf in row_leaves if leaf in text) / total
            # Equal scores (duplicate rows): the first one this role has not used yet.
            score -= used[(index, sequence.role)] * 1e-9
            if score > best_score:
                best, best_score = index, score
        sequence.row = best
        if best is not None:
            used[(best, sequence.role)] += 1


# --- explanations ----------------------------------------------------------------------------------------


def explain_tokens(src: list[int], mint: list[int], vocab: Vocab, row: int | None, role: str) -> ParityFinding:
    """Why two token sequences of the same row differ: one finding with the likely cause and fix."""
    first = next((i for i, (a, b) in enumerate(zip(src, mint, strict=False)) if a != b), min(len(src), len(mint)))
    base = {"check": "tokens", "row": row, "role": role, "position": first}
    eos = vocab.eos
    if eos is not None and mint == src[:-1] and src[-1] == eos:
        return ParityFinding(
            **base, cause="eos", source_value=vocab.piece(src, first), mint_value=vocab.piece(mint, first),
            message=f"row {row}: train.py drops the EOS token the source ends the sequence with (position {first}).",
            fix="End each example with tokenizer.eos_token_id as the source does (the scaffold appends it after "
            "a plain-text completion), and give it weight 1.",
        )  # fmt: skip
    if eos is not None and src == mint[:-1] and mint[-1] == eos:
        return ParityFinding(
            **base, cause="eos", source_value=vocab.piece(src, first), mint_value=vocab.piece(mint, first),
            message=f"row {row}: train.py adds an EOS token (position {first}) the source does not have.",
            fix="Do not append eos where the source does not (e.g. after a chat template that already ends the turn).",
        )  # fmt: skip
    special_src = sum(1 for t in src if t in vocab.special)
    special_mint = sum(1 for t in mint if t in vocab.special)
    counts = f"{special_src} chat-template tokens in the source's sequence, {special_mint} in train.py's"
    if special_src and special_mint >= special_src + 2:
        return ParityFinding(
            **base, cause="template_twice", source_value=special_src, mint_value=special_mint,
            message=f"row {row}: the chat template is applied twice in train.py ({counts}; first difference at "
            f"position {first}: source {vocab.piece(src, first)}, train.py {vocab.piece(mint, first)}).",
            fix="Apply the chat template once: pass the messages (not already-templated text) to chat_text / "
            "apply_chat_template, or encode templated text as it is.",
        )  # fmt: skip
    if special_src and not special_mint:
        return ParityFinding(
            **base, cause="template_missing", source_value=special_src, mint_value=special_mint,
            message=f"row {row}: train.py does not apply the chat template the source applies ({counts}).",
            fix="Keep the rows as chat messages so train.py renders them through the model's chat template.",
        )  # fmt: skip
    if special_mint and not special_src:
        return ParityFinding(
            **base, cause="template", source_value=special_src, mint_value=special_mint,
            message=f"row {row}: train.py applies a chat template the source does not ({counts}).",
            fix="Keep plain-text rows as plain text (prompt/completion strings, or `text`).",
        )  # fmt: skip
    if len(src) > 1 and len(mint) > 1 and src[1:] == mint:
        return ParityFinding(
            **base, cause="bos", source_value=src[0], mint_value=None,
            message=f"row {row}: the source starts with token {src[0]} ({vocab.piece(src, 0, 1)}), train.py does not.",
            fix="Encode with add_special_tokens=True where the source does, so the BOS token is there.",
        )  # fmt: skip
    if len(src) > 1 and len(mint) > 1 and mint[1:] == src:
        return ParityFinding(
            **base, cause="bos", source_value=None, mint_value=mint[0],
            message=f"row {row}: train.py starts with an extra token {mint[0]} ({vocab.piece(mint, 0, 1)}).",
            fix="Do not add special tokens to text that already has them (a chat template's output).",
        )  # fmt: skip
    shorter, longer = (mint, src) if len(mint) < len(src) else (src, mint)
    if shorter and longer[: len(shorter)] == shorter:
        who = "train.py" if shorter is mint else "the source"
        return ParityFinding(
            **base, cause="truncation", source_value=len(src), mint_value=len(mint),
            message=f"row {row}: {who} cuts the sequence at {len(shorter)} tokens, the other side keeps "
            f"{len(longer)}: a different max length.",
            fix="Use the source's max length (MAX_LENGTH / --max-length in train.py).",
        )  # fmt: skip
    if shorter and longer[-len(shorter) :] == shorter:
        who = "train.py" if shorter is mint else "the source"
        return ParityFinding(
            **base, cause="truncation", source_value=len(src), mint_value=len(mint),
            message=f"row {row}: {who} keeps the last {len(shorter)} tokens where the other side keeps the first: "
            "the truncation side differs.",
            fix="Cut sequences on the source's side (TRL's truncation_mode; keep_start by default).",
        )  # fmt: skip
    return ParityFinding(
        **base, cause="template", source_value=vocab.piece(src, first), mint_value=vocab.piece(mint, first),
        message=f"row {row}: the token sequences differ from position {first} (source {len(src)} tokens, "
        f"train.py {len(mint)}): source {vocab.piece(src, first)}, train.py {vocab.piece(mint, first)}.",
        fix="Render the row the way the source does (template, separators, prompt format) in train.py.",
    )  # fmt: skip


def explain_positions(
    src: SequenceRecord, mint: SequenceRecord, vocab: Vocab, kind: str, runner: str = ""
) -> list[ParityFinding]:
    """Positions trained on one side only (same tokens on both sides)."""
    trained_src = {t for t, w in enumerate(src.weights) if w != 0}
    trained_mint = {t for t, w in enumerate(mint.weights) if w != 0}
    if trained_src == trained_mint:
        return []
    tokens = src.tokens
    findings = []
    base = {"check": "positions", "row": src.row, "role": src.role}
    only_mint, only_src = sorted(trained_mint - trained_src), sorted(trained_src - trained_mint)
    eos_positions = {t for t in range(len(tokens) - 1) if tokens[t + 1] == vocab.eos}
    for extra, side, other in ((only_mint, "train.py", trained_src), (only_src, "the source", trained_mint)):
        if not extra:
            continue
        where = extra[0]
        values = {"source_value": src.weights[where], "mint_value": mint.weights[where]}
        text = vocab.decode([tokens[t + 1] for t in extra])
        if set(extra) <= eos_positions:
            findings.append(ParityFinding(
                **base, position=where, cause="eos", **values,
                message=f"row {src.row}: only {side} trains the EOS token (position {where}).",
                fix="Give the EOS token weight 1 as the source does." if side == "the source"
                else "Give the EOS token weight 0 as the source does.",
            ))  # fmt: skip
        elif other and max(extra) < min(other):
            if side == "train.py":
                message = (f"row {src.row}: train.py trains {len(extra)} prompt tokens the source masks "
                           f"(positions {extra[0]}..{extra[-1]}: {json.dumps(text[:80])}): the prompt is not masked.")
                fix = ('Set TRAIN_ON = "completion" in train.py (weight 0 on the prompt)' if kind == "sft"
                       else "Give the prompt tokens weight 0.")
            else:
                message = (f"row {src.row}: the source trains {len(extra)} prompt tokens train.py masks "
                           f"(positions {extra[0]}..{extra[-1]}: {json.dumps(text[:80])}).")
                if runner == "trl.SFTTrainer":
                    message += " TRL trains every token of `messages` data unless assistant_only_loss=True."
                fix = 'Set TRAIN_ON = "all" in train.py.' if kind == "sft" else "Give the prompt tokens weight 1."
            findings.append(ParityFinding(**base, position=where, cause="masking", **values, message=message, fix=fix))
        else:
            findings.append(ParityFinding(
                **base, position=where, cause="masking", **values,
                message=f"row {src.row}: {len(extra)} tokens are trained only by {side} (first at position {where}: "
                f"{json.dumps(text[:80])}).",
                fix="Mask the same tokens as the source (which turns of a conversation, which fields of a row).",
            ))  # fmt: skip
    return findings


def _close(a: float, b: float, tolerance: float = WEIGHT_TOLERANCE) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-30)


def _ratios(src: SequenceRecord, mint: SequenceRecord, kind: str) -> list[float]:
    """weight_mint / weight_source on every position both sides train (DPO: rejected answers are
    pushed down, so their source weight is negative while train.py marks them with +1)."""
    sign = -1.0 if kind == "dpo" and src.role == "rejected" else 1.0
    return [m / (sign * s) for s, m in zip(src.weights, mint.weights, strict=False) if s != 0 and m != 0]


def weight_constant(
    pairs: list[tuple[SequenceRecord, SequenceRecord]], kind: str, config: dict | None = None
) -> tuple[float | None, list[ParityFinding]]:
    """The one c with weight_mint = c * weight_source on every position both sides train, or why none fits."""
    tolerance = GRPO_WEIGHT_TOLERANCE if kind == "grpo" else WEIGHT_TOLERANCE
    ratios = {i: _ratios(src, mint, kind) for i, (src, mint) in enumerate(pairs)}
    every = [r for values in ratios.values() for r in values]
    if not every:
        return None, []
    c = statistics.median(every)
    if all(_close(r, c, tolerance) for r in every):
        return c, []
    if kind == "grpo" and (baseline := _group_baseline_finding(pairs, config or {})) is not None:
        return None, [baseline]  # another baseline flips signs too: say the cause, not the symptom
    if kind == "grpo" and (flipped := _advantage_signs(pairs)):
        return None, flipped
    # Constant within each sequence but not across them: a per-sequence factor on one side.
    per_sequence = {i: statistics.median(v) for i, v in ratios.items() if v}
    uniform = all(all(_close(r, per_sequence[i], tolerance) for r in v) for i, v in ratios.items() if v)
    if uniform and len(per_sequence) > 1:
        return None, [_per_sequence_finding(pairs, per_sequence, kind, config or {})]
    for src, mint in pairs:
        sign = -1.0 if kind == "dpo" and src.role == "rejected" else 1.0
        for t, (s, m) in enumerate(zip(src.weights, mint.weights, strict=False)):
            if s and m and not _close(m / (sign * s), c, tolerance):
                return None, [ParityFinding(
                    check="weights", cause="normalisation", row=src.row, role=src.role, position=t,
                    source_value=s, mint_value=m,
                    message=f"row {src.row}: per-token weights are not one constant apart (position {t}: "
                    f"source {s:.6g}, train.py {m:.6g}; most tokens: x{c:.6g}).",
                    fix="Weight tokens the way the source does (its loss type, per-token scaling).",
                )]  # fmt: skip
    return None, [ParityFinding(
        check="weights", cause="normalisation",
        message="per-token weights are not one constant apart between the source and train.py.",
        fix="Weight tokens the way the source does (its loss type, per-token scaling).",
    )]  # fmt: skip


def _advantage_signs(pairs: list[tuple[SequenceRecord, SequenceRecord]]) -> list[ParityFinding]:
    """GRPO: completions the two sides push in opposite directions, i.e. score differently."""
    out = []
    for src, mint in pairs:
        s, m = src.advantage or 0.0, mint.advantage or 0.0
        if abs(s) > 1e-6 and abs(m) > 1e-12 and (s > 0) != (m > 0):
            out.append(ParityFinding(
                check="advantages", cause="reward", row=src.row, role=src.role, source_value=s, mint_value=m,
                message=f"row {src.row}: the same completion gets advantage {s:.4g} from the source and {m:.4g} "
                "(times train.py's loss scale) from train.py: the two rewards rank the group's answers differently.",
                fix="Call the source's reward function with the same inputs it gets there (the text without special "
                "tokens, the dataset columns as keyword arguments).",
            ))  # fmt: skip
    return out


def _per_sequence_finding(
    pairs: list[tuple[SequenceRecord, SequenceRecord]], factors: dict[int, float], kind: str, config: dict
) -> ParityFinding:
    """Why the weights differ by one factor per sequence: length normalisation, or GRPO's group scale."""
    lengths = {i: sum(1 for w in pairs[i][0].weights if w != 0) for i in factors}
    times = [factors[i] * lengths[i] for i in factors]
    over = [factors[i] / lengths[i] for i in factors]
    by_group: dict[int | None, list[float]] = defaultdict(list)
    for i, f in factors.items():
        by_group[pairs[i][0].row].append(f)
    per_group = kind == "grpo" and len(by_group) > 1 and all(
        all(_close(f, fs[0], GRPO_WEIGHT_TOLERANCE) for f in fs) for fs in by_group.values()
    )
    if all(_close(t, times[0], 1e-3) for t in times):
        message = ("train.py weights each sequence by 1 / its own trained-token count (a sequence mean); the source "
                   "weights every trained token of the step the same (a token mean): long answers count less on MinT.")
        fix = 'Set LOSS_NORMALIZATION = "token_mean" in train.py.'
    elif all(_close(o, over[0], 1e-3) for o in over):
        message = ("the source weights each sequence by 1 / its own trained-token count (a sequence mean, e.g. TRL's "
                   "loss_type='grpo'); train.py weights every token of the step the same: long answers count more "
                   "on MinT.")
        fix = 'Set LOSS_NORMALIZATION = "sequence_mean" in train.py.'
    elif per_group:
        scaled = config.get("scale_rewards") not in (None, "none", False)
        # The setting in the source's own words (verl, OpenRLHF), else TRL's.
        named = config.get("scale_setting") or f"scale_rewards={config.get('scale_rewards')!r}"
        message = ("the advantages differ by one factor per group: "
                   + (f"the source divides each group's advantages by its reward std ({named}) and train.py does "
                      "not." if scaled else
                      f"train.py divides each group's advantages by its reward std and the source does not ({named})."))
        fix = f"Set NORMALIZE_ADVANTAGES = {scaled} in train.py."
    elif kind == "grpo":
        # Within a group the advantages are no longer proportional: a reward moved, not a scale.
        message = ("the advantages of some completions are not proportional across the two sides, even within one "
                   "group: their rewards differ. The reward function sees other text on one side (special tokens, "
                   "the stop token, the prompt), or scores with other arguments.")
        fix = ("Call the reward in train.py with the text the source's framework passes it (for OpenRLHF: prompt and "
               "response decoded with their special tokens; for verl: the response without them).")
        i = next(iter(factors))
        src, mint = pairs[i]
        return ParityFinding(check="advantages", cause="reward", row=src.row, role=src.role,
                             source_value=src.advantage, mint_value=mint.advantage, message=message, fix=fix)
    else:
        message = "train.py and the source weight whole sequences differently (one factor per sequence)."
        fix = "Normalise the loss per sequence the way the source does."
    i = next(iter(factors))
    src, mint = pairs[i]
    return ParityFinding(
        check="weights", cause="normalisation", row=src.row, role=src.role,
        source_value=next(w for w in src.weights if w), mint_value=next(w for w in mint.weights if w),
        message=message, fix=fix,
    )  # fmt: skip


def _group_baseline_finding(pairs: list[tuple[SequenceRecord, SequenceRecord]], config: dict) -> ParityFinding | None:
    """train.py centres each group's advantages (GRPO's baseline) where the source does not: an
    estimator with a batch-wide baseline (REINFORCE++ whitens returns over the batch's tokens)."""
    def centred(side: int) -> bool:
        groups: dict[int | None, list[float]] = defaultdict(list)
        for pair in pairs:
            groups[pair[0].row].append(pair[side].advantage or 0.0)
        size = max((abs(a) for values in groups.values() for a in values), default=0.0) or 1.0
        return all(abs(sum(values)) <= 1e-4 * size * len(values) for values in groups.values())

    if not pairs or centred(0) or not centred(1):
        return None
    estimator = config.get("adv_estimator") or config.get("advantage_estimator") or "its estimator"
    src, mint = pairs[0]
    return ParityFinding(
        check="advantages", cause="setting", row=src.row, role=src.role, source_value=src.advantage,
        mint_value=mint.advantage,
        message=f"train.py centres each group's advantages on the group's mean reward (GRPO's baseline); the source's "
        f"{estimator} does not (its baseline and scale are taken over the whole batch), so the same rewards give other "
        "advantages.",
        fix=f"Port the source's advantage estimator ({estimator}) into train.py where it computes the group "
        "advantages; the scaffold's GRPO baseline is not the same objective.",
    )  # fmt: skip


def explain_constant(
    c: float, trained_tokens: int, kind: str, config: dict | None = None
) -> tuple[str, ParityFinding | None]:
    """What a constant c means for the learning rate, or the finding when c is a missing normalisation."""
    group = (config or {}).get("num_generations")
    if kind == "grpo" and isinstance(group, int) and group > 1 and _close(c, math.sqrt(group / (group - 1)), 1e-3):
        return (
            f"{c:.6g} = sqrt({group}/{group - 1}): the source divides the advantages by the group's sample standard "
            "deviation (n - 1), train.py by the population one (n). One constant for every step: Adam's update is "
            "unchanged, so the learning rate carries over.",
            None,
        )
    if kind == "dpo":
        return (
            f"{c:.6g}: the source's per-token weight is the DPO gradient factor beta * sigmoid(-margin) / pairs on "
            "every answer token; train.py's datums mark the same tokens with weight 1 and its DPO loss applies the "
            "same factor, so the objectives match.",
            None,
        )
    if trained_tokens > 1 and abs(c / trained_tokens - 1) < 0.02:
        return "", ParityFinding(
            check="weights", cause="normalisation", source_value=1 / trained_tokens, mint_value=1.0,
            message=f"train.py sums the loss over the step's {trained_tokens} trained tokens (MinT's default) where "
            "the source averages over them: every step's update would scale with its token count, not one constant.",
            fix='Set LOSS_NORMALIZATION = "token_mean" in train.py (weights of 1 / the step\'s trained tokens).',
        )  # fmt: skip
    if trained_tokens > 1 and abs(c * trained_tokens - 1) < 0.02:
        return "", ParityFinding(
            check="weights", cause="normalisation", source_value=1.0, mint_value=1 / trained_tokens,
            message=f"train.py averages the loss over the step's {trained_tokens} trained tokens; the source sums it.",
            fix='Set LOSS_NORMALIZATION = "sum" in train.py.',
        )  # fmt: skip
    if _close(c, 1.0):
        return "1: the same per-token weights, so the same learning rate means the same update.", None
    return (
        f"{c:.6g}: MinT's loss is {c:.6g} x the source's on every token. Adam (MinT's optim_step) divides the "
        "gradient by its running RMS, so a constant loss scale leaves the update unchanged (up to eps): keep the "
        f"learning rate. Under plain SGD the same learning rate would step {c:.6g} x as far.",
        None,
    )


# --- the whole comparison ----------------------------------------------------------------------------------


def pair_sequences(
    source: list[SequenceRecord], mint: list[SequenceRecord]
) -> tuple[list[tuple[SequenceRecord, SequenceRecord]], list[tuple[str, SequenceRecord]]]:
    """Source and MinT sequences of the same row and role, identical tokens first (a GRPO group has
    several completions per row), the rest in order; and what is left over on either side."""
    groups: dict[tuple, tuple[list, list]] = defaultdict(lambda: ([], []))
    for sequence in source:
        groups[(sequence.row, sequence.role)][0].append(sequence)
    for sequence in mint:
        groups[(sequence.row, sequence.role)][1].append(sequence)
    pairs, unpaired = [], []
    for key in sorted(groups, key=str):
        left, right = list(groups[key][0]), list(groups[key][1])
        for s in list(left):
            same = next((m for m in right if m.tokens == s.tokens), None)
            if same is not None:
                pairs.append((s, same))
                left.remove(s)
                right.remove(same)
        pairs += list(zip(left, right, strict=False))  # the longer side's rest is unpaired, below
        unpaired += [("the source", s) for s in left[len(right) :]] + [("train.py", m) for m in right[len(left) :]]
    return pairs, unpaired



def compare(source: SideRecord, mint: SideRecord, rows: list[dict], vocab: Vocab, report: ParityReport) -> None:
    """Fill `report` with the comparison of the two sides' first steps."""
    findings = report.findings
    report.kind, report.source_runner, report.rows = source.kind, source.runner, len(rows)
    report.source_loss, report.mint_loss = source.loss, mint.loss
    if source.kind != mint.kind:
        findings.append(ParityFinding(
            check="settings", cause="setting", source_value=source.kind, mint_value=mint.kind,
            message=f"the source trains {source.kind} ({source.runner}); train.py is a {mint.kind} script.",
            fix=f"Migrate to the {source.kind} scaffold.",
        ))  # fmt: skip
        return
    assign_rows(source.sequences, rows, vocab)
    assign_rows(mint.sequences, rows, vocab)
    pairs, unpaired = pair_sequences(source.sequences, mint.sequences)
    for side, sequence in unpaired:
        findings.append(ParityFinding(
            check="rows", cause="data", row=sequence.row, role=sequence.role,
            message=f"row {sequence.row} ({sequence.role}) is in {side}'s step only: the other side dropped it.",
            fix="Check the data step: the same rows, none filtered (length limits, empty answers).",
        ))  # fmt: skip
    report.sequences_compared = len(pairs)
    same_tokens = []
    for src, m in pairs:
        if src.tokens != m.tokens:
            findings.append(explain_tokens(src.tokens, m.tokens, vocab, src.row, src.role))
        else:
            same_tokens.append((src, m))
    report.sequences_same_tokens = len(same_tokens)
    report.tokens_equal = bool(pairs) and len(same_tokens) == len(pairs)
    if source.kind == "grpo" and (baseline := _group_baseline_finding(same_tokens, source.config)) is not None:
        # Another advantage baseline moves every advantage, zeroes some (a reward at its group's mean)
        # and flips signs: one cause, reported once, instead of its symptoms position by position.
        findings.append(baseline)
        report.positions_equal = not any(explain_positions(s, m, vocab, source.kind) for s, m in same_tokens)
        return
    position_findings = [
        f for src, m in same_tokens for f in explain_positions(src, m, vocab, source.kind, source.runner)
    ]
    findings += position_findings
    report.positions_equal = report.tokens_equal and not position_findings
    comparable = [(s, m) for s, m in same_tokens if not explain_positions(s, m, vocab, source.kind)]
    c, weight_findings = weight_constant(comparable, source.kind, source.config)
    findings += weight_findings
    if c is not None and report.tokens_equal and report.positions_equal:
        trained = sum(1 for s in source.sequences for w in s.weights if w != 0)
        meaning, problem = explain_constant(c, trained, source.kind, source.config)
        if problem is not None:
            findings.append(problem)
        else:
            report.weight_constant, report.weight_constant_meaning = c, meaning
    _compare_losses(source, mint, pairs, report)
    _compare_settings(source, mint, report)


def _compare_losses(
    source: SideRecord, mint: SideRecord, pairs: list[tuple[SequenceRecord, SequenceRecord]], report: ParityReport
) -> None:
    findings = report.findings
    if source.kind == "dpo":
        for src, m in pairs:
            if src.tokens != m.tokens or src.logprob_sum is None or m.logprob_sum is None:
                continue
            if abs(src.logprob_sum - m.logprob_sum) > LOSS_TOLERANCE * max(1.0, abs(src.logprob_sum)):
                findings.append(ParityFinding(
                    check="logprobs", cause="masking", row=src.row, role=src.role,
                    source_value=src.logprob_sum, mint_value=m.logprob_sum,
                    message=f"row {src.row} ({src.role}): the answer's summed log-probability differs.",
                    fix="Sum the log-probabilities over the same answer tokens as the source.",
                ))  # fmt: skip
        scale = 1.0
    else:
        scale = report.weight_constant
    if scale is None or source.loss is None or mint.loss is None or not report.positions_equal:
        return
    # A GRPO loss of centred advantages sums terms of both signs to near 0: measure against their size.
    size = sum(abs(w) for s, _ in pairs for w in s.weights) if source.kind == "grpo" else 0.0
    error = abs(mint.loss / scale - source.loss) / max(abs(source.loss), size, 1e-12)
    report.loss_relative_error = error
    if error >= LOSS_TOLERANCE:
        findings.append(ParityFinding(
            check="loss", cause="unknown", source_value=source.loss, mint_value=mint.loss,
            message=f"same tokens and weights, but the step-0 loss differs after the constant (relative error "
            f"{error:.2g} >= {LOSS_TOLERANCE:g}): the two sides did not score the same model in float32.",
            fix=None,
        ))  # fmt: skip


def _compare_settings(source: SideRecord, mint: SideRecord, report: ParityReport) -> None:
    config, findings = source.config, report.findings
    if config.get("packing"):
        findings.append(ParityFinding(
            check="settings", severity="warning", cause="setting", source_value=True, mint_value=False,
            message="the source packs several examples into each max_length block; train.py trains them one per "
            "sequence, so their tokens no longer attend across examples.",
            fix=None,
        ))  # fmt: skip
    if source.kind == "dpo":
        beta = config.get("beta")
        if beta is not None and mint.config.get("beta") is not None and not _close(beta, mint.config["beta"], 1e-9):
            findings.append(ParityFinding(
                check="settings", cause="setting", source_value=beta, mint_value=mint.config["beta"],
                message=f"DPO beta: the source uses {beta}, train.py {mint.config['beta']}.",
                fix=f"Set BETA = {beta} in train.py.",
            ))  # fmt: skip
        loss_types = config.get("loss_types") or [config.get("loss_type") or "sigmoid"]
        if isinstance(loss_types, str):
            loss_types = [loss_types]
        if list(loss_types) != ["sigmoid"]:
            findings.append(ParityFinding(
                check="settings", cause="loss_type", source_value=loss_types, mint_value="sigmoid",
                message=f"the source's DPO loss is {loss_types}; train.py's dpo_loss_fn is the sigmoid loss.",
                fix="Write the source's loss into dpo_loss_fn (it receives the same per-token log-probabilities).",
            ))  # fmt: skip
