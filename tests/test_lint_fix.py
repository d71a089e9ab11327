"""`--fix` codemods: each fixed file equals its golden, parses, and lints clean for the rules
that were fixed; unsafe cases keep their finding; the CLI writes the file."""

import json
from pathlib import Path

import libcst as cst
import pytest

from mint_migrate.cli import main
from mint_migrate.lint import lint_path, lint_source

FIXES = Path(__file__).parent / "lint_corpus" / "fix"
CASES = sorted(p for p in FIXES.glob("*.py") if not p.name.endswith(".fixed.py"))


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_fix_round_trip(path):
    source = path.read_text(encoding="utf-8")
    report = lint_source(source, str(path), fix=True)
    golden = path.with_name(path.stem + ".fixed.py").read_text(encoding="utf-8")
    assert report.fixed_source == golden
    cst.parse_module(report.fixed_source)
    compile(report.fixed_source, str(path), "exec")
    # findings describe the original source
    assert report.findings == lint_source(source, str(path)).findings
    fixable = {f.id for f in report.findings if f.fixable}
    assert set(report.fixes_applied) == fixable
    after = lint_source(report.fixed_source)
    assert not any(f.fixable for f in after.findings)
    # what stays of the fixed rules is exactly what they could not fix (e.g. an env-var write)
    left = [f.id for f in after.findings if f.id in report.fixes_applied]
    assert left == [f.id for f in report.findings if f.id in report.fixes_applied and not f.fixable]
    # the fix is idempotent
    assert lint_source(report.fixed_source, fix=True).fixed_source == report.fixed_source


def test_each_autofix_rule_has_a_round_trip_case():
    from mint_migrate.lint import RULES

    applied = set()
    for path in CASES:
        applied |= set(lint_source(path.read_text(encoding="utf-8"), fix=True).fixes_applied)
    assert applied == {r.id for r in RULES.values() if r.autofix}


def test_resume_is_rewritten_only_when_safe():
    report = lint_source((FIXES / "resume_unsafe.py").read_text(encoding="utf-8"), fix=True)
    assert [(f.id, f.fixable) for f in report.findings] == [("MINT024", False), ("MINT024", False)]
    assert "not fixed automatically" in report.findings[0].fix
    assert report.fixes_applied == []
    safe = lint_source((FIXES / "resume.py").read_text(encoding="utf-8"), fix=True)
    assert "create_training_client_from_state" not in safe.fixed_source
    assert "training_client.load_state_with_optimizer(args.resume).result()" in safe.fixed_source


@pytest.mark.slow
def test_fixed_sampling_params_really_stop(tmp_path):
    """The codemod's output is what the pinned SDK keeps: `stop` survives, stop_token_ids did not."""
    fixed = lint_source("from mint import types\np = types.SamplingParams(max_tokens=4, stop_token_ids=[7])\n", fix=True)
    namespace: dict = {}
    exec(compile(fixed.fixed_source, "fixed.py", "exec"), namespace)
    assert namespace["p"].stop == [7]
    original: dict = {}
    exec("from mint import types\np = types.SamplingParams(max_tokens=4, stop_token_ids=[7])\n", original)
    assert original["p"].stop is None  # the trap the rule exists for


def test_cli_fix_writes_the_file_and_reports(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text((FIXES / "sdk_traps.py").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["lint", str(script), "--fix", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 1  # the findings describe the file before fixing
    assert report["fixes_applied"] == ["MINT001", "MINT003", "MINT004", "MINT005"]
    assert script.read_text(encoding="utf-8") == (FIXES / "sdk_traps.fixed.py").read_text(encoding="utf-8")
    with pytest.raises(SystemExit) as again:
        main(["lint", str(script)])
    assert again.value.code == 0
    assert lint_path(script).findings == []


def test_lint_without_fix_writes_nothing(tmp_path):
    script = tmp_path / "train.py"
    text = (FIXES / "import_bridge.py").read_text(encoding="utf-8")
    script.write_text(text, encoding="utf-8")
    report = lint_path(script)
    assert report.fixed_source is None and report.fixes_applied == []
    with pytest.raises(SystemExit):
        main(["lint", str(script)])
    assert script.read_text(encoding="utf-8") == text
