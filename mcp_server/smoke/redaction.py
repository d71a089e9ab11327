"""Keys out of everything a smoke run reports: a script may print its key anywhere, and every
verdict field, log line and progress message that comes from its output passes through here."""

import re

from pydantic import BaseModel

_API_KEY = re.compile(r"\b(?:sk|tml)-[A-Za-z0-9_\-]{6,}")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9_\-.=]{8,}")


def redact(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """`text` with the given secrets, and anything that looks like an API key or token, as ***."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    text = _API_KEY.sub("***", text)
    text = _JWT.sub("***", text)
    return _BEARER.sub(r"\1***", text)


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
