"""Turn the text of a command-line or config value into a Python value, the way the tools would.

Hydra/OmegaConf, argparse `type=float` and HfArgumentParser all read `1e-6` as a float, while
PyYAML's YAML 1.1 resolver leaves it a string; values here follow the training tools.
"""

import re
from typing import Any

_INT = re.compile(r"[-+]?\d+\Z")
_FLOAT = re.compile(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?\Z")
_TRUE = {"true", "yes", "on"}
_FALSE = {"false", "no", "off"}
_NULL = {"null", "none", "~"}
_MAX_DIGITS = 4000


def parse_scalar(text: str) -> Any:
    """`"1e-6"` -> 1e-06, `"8"` -> 8, `"True"` -> True, `"null"` -> None, `"[a,b]"` -> ["a", "b"]."""
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    low = s.lower()
    if _INT.match(s):
        if len(s) > _MAX_DIGITS:  # Python refuses to convert longer ones (int_max_str_digits): keep the text
            return s
        return int(s)
    if _FLOAT.match(s):
        return float(s)
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    if low in _NULL:
        return None
    if s.startswith("[") and s.endswith("]"):
        inner = s[1:-1].strip()
        return [parse_scalar(part.strip()) for part in _split_top(inner)] if inner else []
    return text  # a string keeps its blanks: `$'...\n'` in a shell word, `" "` as a separator


def looks_numeric(text: str) -> bool:
    return bool(_FLOAT.match(text.strip()))


def _split_top(text: str) -> list[str]:
    """Split `a, [b, c], 'd,e'` on top-level commas."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in (p.strip() for p in parts) if p]


def as_number(value: Any) -> float | int | None:
    """A number read from the inputs, or None if the value is not one (bools are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str) and looks_numeric(value):
        return parse_scalar(value)
    return None


def as_int(value: Any) -> int | None:
    number = as_number(value)
    if number is None or float(number) != int(number):
        return None
    return int(number)
