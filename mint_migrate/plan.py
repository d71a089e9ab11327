"""Pydantic models shared by every stage: analyze -> plan -> render -> lint -> preflight -> smoke.

The MigrationPlan JSON is an interface (DESIGN.md): `settings` has exactly the keys below, each a
Setting traced to `file:line`, or null when the inputs do not say it. Nothing here guesses.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mint_migrate.frameworks import FRAMEWORK_NAMES, REWARD_STYLES
from mint_migrate.sdk_facts import LOSS_NAMES

# Built from the registry (mint_migrate/frameworks.py); "unknown" is for plans that could not tell.
Framework = Literal[(*FRAMEWORK_NAMES, "unknown")]
Algorithm = Literal[
    "sft", "dpo", "grpo", "ppo", "reinforce", "kto", "orpo", "reward_model", "distillation", "other"
]
ScaffoldKind = Literal["sft", "grpo", "dpo", "distill"]
LossFn = Literal[LOSS_NAMES]  # tinker 0.22.0 LossFnType (sdk_facts)
Severity = Literal["error", "warning"]


SettingValue = bool | int | float | str | list[str] | list[float]


# `confirmed_by` appears only when set: the Settings JSON keeps DESIGN.md's {"value", "source"} shape.
_CONFIRMED = Field(default=None, exclude_if=lambda v: v is None,
                   description="'agent': given by the caller with a citation the tool checked against the line.")


class Setting(BaseModel):
    """One value read from the inputs, with where it was read (`path:line`)."""

    model_config = ConfigDict(extra="forbid")
    value: SettingValue
    source: str
    confirmed_by: Literal["agent"] | None = _CONFIRMED


class LoraValue(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rank: int | None = None
    alpha: float | None = None
    target_modules: list[str] | str | None = None


class LoraSetting(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: LoraValue
    source: str
    confirmed_by: Literal["agent"] | None = _CONFIRMED


class Settings(BaseModel):
    """Exactly the keys DESIGN.md names; a missing value is null, never a guess."""

    model_config = ConfigDict(extra="forbid")
    base_model: Setting | None = None
    dataset: Setting | None = None
    learning_rate: Setting | None = None
    per_device_batch_size: Setting | None = None
    global_batch_size: Setting | None = None
    gradient_accumulation_steps: Setting | None = None
    num_epochs: Setting | None = None
    max_steps: Setting | None = None
    max_seq_length: Setting | None = None
    max_prompt_length: Setting | None = None
    max_response_length: Setting | None = None
    lora: LoraSetting | None = None
    beta: Setting | None = None
    num_generations: Setting | None = None
    kl_coef: Setting | None = None
    clip_ratio: Setting | None = None
    temperature: Setting | None = None
    reward_functions: Setting | None = None


SETTING_KEYS: tuple[str, ...] = tuple(Settings.model_fields)


class MintChoices(BaseModel):
    """What the MinT train.py will use, each choice with the reason for it."""

    model_config = ConfigDict(extra="forbid")
    kind: ScaffoldKind
    loss_fn: LossFn
    loss_fn_config: dict[str, float] | None = None
    base_model: str
    learning_rate: float
    learning_rate_reason: str
    lora_rank: int
    batch_size: int | None = None
    group_size: int | None = None
    groups_per_batch: int | None = None
    max_tokens: int | None = None
    max_prompt_tokens: int | None = None
    max_length: int | None = None
    temperature: float | None = None
    beta: float | None = None
    steps: int | None = None
    throughput: bool = Field(default=False, description="grpo: the throughput variant of the scaffold.")
    optimizer: dict[str, float] = Field(
        default_factory=dict,
        description="types.AdamParams settings (beta1, beta2, eps, weight_decay, grad_clip_norm): the source's "
        "stated values, else its optimizer's or framework's defaults, else MinT's; each origin is in `reasons`.",
    )
    save_every: int | None = Field(default=None, description="Checkpoint every N steps, as the source saves.")
    seed: int | None = Field(default=None, description="The source's seed (data order and sampling).")
    reasons: list[str] = Field(default_factory=list)


class PlanWarning(BaseModel):
    """Something that cannot move as-is, with the replacement chosen for it."""

    model_config = ConfigDict(extra="forbid")
    code: str
    message: str
    source: str | None = None


class Construct(BaseModel):
    """One row of MIGRATION.md's side-by-side table."""

    model_config = ConfigDict(extra="forbid")
    source: str
    location: str | None = None
    mint: str
    note: str | None = None


DataFormat = Literal[
    "messages", "text", "prompt_completion", "preference", "unpaired_preference", "prompt_answer", "unknown"
]
LrSchedule = Literal["constant", "linear", "cosine"]
LossNormalization = Literal["sum", "token_mean", "sequence_mean", "constant"]
RewardStyle = Literal[tuple(REWARD_STYLES)]  # mint_migrate/frameworks.py: one row per calling convention


