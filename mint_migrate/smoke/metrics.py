"""Reading a script's stdout: the line contract with the scaffolds (scaffolds/partials/runlog.py.j2).

`METRIC step=3 loss=1.2345 tokens=512 step_s=0.41` once per step (more keys allowed; RL scripts add
`accepted=` and `trained=`), a last `METRIC done=1 steps=N [checkpoint=PATH]`, `SAMPLE step=N
text="..."` (the text JSON-quoted), `RUN served_model=... data=... data_rows=N reward=...` naming
the model that really ran and whose data and reward it used, and `REWARD calls=N distinct=N min=X
max=X` saying what the reward returned.
"""

import json
import re

from pydantic import BaseModel, Field

_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def parse_fields(text: str) -> dict[str, str]:
    """`a=1 b=x text="..."` -> {"a": "1", "b": "x", "text": "..."} (quoted values JSON-decoded)."""
    fields = {}
    for key, value in _FIELD.findall(text):
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = value[1:-1]
        fields[key] = value
    return fields


def number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


class RunOutput(BaseModel):
    """What a script's stdout said, line by line."""

    steps: list[dict[str, str]] = Field(default_factory=list)
    done: dict[str, str] | None = None
    samples: list[dict[str, str]] = Field(default_factory=list)
    run: dict[str, str] | None = None
    reward: dict[str, str] | None = None

    def add(self, line: str) -> dict[str, str] | None:
        """Record one line; returns the fields of a METRIC step line (for progress)."""
        tag, _, rest = line.strip().partition(" ")
        if tag == "METRIC":
            fields = parse_fields(rest)
            if "done" in fields:
                self.done = fields
            elif "step" in fields:
                self.steps.append(fields)
                return fields
        elif tag == "SAMPLE":
            self.samples.append(parse_fields(rest))
        elif tag == "RUN":
            self.run = parse_fields(rest)
        elif tag == "REWARD":
            self.reward = parse_fields(rest)
        return None

    def losses(self) -> list[float]:
        return [v for v in (number(s.get("loss")) for s in self.steps) if v is not None]

    @property
    def rl(self) -> bool:
        """RL scripts report accepted/trained groups on their METRIC lines."""
        return any("accepted" in s for s in self.steps)

    def accepted_groups(self) -> int:
        return int(sum(number(s.get("accepted")) or 0 for s in self.steps))

    def trained_groups(self) -> int:
        return int(sum(number(s.get("trained", s.get("accepted"))) or 0 for s in self.steps))
