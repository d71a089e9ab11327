"""migrate(): the plan, the rendered train.py, MIGRATION.md, and the rules for writing them.

Every fixture and every example is migrated; each generated train.py must parse and pass
`--dry-run` (no credentials, no network). The dry runs share one interpreter (a driver runs each
script as __main__ with its own argv), so `import mint` is paid once; the demo example is also run
the documented way, `python train.py --dry-run`, in its own process.
"""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import libcst
import pytest
from mcp import Client

from mint_migrate.errors import OutsideWorkspace, WouldOverwrite
from mint_migrate.migrate import migrate
from mint_migrate.server import create_server

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "migrate"
CLI = str(Path(sys.executable).parent / "mint-migrate")
SFT_CASE = FIXTURES / "trl" / "sft_lora_constants"
TINKER_CASE = FIXTURES / "tinker" / "rl_loop_async_038"
# Primary files of the examples, with the companions each needs.
EXAMPLES = {
    "trl/sft_trl.py": [],
    "trl/grpo_trl.py": [],
    "verl/run_grpo_gsm8k.sh": ["verl/gsm8k_reward.py"],
    "openrlhf/train_grpo_ray.sh": ["openrlhf/math_reward.py"],
    "torchforge/grpo_qwen3.yaml": [],
    "tinker/rl_loop.py": [],
    "pytorch/sft_loop.py": [],
}


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINT_", "TINKER_"))}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MINT_BASE_URL="http://127.0.0.1:9")
    return env


def all_inputs() -> list[tuple[str, Path, list[Path]]]:
    out = []
    for case in sorted(FIXTURES.glob("*/*/case.json")):
        data = json.loads(case.read_text())
        out.append(
            (
                f"{case.parent.parent.name}_{case.parent.name}",
                case.parent / data["source"],
                [case.parent / c for c in data["configs"]],
            )
        )
    for primary, companions in EXAMPLES.items():
        name = "example_" + primary.replace("/", "_").rsplit(".", 1)[0]
        out.append((name, ROOT / "examples" / primary, [ROOT / "examples" / c for c in companions]))
    return out


def test_without_output_dir_nothing_is_written(tmp_path):
    result = migrate(SFT_CASE / "sft_capybara.py", [], output_dir=None, workspace=tmp_path, overwrite=False)
    assert list(tmp_path.iterdir()) == []
    assert result.plan.files_written == []
    assert result.train_py and result.report.startswith("# Migration to MinT")
    libcst.parse_module(result.train_py)


def test_output_dir_gets_train_py_and_report_and_refuses_to_overwrite(tmp_path):
    result = migrate(SFT_CASE / "sft_capybara.py", [], output_dir="out", workspace=tmp_path, overwrite=False)
    train, report = tmp_path / "out" / "train.py", tmp_path / "out" / "MIGRATION.md"
    prepare = tmp_path / "out" / "prepare_data.py"  # the data step: trl-lib/Capybara -> train.jsonl
    companion = tmp_path / "out" / "mint_run.py"  # the plumbing train.py and prepare_data.py import
    assert result.plan.files_written == [str(train), str(companion), str(prepare), str(report)]
    assert companion.read_text() == result.companions["mint_run.py"]
    assert train.read_text() == result.train_py and report.read_text() == result.report
    assert prepare.read_text() == result.companions["prepare_data.py"] and '"trl-lib/Capybara"' in prepare.read_text()
    # The chosen values are the script's defaults.
    assert 'BASE_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"' in result.train_py
    assert "LORA_RANK = 32" in result.train_py

    report.write_text("edited by hand")
    companion.write_text("# edited by hand")
    with pytest.raises(WouldOverwrite):
        migrate(SFT_CASE / "sft_capybara.py", [], output_dir="out", workspace=tmp_path, overwrite=False)
    assert report.read_text() == "edited by hand"  # all or nothing: neither file was touched
    assert companion.read_text() == "# edited by hand"
    migrate(SFT_CASE / "sft_capybara.py", [], output_dir="out", workspace=tmp_path, overwrite=True)
    assert report.read_text().startswith("# Migration to MinT")


