"""The tool surface an agent meets: results sized for its context, full texts still reachable, one
validation for the MCP tools and the CLI, and one list of tools (mint_migrate/tools) that everything reads."""

import ast
import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from mint_migrate import cli
from mint_migrate.server import create_server
from mint_migrate.tools import TOOLS
from mint_migrate.tools.base import RESULT_BUDGET, fit, size
from mint_migrate.tools.lint import LintResult
from mint_migrate.tools.smoke import result_model as smoke_result

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# The demo and the two GRPO ports: (folder, entry, companions, framework, scaffold kind).
PORTS = [
    ("trl", "sft_trl.py", [], "trl", "sft"),
    ("trl", "grpo_trl.py", [], "trl", "grpo"),
    ("verl", "run_grpo_gsm8k.sh", ["gsm8k_reward.py"], "verl", "grpo"),
]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def fits(client: Client, tool: str, arguments: dict) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, text_of(result))
    assert len(text_of(result)) <= RESULT_BUDGET, (tool, arguments, len(text_of(result)))
    return result.structured_content


@pytest.mark.anyio
@pytest.mark.parametrize(("folder", "entry", "companions", "framework", "kind"), PORTS)
async def test_default_results_fit_an_agent_and_every_file_stays_reachable(
    tmp_path, folder, entry, companions, framework, kind
):
    shutil.copytree(EXAMPLES / folder, tmp_path / folder)
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        await fits(client, "map_concept", {"framework": framework})
        arguments = {"source_path": f"{folder}/{entry}", "config_paths": [f"{folder}/{c}" for c in companions]}
        migrated = await fits(client, "migrate_script", {**arguments, "output_dir": "out"})
        assert migrated["plan"]["framework"] == framework and migrated["full"] is None
        assert "lint_script(path=\"out/train.py\")" in migrated["next_steps"]
        # Every file written is named with a resource the agent can read in full.
        names = set()
        for written in migrated["files_written"]:
            names.add(Path(written["path"]).name)
            text = (await client.read_resource(written["resource"])).contents[0].text
            assert text == (tmp_path / written["path"]).read_text(encoding="utf-8"), written
        assert {"train.py", "mint_run.py", "MIGRATION.md"} <= names
        # MIGRATION.md's hand-over speaks MCP to an agent that called the tool.
        report = (tmp_path / "out" / "MIGRATION.md").read_text(encoding="utf-8")
        next_section = report.split("## Next", 1)[1]
        assert 'launch_smoke_run(script_path="out/train.py"' in next_section and "mint-migrate smoke" not in next_section
        # detail='full' inlines the plan and every text.
        full = await client.call_tool("migrate_script", {**arguments, "output_dir": "again", "detail": "full"})
        assert full.structured_content["full"]["train_py"] == (tmp_path / "again" / "train.py").read_text()
        assert full.structured_content["full"]["plan"]["settings"]

        scaffolded = await fits(client, "scaffold_train_py", {"kind": kind, "output_path": "fresh/train.py"})
        for uri in scaffolded["resources"]:
            assert (await client.read_resource(uri)).contents[0].text
        unwritten = await fits(client, "scaffold_train_py", {"kind": kind})
        # A script is never cut in half: too long to inline, it is left out whole and the way to it named.
        assert unwritten["source"] is None and any(o.startswith("source: ") for o in unwritten["omitted"])
        whole = await client.call_tool("scaffold_train_py", {"kind": kind, "detail": "full"})
        assert whole.structured_content["companion_source"] == (tmp_path / "fresh" / "mint_run.py").read_text()
        await fits(client, "lint_script", {"path": "out/train.py"})
        await fits(client, "preflight_check", {"script_path": "out/train.py", "target": "local"})


