"""What each side of a parity check records, and the verdict: the pydantic models at its boundaries.

Both sides describe their first training step the same way, in the next-token convention MinT
uses: a sequence's `tokens`, and for each position t < len(tokens) - 1 the weight the step's loss
puts on predicting tokens[t + 1] (`weights[t]`; 0 = not trained). The source side measures its
weights from the real backward pass (the gradient of its loss with respect to each token's
log-probability); the MinT side takes them from the datums train.py sends to forward_backward.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Kind = Literal["sft", "dpo", "grpo"]
# passed: the objectives match. failed: they differ (each finding says what and where).
# inconclusive: a side did not run, so nothing was compared (the finding says why and the fix).
Verdict = Literal["passed", "failed", "inconclusive"]
Role = Literal["sequence", "chosen", "rejected", "completion"]


class SequenceRecord(BaseModel):
    """One training sequence of the first step."""

    model_config = ConfigDict(extra="forbid")
    role: Role = "sequence"
    tokens: list[int]
    weights: list[float] = Field(description="weights[t]: the loss weight of predicting tokens[t + 1].")
    logprob_sum: float | None = Field(default=None, description="DPO: summed log-probability of the trained tokens.")
    advantage: float | None = Field(default=None, description="GRPO: the sequence's advantage.")
    prompt_length: int | None = Field(default=None, description="GRPO: tokens of the prompt (the rest was sampled).")
    row: int | None = Field(default=None, description="Index of the data row it came from (set by the comparison).")


class SideRecord(BaseModel):
    """One side's first step: who ran it, its sequences and its step-0 loss."""

    model_config = ConfigDict(extra="forbid")
    side: Literal["source", "mint"]
    runner: str = Field(description="What really ran, e.g. 'trl.SFTTrainer' or 'train.py --parity-dump'.")
    kind: Kind
    loss: float | None = Field(default=None, description="The step-0 loss as this side computes it.")
    loss_name: str = ""
    sequences: list[SequenceRecord] = Field(default_factory=list)
    rows: list[dict[str, Any]] | None = Field(default=None, description="The data rows of the step, as loaded.")
    config: dict[str, Any] = Field(default_factory=dict, description="Settings that shape the objective.")
    notes: list[str] = Field(default_factory=list)
    seconds: float = 0.0


Check = Literal["run", "rows", "tokens", "positions", "weights", "loss", "logprobs", "advantages", "settings"]
Cause = Literal[
    "template_twice",
    "template_missing",
    "template",
    "masking",
    "eos",
    "bos",
    "truncation",
    "normalisation",
    "loss_type",
    "setting",
    "data",
    "reward",
    "source_run",
    "framework_version",
    "framework_missing",
    "not_supported",
    "mint_run",
    "unknown",
]


class ParityFinding(BaseModel):
    """One difference between the two sides, with where it is, both values and what likely causes it."""

    model_config = ConfigDict(extra="forbid")
    check: Check
    severity: Literal["error", "warning", "info"] = "error"
    cause: Cause = "unknown"
    row: int | None = None
    role: Role | None = None
    position: int | None = Field(default=None, description="Token position in the sequence (0-based).")
    source_value: Any = None
    mint_value: Any = None
    message: str
    fix: str | None = Field(default=None, description="What to change in train.py, when the migration is at fault.")


class ParityReport(BaseModel):
    """The verdict of `mint-migrate parity` / `check_parity`."""

    model_config = ConfigDict(extra="forbid")
    passed: bool
    verdict: Verdict = Field(
        default="failed",
        description="passed; failed (the objectives differ: see findings); inconclusive (a side did not run: "
        "the finding says why and what to do; nothing was compared).",
    )
    source: str
    train: str
    model: str = Field(description="The Hugging Face model folder both sides loaded.")
    kind: Kind | None = None
    source_runner: str | None = None
    rows: int = Field(default=0, description="Data rows in the compared step.")
    sequences_compared: int = 0
    sequences_same_tokens: int = Field(default=0, description="Compared sequences whose tokens are identical.")
    tokens_equal: bool = False
    positions_equal: bool = Field(default=False, description="Every compared sequence trains the same positions.")
    weight_constant: float | None = Field(
        default=None, description="c in weight_mint = c * weight_source, when one constant fits every token."
    )
    weight_constant_meaning: str | None = None
    source_loss: float | None = None
    mint_loss: float | None = None
    loss_relative_error: float | None = Field(
        default=None, description="|mint_loss / c - source_loss| / |source_loss| (float32 tolerance 1e-4)."
    )
    findings: list[ParityFinding] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)
    records_dir: str | None = Field(default=None, description="Where both sides' records were kept, if asked.")
