"""One bounded evaluator of constant arithmetic (mint_migrate/arithmetic.py) for the analyzer, lint and
the shell reader: a power tower is refused at once everywhere, and `$((...))` is bash's arithmetic,
checked against bash itself."""

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mint_migrate import arithmetic
from mint_migrate.analyze.shell import ShellScript
from mint_migrate.lint import lint_source

CLI = str(Path(sys.executable).parent / "mint-migrate")

TRL_WITH_A_TOWER = """\
from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

LR = 10 ** 10 ** 10
trainer = SFTTrainer(
    model="Qwen/Qwen3-0.6B",
    train_dataset=load_dataset("trl-lib/Capybara", split="train"),
    args=SFTConfig(output_dir="out", learning_rate=LR, per_device_train_batch_size=4),
)
trainer.train()
"""


def test_the_evaluator_refuses_a_power_tower_and_a_squaring_chain_before_computing_them():
    with pytest.raises(arithmetic.OutOfBounds):
        arithmetic.binary("**", 10, 10**10)
    with pytest.raises(arithmetic.OutOfBounds):
        arithmetic.binary("<<", 1, 10**9)
    value = 3
    with pytest.raises(arithmetic.OutOfBounds):
        for _ in range(64):
            value = arithmetic.binary("*", value, value)
    with pytest.raises(arithmetic.OutOfBounds):
        arithmetic.binary("**", -8, 0.5)  # complex
    assert arithmetic.binary("**", 2, 10) == 1024 and arithmetic.binary("/", 5, 2) == 2.5
    assert arithmetic.binary("%", -7, 3) == 2 and arithmetic.binary("%", -7, 3, mode="bash") == -1


def test_migrate_reads_past_a_power_tower_and_lint_refuses_it_the_same_way(tmp_path):
    script = tmp_path / "sft.py"
    script.write_text(TRL_WITH_A_TOWER, encoding="utf-8")
    done = subprocess.run([CLI, "migrate", str(script), "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    plan = json.loads(done.stdout)["plan"]
    assert plan["framework"] == "trl" and plan["settings"]["learning_rate"] is None  # refused, not computed
    assert plan["settings"]["per_device_batch_size"]["value"] == 4
    report = lint_source(TRL_WITH_A_TOWER)  # the same evaluator: no hang, no crash
    assert report.parse_error is None


def _bash(expression: str) -> int | None:
    done = subprocess.run(["bash", "-c", f"echo $(( {expression} ))"], capture_output=True, text=True, timeout=10)
    return int(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


def _ours(expression: str) -> int | None:
    script = ShellScript(f"X=$(( {expression} ))\npython t.py --x $X\n", "run.sh")
    arg = next(a for a in script.commands[0].args if a.name == "x")
    return arg.value.value if arg.value is not None else None


def _expression(rng: random.Random, depth: int = 0) -> str:
    if depth > 2 or rng.random() < 0.3:
        number = rng.choice([0, 1, 2, 3, 7, 10, 63, 64, 255, 2**31, 2**62, 2**63 - 1, rng.randint(-100, 100)])
        return str(number) if number >= 0 else f"({number})"
    op = rng.choice(["+", "-", "*", "/", "%", "**", "<<", ">>"])
    left, right = _expression(rng, depth + 1), _expression(rng, depth + 1)
    if op in ("<<", ">>"):
        right = str(rng.randint(0, 63))
    if op == "**":
        right = str(rng.randint(0, 70))
    sign = rng.choice(["", "", "-"])
    return f"{sign}({left} {op} {right})" if sign else f"{left} {op} {right}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")
def test_shell_arithmetic_is_bash_arithmetic_checked_against_bash():
    rng = random.Random(26)
    cases = ["-7 % 3", "7 % -3", "-7 / 2", "-2 ** 2", "2 ** 63", "2 ** 64 + 5", "(-9223372036854775807 - 1) / -1",
             "(-9223372036854775807 - 1) % -1", "-8 >> 1", "1 << 63", "3 ** 41", "0 ** 0"]
    cases += [_expression(rng) for _ in range(300)]
    compared = 0
    for expression in cases:
        expected = _bash(expression)
        assert _ours(expression) == expected, expression
        compared += expected is not None
    assert compared > 200  # most cases are valid bash: the comparison is not vacuous


def test_a_number_too_long_to_convert_stays_text():
    from mint_migrate.analyze.scalars import parse_scalar

    assert parse_scalar("9" * 5000) == "9" * 5000 and parse_scalar("12") == 12
