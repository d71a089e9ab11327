"""The lint engine's contract: reports, parse errors, the CLI (exit codes, JSON, SARIF), the MCP
tool, the generated rule docs, and the registry's documentation."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcp import Client

from mint_migrate.cli import main
from mint_migrate.lint import RULES, lint_path, lint_source
from mint_migrate.lint.docs import render
from mint_migrate.lint.sarif import to_sarif
from mint_migrate.server import create_server

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).parent / "lint_corpus"
SECRET = "sk-mint-Q7f3Zx9LpW2vB8nK4tYc"


def run_cli(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def test_parse_error_has_location_and_never_echoes_the_line():
    source = f'import mint\nclient = mint.ServiceClient(api_key="{SECRET}"\nx = (\n'
    report = lint_source(source, "broken.py")
    assert report.parse_error is not None and report.findings == []
    assert report.parse_error_line is not None and report.parse_error_line >= 2
    assert report.parse_error.startswith(f"line {report.parse_error_line}, col {report.parse_error_col}:")
    assert SECRET not in report.model_dump_json()


def test_parse_error_exits_2_on_the_cli(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n    pass\n", encoding="utf-8")
    code, out, _ = run_cli(["lint", str(bad)], capsys)
    assert code == 2 and "cannot parse: line 1" in out


def test_unreadable_inputs(tmp_path, capsys):
    with pytest.raises(FileNotFoundError):
        lint_path(tmp_path / "missing.py")
    code, _, err = run_cli(["lint", str(tmp_path / "missing.py")], capsys)
    assert code == 2 and "cannot read" in err
    binary = tmp_path / "weights.py"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    code, _, err = run_cli(["lint", str(binary), "--json"], capsys)
    assert code == 2 and "UTF-8" in err


def test_exit_codes_and_json(capsys):
    code, out, _ = run_cli(["lint", str(CORPUS / "MINT003_fires.py"), "--json"], capsys)
    report = json.loads(out)  # exactly one JSON document
    assert code == 1 and report["errors"] == 3
    assert {f["id"] for f in report["findings"]} == {"MINT003"}
    code, out, _ = run_cli(["lint", str(CORPUS / "MINT025_fires.py")], capsys)  # warnings only
    assert code == 0 and "MINT025 [warning]" in out and "0 error(s), 1 warning(s)" in out
    code, out, _ = run_cli(["lint", str(CORPUS / "clean" / "sft_loop.py")], capsys)
    assert code == 0 and "0 error(s), 0 warning(s)" in out


def test_human_output_shows_file_line_col_and_fix(capsys):
    path = CORPUS / "MINT001_fires.py"
    _, out, _ = run_cli(["lint", str(path)], capsys)
    assert f"{path}:4:46: MINT001 [error]" in out
    assert "fix: Rename it to `stop=`." in out


def test_sarif(capsys):
    reports = [lint_path(CORPUS / "MINT043_fires.py"), lint_source("def f(:\n", "broken.py")]
    sarif = to_sarif(reports)
    assert sarif["version"] == "2.1.0"
    [run] = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(RULES)
    results = run["results"]
    assert {r["ruleId"] for r in results} == {"MINT043"}
    first = results[0]
    assert rules[first["ruleIndex"]]["id"] == first["ruleId"] and first["level"] == "error"
    region = first["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 5, "startColumn": 37}
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert "broken.py" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    # the key itself never reaches the report
    assert "9f3b2c7d1e8a4f60b5c2" not in json.dumps(sarif)
    code, out, _ = run_cli(["lint", str(CORPUS / "MINT043_fires.py"), "--format", "sarif"], capsys)
    assert code == 1 and json.loads(out)["runs"][0]["results"]


def test_api_key_findings_are_masked():
    report = lint_path(CORPUS / "MINT043_fires.py")
    text = report.model_dump_json()
    assert "sk-...b5c2" in text and "...Xk4Mb6"[-4:] in text
    for secret in ("9f3b2c7d1e8a4f60b5c2", "Zq8v2LmN4pR7tX1y", "7Hq2Lw9Xv3Np5Rt8Zk4Mb6"):
        assert secret not in text


def test_rules_are_documented_ruff_style():
    for rule in RULES.values():
        assert rule.id.startswith("MINT") and len(rule.id) == 7
        assert rule.severity in ("error", "warning")
        for field in ("summary", "what", "why", "fix", "bad", "good"):
            assert len(getattr(rule, field)) > 10, (rule.id, field)
        assert rule.bad != rule.good


def _in_a_mint_script(example: str) -> str:
    if example.startswith("import"):
        return example + "\n"
    header = "import asyncio\nimport os\n\nimport mint\nfrom mint import types\nfrom transformers import AutoTokenizer\n\n\n"
    signature = (
        "async def example(training_client: mint.TrainingClient, sampling_client: mint.SamplingClient,\n"
        "                  service_client: mint.ServiceClient, tc: mint.TrainingClient, sc: mint.SamplingClient):\n"
    )
    return header + signature + textwrap.indent(example, "    ") + "\n"


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_documented_examples_are_true(rule_id):
    """Each rule's flagged example is flagged by that rule, and its fixed example is clean."""
    rule = RULES[rule_id]
    assert rule_id in {f.id for f in lint_source(_in_a_mint_script(rule.bad)).findings}
    assert lint_source(_in_a_mint_script(rule.good)).findings == []


def test_docs_rules_md_is_current():
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == render(), "regenerate: python -m mint_migrate.lint.docs > docs/rules.md"
    for rule in RULES.values():
        assert f"### {rule.id} {rule.name}" in committed


def test_docs_module_runs_as_a_script():
    out = subprocess.run([sys.executable, "-m", "mint_migrate.lint.docs"], capture_output=True, text=True, check=True).stdout
    assert out == render()


def test_lint_does_not_import_torch_or_the_sdk():
    code = (
        "import sys; from mint_migrate.lint import lint_source; "
        "lint_source(open(sys.argv[1]).read(), fix=True); "
        "print(sorted(m for m in ('torch', 'mint', 'tinker', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(CORPUS / "fix" / "sdk_traps.py")], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_lint_script_tool(tmp_path):
    (tmp_path / "train.py").write_text((CORPUS / "fix" / "import_bridge.py").read_text(encoding="utf-8"), encoding="utf-8")
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        by_path = await client.call_tool("lint_script", {"path": "train.py", "fix": True})
        assert not by_path.is_error
        report = by_path.structured_content
        assert [f["id"] for f in report["findings"]] == ["MINT040"]
        assert report["fixes_applied"] == ["MINT040"] and "import mint as tinker" in report["fixed_source"]
        # nothing is written by the tool
        assert "import tinker\n" in (tmp_path / "train.py").read_text(encoding="utf-8")
        by_source = await client.call_tool("lint_script", {"source": "from mint import types\nx = types.SamplingParams(stop_token_ids=[1])\n"})
        assert [f["id"] for f in by_source.structured_content["findings"]] == ["MINT001"]
