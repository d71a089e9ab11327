"""Mutated real inputs never crash the analysis: it returns a plan or raises MintMigrateError."""

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mint_migrate.analyze import analyze
from mint_migrate.errors import MintMigrateError

FIXTURES = Path(__file__).parent / "fixtures" / "migrate"
SOURCES = sorted(p for p in FIXTURES.glob("*/*/*") if p.suffix in {".py", ".sh", ".yaml"})
NOISE = ["\\", "'", '"', "$(", "$((", "${", "}", "=", "--", " -m ", "\n", ":", "[", "(", "#", "${x", "))", "\t"]


@st.composite
def mutated(draw):
    path = draw(st.sampled_from(SOURCES))
    lines = path.read_text().splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        action = draw(st.sampled_from(["drop", "dup", "noise", "cut"]))
        if not lines:
            break
        if action == "drop":
            lines.pop(i)
        elif action == "dup":
            lines.insert(i, lines[i])
        elif action == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        else:
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(st.sampled_from(NOISE)) + lines[i][at:]
    return path, "".join(lines)


@settings(max_examples=150, deadline=None)
@given(case=mutated())
def test_mutated_inputs_give_a_plan_or_a_clean_error(case):
    path, text = case
    with tempfile.TemporaryDirectory() as folder:  # one folder per example: launch scripts follow their neighbours
        target = Path(folder) / path.name
        target.write_text(text)
        try:
            plan = analyze(target, [])
        except MintMigrateError as exc:
            assert path.name in str(exc) or str(target) in str(exc)
            return
    assert plan.mint is not None and plan.mint.learning_rate > 0


@pytest.mark.parametrize("text", ["", "\n\n", "#!/bin/bash\n", "# only a comment\n"])
def test_empty_inputs_are_clean_errors(tmp_path, text):
    for name in ("a.py", "a.sh", "a.yaml"):
        (tmp_path / name).write_text(text)
        with pytest.raises(MintMigrateError):
            analyze(tmp_path / name, [])
