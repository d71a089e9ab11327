"""The bad-script corpus: for every rule a file where it fires (on exactly the lines marked
`# expect: MINTxxx`) and a near miss where nothing fires; correct MinT code and the shipped
scaffolds lint clean."""

import re
from pathlib import Path

import pytest

from mint_migrate.lint import RULES, lint_path

CORPUS = Path(__file__).parent / "lint_corpus"
EXPECT = re.compile(r"expect: (MINT\d{3}(?:, MINT\d{3})*)")


def expected(path: Path) -> set[tuple[str, int]]:
    marks = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = EXPECT.search(line)
        if match:
            marks |= {(rule, number) for rule in match.group(1).split(", ")}
    return marks


def found(path: Path) -> set[tuple[str, int]]:
    report = lint_path(path)
    assert report.parse_error is None, report.parse_error
    return {(f.id, f.line) for f in report.findings}


def test_every_rule_has_a_firing_case_and_a_near_miss():
    for rule_id in RULES:
        fires, near_miss = CORPUS / f"{rule_id}_fires.py", CORPUS / f"{rule_id}_near_miss.py"
        assert fires.is_file() and near_miss.is_file(), f"{rule_id} needs {fires.name} and {near_miss.name}"
        assert any(r == rule_id for r, _ in expected(fires)), f"{fires.name} marks no {rule_id} line"


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_fires_exactly_where_marked(rule_id):
    path = CORPUS / f"{rule_id}_fires.py"
    assert found(path) == expected(path)


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_near_miss_is_clean(rule_id):
    assert found(CORPUS / f"{rule_id}_near_miss.py") == set()


@pytest.mark.parametrize("path", sorted((CORPUS / "clean").glob("*.py")), ids=lambda p: p.name)
def test_correct_mint_code_is_clean(path):
    assert found(path) == set()


def test_findings_carry_location_severity_message_and_fix():
    report = lint_path(CORPUS / "MINT003_fires.py")
    finding = report.findings[0]
    assert (finding.id, finding.name, finding.severity) == ("MINT003", "forward-backward-output-loss", "error")
    assert (finding.line, finding.col) == (6, 11)
    assert finding.path.endswith("MINT003_fires.py")
    assert "loss" in finding.message and 'metrics["loss:sum"]' in finding.fix
    assert finding.fixable
    assert report.errors == 3 and report.warnings == 0


def _scaffold_cases():
    cases = [(kind, None) for kind in ("sft", "grpo", "dpo", "distill")]
    return cases + [("grpo", loss) for loss in ("ppo", "cispo", "dro")]


@pytest.mark.parametrize("kind,loss_fn", _scaffold_cases())
def test_rendered_scaffolds_lint_clean(kind, loss_fn):
    from mint_migrate.lint import lint_source
    from mint_migrate.render import ScaffoldOptions, render_scaffold

    source = render_scaffold(ScaffoldOptions(kind=kind, loss_fn=loss_fn))
    report = lint_source(source, f"{kind}.py")
    assert report.parse_error is None
    assert [(f.id, f.line, f.message) for f in report.findings] == []