@pytest.mark.anyio
@pytest.mark.slow
async def test_run_results_fit_an_agent(tmp_path):
    """The tools that run things, on the demo: a 2-step smoke run on mint-local and the parity check."""
    shutil.copytree(EXAMPLES / "trl", tmp_path / "trl")
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        await fits(client, "migrate_script", {"source_path": "trl/sft_trl.py", "output_dir": "out"})
        verdict = await fits(client, "launch_smoke_run", {"script_path": "out/train.py", "steps": 2})
        assert verdict["passed"], verdict
        rows = [{"messages": [{"role": "user", "content": f"What is {i} plus {i}?"},
                              {"role": "assistant", "content": f"{i} plus {i} is {2 * i}."}]} for i in range(8)]
        (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        report = await fits(client, "check_parity", {"source_path": "trl/sft_trl.py", "train_path": "out/train.py",
                                                     "data_path": "rows.jsonl"})
        assert report["kind"] == "sft", report


def test_fit_cuts_any_result_to_the_budget_and_names_each_cut():
    """The guard every summary goes through: a result far over the budget comes back under it, a log
    tail keeps its end, and `omitted` says what was cut and how to get it all."""
    log = "".join(f"line {i}\n" for i in range(5000)) + "the last line"
    verdict_model = smoke_result()
    big = verdict_model(passed=False, target="local", log_tail=log, notes=[f"note {i} " * 20 for i in range(300)])
    assert size(big.model_dump(mode="json")) > 10 * RESULT_BUDGET
    cut = fit(big)
    assert size(cut.model_dump(mode="json")) <= RESULT_BUDGET
    assert cut.log_tail.endswith("the last line") and len(cut.notes) < 300
    assert any(o.startswith("log_tail:") for o in cut.omitted) and any(o.startswith("notes:") for o in cut.omitted)
    assert "detail='full'" in cut.omitted[-1]
    small = verdict_model(passed=True, target="local")
    assert fit(small) == small
    script = LintResult(path="train.py", fixed_source="x = 1\n" * 5000)
    assert fit(script, whole=("fixed_source",)).fixed_source is None
    assert fit(script.model_copy(update={"fixed_source": "x = 1\n"}), whole=("fixed_source",)).fixed_source


# --- one validation ---------------------------------------------------------------------------

BAD_ARGUMENTS = [  # (tool, MCP arguments, CLI argv): the same mistake through both front ends
    ("launch_smoke_run", {"script_path": "train.py", "steps": 0}, ["smoke", "train.py", "--steps", "0"]),
    ("launch_smoke_run", {"script_path": "train.py", "timeout_s": -1}, ["smoke", "train.py", "--timeout", "-1"]),
    ("check_parity", {"source_path": "sft.py", "rows": 0}, ["parity", "sft.py", "--rows", "0"]),
    ("scaffold_train_py", {"kind": "sft", "lora_rank": 0}, ["scaffold", "sft", "--lora-rank", "0"]),
    ("scaffold_train_py", {"kind": "ppo-with-critic"}, ["scaffold", "ppo-with-critic"]),
    ("preflight_check", {"target": "cloud"}, ["preflight", "--target", "cloud"]),
]


def cli_error(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), \
            pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--json"])
    return exited.value.code, json.loads(out.getvalue())["error"]


@pytest.mark.anyio
async def test_cli_and_mcp_reject_bad_arguments_with_the_same_message(tmp_path):
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        for tool, arguments, argv in BAD_ARGUMENTS:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            mcp_message = text_of(result).split(": ", 1)[1]  # after "Error executing tool <name>"
            code, cli_message = cli_error(argv)
            assert code == 2
            assert mcp_message.startswith("bad arguments: ") and cli_message.endswith(mcp_message), (mcp_message,
                                                                                                    cli_message)


# --- one list of tools ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_server_cli_and_docs_read_the_registry(tmp_path):
    async with Client(create_server(tmp_path)) as client:
        assert [t.name for t in (await client.list_tools()).tools] == [t.name for t in TOOLS]
    commands = cli.build_parser()._subparsers._group_actions[0].choices
    assert list(commands) == [t.command for t in TOOLS] + ["serve"]
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_tool_table.py"), "--check"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr  # SKILL.md's tool table and plugin.json's description
    manifest = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert ", ".join(t.name for t in TOOLS) in manifest["description"]


def test_the_registry_is_the_only_list_of_tools():
    """No Python file outside mint_migrate/tools spells out three or more tool names (or subcommands)
    in one literal: such a list goes stale the day a tool is added."""
    names = {t.name for t in TOOLS} | {t.command for t in TOOLS}
    offenders = []
    for path in [*ROOT.glob("mint_migrate/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("scripts/*.py"),
                 *ROOT.glob("bench/*.py")]:
        if "tools" in path.relative_to(ROOT).parts[:2]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.List, ast.Set, ast.Tuple)):
                spelled = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in names}
                if len(spelled) >= 3:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"tool lists outside the registry (read mint_migrate.tools.TOOLS): {offenders}"


def test_migration_md_hands_over_in_the_callers_terms_at_a_shell(tmp_path):
    """From the CLI, MIGRATION.md's "Next" gives shell commands (the MCP case is tested above)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        cli.main(["migrate", str(EXAMPLES / "trl" / "sft_trl.py"), "--out", str(tmp_path / "out")])
    assert exited.value.code == 0
    assert f"Next: mint-migrate lint {tmp_path / 'out' / 'train.py'}" in out.getvalue()
    next_section = (tmp_path / "out" / "MIGRATION.md").read_text(encoding="utf-8").split("## Next", 1)[1]
    assert "`mint-migrate smoke train.py --steps 2`" in next_section and "launch_smoke_run(" not in next_section
    assert "--resume latest" in next_section


@pytest.mark.anyio
async def test_only_files_a_tool_wrote_are_served(tmp_path):
    """The workspace resource is for the texts a tool wrote, never any file (a .env holds the key)."""
    (tmp_path / ".env").write_text("MINT_API_KEY=sk-not-to-be-served\n", encoding="utf-8")
    (tmp_path / "sft.py").write_text((EXAMPLES / "trl" / "sft_trl.py").read_text(), encoding="utf-8")
    async with Client(create_server(tmp_path)) as client:
        with pytest.raises(Exception, match="not written by a tool"):
            await client.read_resource("mint://workspace/.env")
        with pytest.raises(Exception, match="not written by a tool"):
            await client.read_resource("mint://workspace/sft.py")
        await fits(client, "migrate_script", {"source_path": "sft.py", "output_dir": "out"})
        assert (await client.read_resource("mint://workspace/out/train.py")).contents[0].text
