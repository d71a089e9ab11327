"""The one evaluator of constant arithmetic the tools do on user input, with bounds.

The analyzer reads `LR = 5 * 1e-6` (Python), lint reads the same, and the shell reader reads
`$((NODES * 8))` (bash). A hostile or clumsy source can ask for `10 ** 10 ** 10`, whose exact
integer Python would spend minutes and gigabytes computing, or `x = x * x` forty times over. Every
operation goes through `binary()`, which refuses (raises OutOfBounds, an OverflowError) any
integer result beyond MAX_BITS before computing it where the size is known in advance (powers,
shifts) and after it otherwise (the operands are already bounded, so that costs nothing).

Two modes:
- "python": Python's own semantics (true division gives a float, // and % floor, ** of a negative
  exponent gives a float); a complex result (`(-8) ** 0.5`) is refused.
- "bash": bash's `$(( ))`: signed 64-bit integers that wrap, division and modulo truncate toward
  zero (C), `**` with a negative exponent and division by zero are errors, shift counts are taken
  modulo 64 (what bash does on the machines it runs on).
"""

from typing import Literal

Mode = Literal["python", "bash"]
MAX_BITS = 4096  # far above any number a training config states; far below anything slow
OPS = ("+", "-", "*", "/", "//", "%", "**", "<<", ">>")

_WORD = 1 << 64


class OutOfBounds(OverflowError):
    """The result would be too large (or not a real number) for a constant the tools read."""


def binary(op: str, left: int | float, right: int | float, mode: Mode = "python") -> int | float:
    """`left op right` in `mode`. Raises OutOfBounds, ZeroDivisionError, or ValueError for an
    operator or operand the mode does not have."""
    if isinstance(left, bool) or isinstance(right, bool):
        left, right = int(left), int(right)
    if mode == "bash":
        return _bash(op, _int64(left), _int64(right))
    if op == "**":
        value = _python_power(left, right)
    elif op in ("<<", ">>"):
        if not (isinstance(left, int) and isinstance(right, int)):
            raise ValueError("shifts take integers")
        if right < 0:
            raise ValueError("negative shift count")
        if op == "<<" and left and left.bit_length() + right > MAX_BITS:
            raise OutOfBounds(f"{left} << {right} is too large")
        value = left << right if op == "<<" else left >> right
    elif op == "+":
        value = left + right
    elif op == "-":
        value = left - right
    elif op == "*":
        value = left * right
    elif op == "/":
        value = left / right
    elif op == "//":
        value = left // right
    elif op == "%":
        value = left % right
    else:
        raise ValueError(f"unknown operator {op!r}")
    return _bounded(value)


def unary(op: str, value: int | float, mode: Mode = "python") -> int | float:
    """`-value` or `+value` in `mode`."""
    if op not in ("-", "+"):
        raise ValueError(f"unknown operator {op!r}")
    if mode == "bash":
        return _signed(-_int64(value)) if op == "-" else _int64(value)
    return _bounded(-value if op == "-" else +value)


def _python_power(base: int | float, exponent: int | float) -> int | float:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        # |base| ** exponent has about exponent * bits(base) bits: known before computing it.
        if (abs(base).bit_length() - 1) * exponent > MAX_BITS:
            raise OutOfBounds(f"{base} ** {exponent} is too large")
    try:
        value = base**exponent
    except OverflowError as exc:  # float overflow: Python says so at once
        raise OutOfBounds(str(exc)) from None
    return _bounded(value)


def _bounded(value: object) -> int | float:
    if isinstance(value, complex):
        raise OutOfBounds("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise OutOfBounds("the result is too large")
    return value  # type: ignore[return-value]


def _int64(value: int | float) -> int:
    if not isinstance(value, int):
        raise ValueError("bash arithmetic has integers only")
    return _signed(value)


def _signed(value: int) -> int:
    value %= _WORD
    return value - _WORD if value >= _WORD >> 1 else value


def _bash(op: str, a: int, b: int) -> int:
    if op == "+":
        return _signed(a + b)
    if op == "-":
        return _signed(a - b)
    if op == "*":
        return _signed(a * b)
    if op in ("/", "//", "%"):
        if b == 0:
            raise ZeroDivisionError("division by 0")
        quotient = abs(a) // abs(b)  # C truncates toward zero
        if (a < 0) != (b < 0):
            quotient = -quotient
        return _signed(quotient) if op != "%" else _signed(a - b * quotient)
    if op == "**":
        if b < 0:
            raise ValueError("exponent less than 0")
        return _signed(pow(a, b, _WORD))  # modular: wraps as bash does, at any exponent, at once
    if op == "<<":
        return _signed(a << (b % 64))
    if op == ">>":
        return a >> (b % 64)
    raise ValueError(f"unknown operator {op!r}")
