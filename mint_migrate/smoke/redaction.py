"""Keys out of everything a smoke run reports: a script may print its key anywhere, and every
verdict field, log line and progress message that comes from its output passes through here.

One list decides what is a secret:
- the value of every variable the run can see whose name says it is one (SECRET_NAMES, and any
  name with KEY, TOKEN, SECRET, PASSWORD or CREDENTIALS as a word: MY_SERVICE_TOKEN): in the
  environment, in every .env file the script reads (mint_migrate.dotenv), and in the CLI's own
  arguments (`--api-key VALUE`, `--hf-token=VALUE`);
- strings shaped like keys: sk-/tml- keys, Hugging Face, GitHub, Slack, AWS and Google tokens,
  JWTs, `Bearer ...`;
- credentials in URLs (user:password@, `?key=`, `&token=`, `access_token=` ...) and `token=VALUE`
  assignments in free text.
A known value is replaced wherever it appears, glued to other characters or not.
"""

import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel

from mint_migrate.dotenv import dotenv_values
from mint_migrate.endpoint import redact_url_credentials

SECRET_NAMES = (
    "MINT_API_KEY", "TINKER_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN", "HF_API_TOKEN",
    "WANDB_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "AZURE_OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "COHERE_API_KEY",
    "MISTRAL_API_KEY", "TOGETHER_API_KEY", "GROQ_API_KEY", "DEEPSEEK_API_KEY", "DASHSCOPE_API_KEY",
    "MODELSCOPE_API_TOKEN", "COMET_API_KEY", "NEPTUNE_API_TOKEN", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
    "SLACK_TOKEN",
)  # fmt: skip
_SECRET_WORD = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)")
_NOT_SECRET = {"TINKER_TELEMETRY", "MINT_PROCESS_TAG"}
MIN_SECRET_CHARS = 6  # shorter values ("1", "true") are not keys, and replacing them would garble the text

_PATTERNS = [
    re.compile(r"\b(?:sk|tml)-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"(?:sk|tml)-[A-Za-z0-9_\-]{16,}"),  # glued to a word: `keysk-...`
    re.compile(r"hf_[A-Za-z0-9]{24,}"),
    re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    re.compile(r"xox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{35}"),
    re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+"),
]
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9_\-.=+/]{8,}")
# `token=abc123...`, `api_key: "..."` in free text: a value of 8+ characters with a digit in it
# (so `tokens=512` and `pad_token=<|endoftext|>` stay as they are).
_ASSIGNED = re.compile(
    r"(?i)((?:api[_-]?key|access[_-]?key|secret|token|password|passwd)\s*[=:]\s*['\"]?)(?=[A-Za-z0-9_\-./+]*\d)[A-Za-z0-9_\-./+=]{8,}"
)


def is_secret_name(name: str) -> bool:
    """Whether a variable (or a flag, dashes read as underscores) of this name holds a secret."""
    upper = name.strip().lstrip("-").upper().replace("-", "_")
    return upper not in _NOT_SECRET and (upper in SECRET_NAMES or bool(_SECRET_WORD.search(upper)))


def _values(pairs: Iterable[tuple[str, str]]) -> list[str]:
    return [value.strip() for name, value in pairs if is_secret_name(name) and len(value.strip()) >= MIN_SECRET_CHARS]


def argument_secrets(argv: Sequence[str]) -> list[str]:
    """Values given to secret-named flags in a command line: `--api-key VALUE`, `--hf-token=VALUE`."""
    found = []
    for i, arg in enumerate(argv):
        if not arg.startswith("-"):
            continue
        name, eq, value = arg.partition("=")
        if not eq and i + 1 < len(argv):
            value = argv[i + 1]
        found += _values([(name, value)])
    return found


def visible_secrets(script: Path | None = None, argv: Sequence[str] | None = None) -> list[str]:
    """Every secret a run of `script` can see: the environment, the .env files it reads, and this
    process's own command line."""
    found = _values(os.environ.items())
    found += _values(dotenv_values(script).items())
    found += argument_secrets(sys.argv[1:] if argv is None else argv)
    return sorted(set(found), key=len, reverse=True)


def redact(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """`text` with the given secrets, the environment's, and anything shaped like a key, a token or
    a URL credential as ***."""
    known = {s.strip() for s in (*secrets, *_values(os.environ.items())) if s and len(s.strip()) >= 4}
    for secret in sorted(known, key=len, reverse=True):  # longest first: a key containing another
        text = text.replace(secret, "***")
    for pattern in _PATTERNS:
        text = pattern.sub("***", text)
    text = _BEARER.sub(r"\1***", text)
    text = redact_url_credentials(text)
    return _ASSIGNED.sub(r"\1***", text)


def redact_model(model: BaseModel, secrets: list[str] | tuple[str, ...] = ()) -> None:
    """Redact every string in `model`, its nested models, lists and dicts, in place."""

    def clean(value):
        if isinstance(value, str):
            return redact(value, secrets)
        if isinstance(value, BaseModel):
            redact_model(value, secrets)
            return value
        if isinstance(value, list):
            return [clean(item) for item in value]
        if isinstance(value, dict):
            return {clean(key): clean(item) for key, item in value.items()}
        return value

    for name in type(model).model_fields:
        setattr(model, name, clean(getattr(model, name)))
