"""What a smoke run returns: the verdict, its classified errors and the progress reports."""

from typing import Literal

from pydantic import BaseModel, Field

ErrorKind = Literal[
    "syntax_error",
    "import_error",
    "missing_credentials",
    "connection",
    "wrong_server",
    "auth",
    "sk_key_bug",
    "weights_info_404",
    "missing_result",
    "sdk_attribute",
    "reward_function",
    "bad_arguments",
    "server_error",
    "non_finite_loss",
    "nothing_trained",
    "too_few_steps",
    "no_metrics",
    "timeout",
    "interrupted",
    "server_start",
    "crashed_at_exit",
    "script_error",
    "parity",
]


class SmokeProgress(BaseModel):
    step: int
    total: int
    message: str


class SmokeError(BaseModel):
    """One classified failure: what kind, what happened, and what to do about it."""

    kind: ErrorKind
    message: str
    fix: str


class LeftProcess(BaseModel):
    """A process the script started that was still running when the run ended (then killed)."""

    pid: int
    command: str
    survived: bool = Field(default=False, description="Still running after SIGKILL: end it yourself.")


class SmokeVerdict(BaseModel):
    passed: bool
    target: Literal["local", "remote"]
    model: str | None = Field(default=None, description="The model that really ran (the server's, on local).")
    script: str = ""
    steps_requested: int = 0
    steps_done: int = 0
    first_step: int | None = None
    last_step: int | None = None
    loss_first: float | None = None
    loss_last: float | None = None
    median_step_s: float | None = None
    accepted_groups: int | None = Field(default=None, description="RL: groups whose rewards differed, all steps.")
    trained_groups: int | None = Field(default=None, description="RL: groups sent to forward_backward, all steps.")
    sample_text: str | None = Field(default=None, description="RL scripts: one sampled text, the last reported.")
    ran: str | None = Field(
        default=None,
        description="What the run trained on and scored with, from its RUN line: 'your data (32 rows of "
        "train.parquet), your reward (compute_score from gsm8k.py)' or 'built-in examples, placeholder reward'.",
    )
    data_rows: int | None = Field(default=None, description="Rows the run loaded (the first rows under --smoke).")
    data_file: str | None = Field(default=None, description="The data file it read; None: the built-in examples.")
    reward: str | None = Field(default=None, description="RL: the reward functions that ran, or 'placeholder'.")
    scope: Literal["plumbing", "task"] | None = Field(
        default=None,
        description="What a run proved: 'task' (the user's data and reward) or 'plumbing' (built-in examples or "
        "the placeholder reward where train.py knows the source's: it runs against MinT, nothing more).",
    )
    task_command: str | None = Field(default=None, description="plumbing: the one command that runs the user's task.")
    reward_calls: int | None = Field(default=None, description="RL: answers the reward scored (REWARD line).")
    reward_distinct: int | None = Field(default=None, description="RL: distinct values it returned.")
    checkpoint: str | None = None
    exit_code: int | None = None
    duration_s: float = 0.0
    base_url: str | None = None
    log_dir: str | None = Field(default=None, description="Where the script wrote metrics.jsonl, if it took --log-dir.")
    command: list[str] = Field(default_factory=list)
    left_running: list[LeftProcess] = Field(
        default_factory=list, description="Processes the script left running when it ended; all were killed."
    )
    notes: list[str] = Field(default_factory=list)
    errors: list[SmokeError] = Field(default_factory=list)
    log_tail: str = ""