class DataPlan(BaseModel):
    """Where the source's training data lives and how its rows become the rows train.py reads.

    `fields` maps each column train.py reads (prompt, answer, completion, messages, text, chosen,
    rejected, label) to the source's column; a dotted name reaches into a nested column
    (verl's `reward_model.ground_truth`). prepare_data.py and train.py apply the same mapping.
    """

    model_config = ConfigDict(extra="forbid")
    source: str | None = Field(default=None, description="Hub dataset id or file path, as the source writes it.")
    source_kind: Literal["hub", "local", "unknown"] = "unknown"
    local_path: str | None = Field(
        default=None, description="The file on this machine (absolute; train.py gets it relative to itself)."
    )
    subset: str | None = Field(default=None, description="The Hub dataset's config name (load_dataset's 2nd arg).")
    split: str | None = None
    format: DataFormat = "unknown"
    fields: dict[str, str] = Field(default_factory=dict)
    chat_template: bool | None = Field(
        default=None, description="True: string prompts become a user message through the chat template."
    )
    system_prompt: str | None = None
    prompt_template: str | None = Field(default=None, description="A format string with {} for the prompt.")
    answer_after: str | None = Field(default=None, description="Keep the answer text after this marker.")
    max_samples: int | None = None
    source_loc: str | None = None
    notes: list[str] = Field(default_factory=list)


class RewardFunction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    weight: float = 1.0


class RewardPlan(BaseModel):
    """The user's reward code and how train.py calls it (its framework's signature), or why it cannot."""

    model_config = ConfigDict(extra="forbid")
    style: RewardStyle
    status: Literal["user", "placeholder"]
    functions: list[RewardFunction] = Field(default_factory=list)
    file: str | None = Field(default=None, description="The module that defines the functions (absolute path).")
    extract: bool = Field(
        default=False, description="True: the functions sit in the training script and are copied into rewards.py."
    )
    kwargs: dict[str, SettingValue] = Field(default_factory=dict, description="Extra keyword arguments (verl).")
    source: str | None = None
    reason: str = ""


class SchedulePlan(BaseModel):
    """How long and in what shape the source trains: epochs, LR schedule, updates per batch, loss scale."""

    model_config = ConfigDict(extra="forbid")
    epochs: float | None = None
    lr_schedule: LrSchedule = "constant"
    warmup_steps: int | None = None
    warmup_ratio: float | None = None
    min_lr_ratio: float = 0.0
    minibatches: int = Field(default=1, description="optim_steps per sampled batch (PPO mini-batches).")
    updates_per_batch: int = Field(default=1, description="Passes over each sampled batch (ppo_epochs).")
    normalize_advantages: bool = Field(default=False, description="Divide advantages by the group std.")
    loss_normalization: LossNormalization = "sum"
    # conversation: every token of a 'messages' row, the completion of a prompt/completion row (TRL's default)
    train_on: Literal["completion", "all", "conversation"] = "completion"
    reasons: list[str] = Field(default_factory=list)


class SettingUse(BaseModel):
    """What became of one setting the inputs state: the train.py constant that carries it, or why none does."""

    model_config = ConfigDict(extra="forbid")
    key: str
    applied: bool
    constant: str | None = None
    value: SettingValue | dict | None = None
    note: str = ""


Disposition = Literal["carried", "changed", "not_carried", "server_side"]


class LedgerItem(BaseModel):
    """One setting the inputs state, whatever it is, and what the migration did with it.

    `key` is the name as the source writes it (a flag without its dashes, a dotted override or YAML
    path, a keyword, a constant); `setting` is the canonical Settings key when it is one of them.
    Nothing the inputs state is left out of the ledger: carried, changed (with why), not carried
    (with why and what the user can do) or owned by the MinT service.
    """

    model_config = ConfigDict(extra="forbid")
    key: str
    setting: str | None = None
    value: SettingValue | dict | None
    source: str
    disposition: Disposition
    constant: str | None = Field(default=None, description="The train.py constant that holds it (carried/changed).")
    reason: str = ""
    framework_default: bool = Field(
        default=False, description="The value is the source framework's default, not written in the inputs."
    )
    confirmed_by: Literal["agent"] | None = Field(
        default=None, description="'agent': the value was given by the caller with a citation the tool checked."
    )


class MigrationPlan(BaseModel):
    framework: Framework
    algorithm: Algorithm
    variant: str | None = Field(
        default=None,
        description="The algorithm's variant when the inputs name one: gspo, dapo, dr_grpo, rloo, cpo, ...",
    )
    settings: Settings = Field(default_factory=Settings)
    framework_defaults: dict[str, Setting] = Field(
        default_factory=dict,
        description="Values the source framework would use when the inputs say nothing; "
        "source is '<framework> default'. Reported, never treated as read.",
    )
    mint: MintChoices | None = None
    warnings: list[PlanWarning] = Field(default_factory=list)
    constructs: list[Construct] = Field(default_factory=list)
    data: DataPlan | None = Field(default=None, description="The source's dataset and its conversion.")
    reward: RewardPlan | None = Field(default=None, description="RL: the user's reward and its adapter.")
    schedule: SchedulePlan | None = Field(default=None, description="Epochs, LR schedule, updates, loss scale.")
    setting_uses: list[SettingUse] = Field(
        default_factory=list, description="Each stated setting: applied in train.py (which constant) or why not."
    )
    ledger: list[LedgerItem] = Field(
        default_factory=list,
        description="Every setting the inputs state (not only the canonical ones) and its disposition.",
    )
    unmapped: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Canonical settings not found, each with the candidate lines (file:line: text) the "
        "harvest saw, so a reader knows where to look.",
    )
    inputs: list[str] = Field(default_factory=list)
    files_written: list[str] = Field(default_factory=list)


class Finding(BaseModel):
    """One lint result: a MinT pitfall at a place in a file, and how to fix it."""

    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    severity: Severity
    path: str
    line: int
    col: int
    message: str
    fix: str
    fixable: bool = False
