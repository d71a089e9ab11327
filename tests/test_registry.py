"""The framework registry is the one list: analyzers, the plan's type, the CLI, the MCP schema and
SKILL.md's table are all built from it."""

import subprocess
import sys
import typing
from pathlib import Path

import pytest

from mint_migrate.analyze.registry import Analyzer, analyzers
from mint_migrate.frameworks import FRAMEWORK_NAMES
from mint_migrate.migrate import MigrationResult
from mint_migrate.plan import Framework

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
    from mint_migrate.analyze.detect import framework_of_python
    from mint_migrate.analyze.pyvalues import PySource

    analyzer = next(a for a in analyzers() if a.name == name)
    if not analyzer.imports:
        pytest.skip("detected by shape, not by import")
    src = PySource(f"import {analyzer.imports[0]}\nimport torch\nloss.backward()\n", "t.py")
    assert framework_of_python(src)[0] == name


def test_each_analyzer_owns_its_task_reader_and_reward_convention():
    from mint_migrate.frameworks import REWARD_STYLES
    from mint_migrate.plan import RewardStyle

    for analyzer in analyzers():
        assert callable(analyzer.read_task), analyzer.name
    assert typing.get_args(RewardStyle) == tuple(REWARD_STYLES)
    adapters = (ROOT / "scaffolds" / "partials" / "reward.py.j2").read_text()
    for style in REWARD_STYLES:
        assert f'style == "{style}"' in adapters or style == "plain", style  # plain is the adapter's fallback


def test_the_registry_is_the_only_list_of_frameworks():
    """No module but the registry's spells out the frameworks: a literal tuple, list, set or dict that
    names three or more of them elsewhere is knowledge that adding a framework would have to find."""
    import ast

    names = set(FRAMEWORK_NAMES)
    found = []
    for path in sorted((ROOT / "mint_migrate").rglob("*.py")):
        if path.name == "frameworks.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else \
                [k for k in node.keys if k is not None] if isinstance(node, ast.Dict) else []
            written = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            if len(written & names) >= 3:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_the_task_readers_import_no_framework_module():
    """task.py is the shared toolbox the framework modules import; it reaches them only through the registry."""
    import ast

    tree = ast.parse((ROOT / "mint_migrate" / "analyze" / "task.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {f"mint_migrate.analyze.{name}" for name in FRAMEWORK_NAMES}
