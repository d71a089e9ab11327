"""The framework registry is the one list: analyzers, the plan's type, the CLI, the MCP schema and
SKILL.md's table are all built from it."""

import subprocess
import sys
import typing
from pathlib import Path

import pytest

from mcp_server.analyze.registry import Analyzer, analyzers
from mcp_server.frameworks import FRAMEWORK_NAMES
from mcp_server.migrate import MigrationResult
from mcp_server.plan import Framework

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "mint-migrate")


def test_every_registered_framework_has_an_analyzer_with_the_interface():
    found = analyzers()
    assert [a.name for a in found] == list(FRAMEWORK_NAMES)
    for analyzer in found:
        assert isinstance(analyzer, Analyzer) and analyzer.signals
        assert callable(analyzer.analyze) and callable(analyzer.defaults)
        assert analyzer.imports or analyzer.detect_python is not None, analyzer.name
        assert isinstance(analyzer.defaults("sft"), dict)


def test_the_plan_type_and_the_mcp_schema_list_the_registry():
    assert typing.get_args(Framework) == (*FRAMEWORK_NAMES, "unknown")
    schema = MigrationResult.model_json_schema()
    enum = schema["$defs"]["MigrationPlan"]["properties"]["framework"]["enum"]
    assert enum == [*FRAMEWORK_NAMES, "unknown"]


def test_the_cli_help_names_every_framework():
    done = subprocess.run([CLI, "map", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    help_text = " ".join(done.stdout.split())
    assert all(name in help_text for name in FRAMEWORK_NAMES)


def test_skill_md_framework_table_is_generated_from_the_registry():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_framework_table.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    text = (ROOT / "SKILL.md").read_text()
    for analyzer in analyzers():
        assert f"| `{analyzer.name}` | {analyzer.signals} |" in text


@pytest.mark.parametrize("name", FRAMEWORK_NAMES)
def test_detection_goes_through_each_analyzer(tmp_path, name):
    """An analyzer that says it recognises an import is the one detection picks for that import."""
    from mcp_server.analyze.detect import framework_of_python
    from mcp_server.analyze.pyvalues import PySource

    analyzer = next(a for a in analyzers() if a.name == name)
    if not analyzer.imports:
        pytest.skip("detected by shape, not by import")
    src = PySource(f"import {analyzer.imports[0]}\nimport torch\nloss.backward()\n", "t.py")
    assert framework_of_python(src)[0] == name
