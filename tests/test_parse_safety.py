"""Parsing never takes a process down: the shapes that crashed (segfault in libcst's native parser,
MemoryError and ValueError in CPython's, SyntaxError from literal_eval) or hung it, through
`lint --json`, `migrate --json` and the MCP server's lint_script over stdio, which must answer a
clear parse error and stay alive."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import libcst as cst
import pytest
from mcp import Client, StdioServerParameters
from probes import HOSTILE

from mint_migrate import pyparse
from mint_migrate.lint import lint_source
from mint_migrate.preflight import run_preflight
from mint_migrate.pyparse import MAX_DEPTH, PythonSyntaxError, evaluated_value, parse_ast, parse_module

CLI = str(Path(sys.executable).parent / "mint-migrate")

@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_parse_door_refuses_with_a_located_error(name):
    with pytest.raises(PythonSyntaxError) as caught:
        parse_module(HOSTILE[name], "train.py")
    message = str(caught.value)
    assert message.startswith("train.py:") and "cannot parse Python" in message
    assert "\x00" not in message and "Qwen" not in message  # the offending line is never quoted


def test_depth_bound_leaves_real_code_alone():
    nested = "x = " + "(" * 90 + "1" + ")" * 90 + "\n"  # CPython's own limit is 200 brackets
    assert parse_module(nested, "ok.py").code == nested
    with pytest.raises(PythonSyntaxError, match=f"nested over {MAX_DEPTH} levels"):
        parse_ast("x = a" + "[0]" * (MAX_DEPTH + 5) + "\n", "deep.py")


def test_a_nul_byte_in_a_literal_reads_as_no_value():
    """libcst accepts the literal; its evaluated_value runs literal_eval, which raised SyntaxError."""
    node = cst.parse_expression('"a\x00b"')
    assert evaluated_value(node) is None
    assert evaluated_value(cst.parse_expression('"Qwen/Qwen3-8B"')) == "Qwen/Qwen3-8B"


def test_parsing_on_many_threads_at_once_never_fails():
    """The CPython 3.11 race (one AST recursion counter per interpreter) cannot hit our parses."""
    source = Path(pyparse.__file__).read_text(encoding="utf-8") * 3
    errors: list[BaseException] = []

    def work() -> None:
        for _ in range(20):
            try:
                parse_ast(source, "big.py")
                lint_source("import mint\nx = 'sk-' + 'a'\n")
            except BaseException as exc:  # noqa: BLE001 - collected and reported below
                errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


@pytest.mark.parametrize("name", ["deep-parens", "unclosed-brackets", "lambda-chain", "nul-in-string"])
def test_lint_and_migrate_report_a_parse_error_and_exit_2(name, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(HOSTILE[name], encoding="utf-8")
    lint = subprocess.run([CLI, "lint", str(script), "--json"], capture_output=True, text=True, timeout=120)
    assert lint.returncode == 2, (lint.returncode, lint.stderr[-500:])
    report = json.loads(lint.stdout)
    assert report["parse_error"] and report["parse_error_line"] >= 1
    migrate = subprocess.run([CLI, "migrate", str(script), "--json"], capture_output=True, text=True, timeout=120)
    assert migrate.returncode == 2, (migrate.returncode, migrate.stderr[-500:])
    assert "cannot parse Python" in json.loads(migrate.stdout)["error"]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_preflight_reports_a_hostile_script_as_a_failed_lint(name, tmp_path):
    # Preflight also asks whether the script imports mint_run.py, before it lints: that question
    # must go through the same door (a bare ast.parse raised RecursionError and MemoryError here).
    script = tmp_path / "train.py"
    script.write_text(HOSTILE[name], encoding="utf-8")
    report = run_preflight(script, target="local")
    lint = next(c for c in report.checks if c.name == "lint")
    assert lint.status == "fail" and "does not parse" in lint.message, lint
    assert not report.ok


@pytest.mark.anyio
async def test_the_mint_migrate_answers_every_hostile_source_and_stays_alive(tmp_path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "mint_migrate"], cwd=str(tmp_path))
    async with Client(params) as client:
        for name, source in HOSTILE.items():
            if name == "oversized":
                continue  # 5 MB through a pipe proves nothing more
            result = await client.call_tool("lint_script", {"source": source})
            assert not result.is_error, (name, result.content)
            assert result.structured_content["parse_error"], name
        alive = await client.call_tool("map_concept", {"framework": "trl", "concept": "GRPOConfig"})
        assert not alive.is_error


def test_python_3_12_f_strings_are_read_with_their_inner_quotes_swapped_at_the_same_positions():
    """PEP 701 (Python 3.12) lets a replacement field reuse its f-string's quote; 3.11 refuses it.
    The reader swaps those inner quotes (escaped braces, format specs and the other quote left
    alone) and keeps every line and column; an f-string broken on any Python is still refused."""
    source = (
        'import os\n'
        'x = f"{os.getenv("HOME")} {{literal}} {d["a"]["b"]:>{w}}"\n'
        "y = f'{a['k']}' + f\"{b['ok']}\"\n"
    )
    module = pyparse.parse_module(source, "new.py")
    assert module.code.splitlines() == [
        "import os",
        "x = f\"{os.getenv('HOME')} {{literal}} {d['a']['b']:>{w}}\"",
        "y = f'{a[\"k\"]}' + f\"{b['ok']}\"",
    ]
    with pytest.raises(pyparse.PythonSyntaxError) as refused:
        pyparse.parse_module('x = 1\ny = f"{a["b"}"\n', "broken.py")
    assert str(refused.value).startswith("broken.py:2:")