def test_output_outside_the_workspace_is_refused(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with pytest.raises(OutsideWorkspace):
        migrate(
            SFT_CASE / "sft_capybara.py",
            [],
            output_dir=str(tmp_path / "elsewhere"),
            workspace=workspace,
            overwrite=False,
        )
    assert not (tmp_path / "elsewhere").exists()


def test_report_traces_settings_choices_and_what_cannot_move(tmp_path):
    case = FIXTURES / "verl" / "ppo_gae_yaml"
    report = migrate(case / "ppo_qwen_critic.yaml", [], output_dir=None, workspace=tmp_path, overwrite=False).report
    assert "| learning_rate | `1e-06` | ppo_qwen_critic.yaml:25 |" in report
    assert "| num_generations | `1` | ppo_qwen_critic.yaml:30 |" in report
    # The LoRA rate derived from the full fine-tuning rate, with the factor said.
    assert "**learning rate:** `1e-05`" in report and "x10" in report and "20-100x" in report
    assert "group size 8: the source samples 1 (ppo_qwen_critic.yaml:30) per prompt" in report
    assert "`loss_fn_config={'clip_low_threshold': 0.8, 'clip_high_threshold': 1.2}`" in report
    for code in ("CRITIC_GAE", "KL_REFERENCE", "SERVER_SIDE", "ALGORITHM_MAPPED"):
        assert f"**{code}**" in report
    assert "## Why this scaffold" in report and "value model" in report
    side_by_side = report.split("## Side by side", 1)[1].split("\n## ", 1)[0]
    assert "| algorithm.adv_estimator" not in side_by_side  # the side-by-side table lists constructs, not raw keys
    ledger = report.split("## Ledger", 1)[1].split("\n## ", 1)[0]  # the ledger lists every stated key
    assert "| algorithm.adv_estimator | `gae` | ppo_qwen_critic.yaml:41 |" in ledger


def test_tinker_sources_get_the_bridge_and_each_fix_with_its_line(tmp_path):
    result = migrate(TINKER_CASE / "rl_loop_async.py", [], output_dir=None, workspace=tmp_path, overwrite=False)
    report = result.report
    assert "import mint as tinker" in report
    expected = {
        "rl_loop_async.py:6": "import mint as tinker",
        "rl_loop_async.py:24": "service_client.create_rest_client()",
        "rl_loop_async.py:25": "create_lora_training_client_async",
        "rl_loop_async.py:40": "sample_async",
        "rl_loop_async.py:53": "loss_fn='importance_sampling'",
        "rl_loop_async.py:56": ".metrics['loss:sum']",
        "rl_loop_async.py:58": "drop user_metadata=",
    }
    fixes = {}
    for fix in result.tinker_fixes:
        fixes.setdefault(fix.location, []).append(fix.mint)
    for location, change in expected.items():
        assert any(change in c for c in fixes[location]), (location, fixes.get(location))
        assert f"| {location} |" in report
    assert result.plan.mint.kind == "grpo"  # the train.py is still the scaffold for the algorithm
    assert "await sampling_client" not in result.train_py


def test_cli_prints_one_json_document_and_writes_with_out(tmp_path):
    done = subprocess.run(
        [CLI, "migrate", str(SFT_CASE / "sft_capybara.py"), "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["plan"]["settings"]["learning_rate"] == {"value": 0.0002, "source": "sft_capybara.py:17"}
    assert list(tmp_path.iterdir()) == []
    done = subprocess.run(
        [CLI, "migrate", str(SFT_CASE / "sft_capybara.py"), "--out", "o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "wrote:" in done.stdout
    assert (tmp_path / "o" / "train.py").is_file() and (tmp_path / "o" / "MIGRATION.md").is_file()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_tool_returns_the_plan_and_writes_in_the_workspace(tmp_path):
    case = FIXTURES / "openrlhf" / "ppo_ray_group_norm"
    (tmp_path / "src").mkdir()
    for name in ("train_grpo_ray.sh", "math_verify_reward.py"):
        (tmp_path / "src" / name).write_text((case / name).read_text())
    async with Client(create_server(tmp_path), raise_exceptions=True) as client:
        result = await client.call_tool(
            "migrate_script",
            {
                "source_path": "src/train_grpo_ray.sh",
                "config_paths": ["src/math_verify_reward.py"],
                "output_dir": "migrated",
            },
        )
        assert not result.is_error
        plan = result.structured_content["plan"]
        assert (plan["framework"], plan["algorithm"], plan["mint"]["group_size"]) == ("openrlhf", "grpo", 8)
        assert (tmp_path / "migrated" / "train.py").is_file()
        again = await client.call_tool(
            "migrate_script", {"source_path": "src/train_grpo_ray.sh", "output_dir": "migrated"}
        )
        assert again.is_error and "already exists" in again.content[0].text


DRIVER = """
import contextlib, io, json, runpy, sys
results = {}
for path, extra in json.loads(sys.argv[1]):
    sys.argv = [path, "--dry-run", *extra]
    out = io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            # Not as __main__: that block ends the process (exit_without_teardown) after main().
            runpy.run_path(path, run_name="train")["main"]()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:
        code, _ = 1, out.write(f"{type(exc).__name__}: {exc}")
    results[path] = [code, out.getvalue()[-2000:]]
print(json.dumps(results))
"""


@pytest.mark.slow
def documented_dry_run(report: Path) -> list[str]:
    """The arguments MIGRATION.md's "Run it" gives `python train.py --dry-run`: they must work as printed."""
    [line] = [x for x in report.read_text().splitlines() if x.startswith("python train.py --dry-run")]
    argv = shlex.split(line.split("#", 1)[0])
    assert argv[:3] == ["python", "train.py", "--dry-run"], line
    return argv[3:]


def test_every_generated_train_py_parses_and_passes_dry_run(tmp_path):
    scripts = []
    for name, source, configs in all_inputs():
        result = migrate(source, configs, output_dir=name, workspace=tmp_path, overwrite=False)
        path = tmp_path / name / "train.py"
        libcst.parse_module(path.read_text())
        assert result.plan.mint.kind in ("sft", "grpo", "dpo", "distill")
        scripts.append((str(path), documented_dry_run(tmp_path / name / "MIGRATION.md")))
    assert len(scripts) >= 25
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(scripts)],
        cwd=tmp_path,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    failed = {p: out for p, (code, out) in results.items() if code != 0 or "DRYRUN ok" not in out}
    assert not failed, failed


@pytest.mark.slow
def test_demo_example_the_documented_way(tmp_path):
    done = subprocess.run(
        [CLI, "migrate", str(ROOT / "examples" / "trl" / "sft_trl.py"), "--out", "demo-out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    run = subprocess.run(
        [sys.executable, "demo-out/train.py", "--dry-run"],
        cwd=tmp_path,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "DRYRUN ok kind=sft" in run.stdout


@pytest.mark.slow
def test_migrated_grpo_script_trains_on_mint_local(tmp_path):
    """The whole point: a verl launch script becomes a train.py that runs 2 real RL steps through the
    real SDK against the offline mint-local backend."""
    from mint_migrate.smoke import run_smoke

    example = ROOT / "examples" / "verl"
    migrate(
        example / "run_grpo_gsm8k.sh",
        [example / "gsm8k_reward.py"],
        output_dir="out",
        workspace=tmp_path,
        overwrite=False,
    )
    verdict = run_smoke(tmp_path / "out" / "train.py", target="local", steps=2, timeout_s=540)
    assert verdict.passed, verdict.model_dump_json(indent=2)
    assert verdict.steps_done == 2
