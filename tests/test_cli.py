"""The `mint-migrate` CLI contract: one JSON document with --json, exit 0 / 1 / 2, help that answers."""

import json
import re
import subprocess
import sys
from pathlib import Path

from mint_migrate.tools import TOOLS

CLI = str(Path(sys.executable).parent / "mint-migrate")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_map_json_prints_the_full_table():
    done = run("map", "verl", "--json")
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)  # exactly one document: json.loads rejects trailing data
    assert table["framework"] == "verl"
    assert len(table["concepts"]) >= 8
    assert all(c["mint"] and c["before"] and c["after"] for c in table["concepts"])


def test_map_one_concept_human_output_shows_before_after_and_pitfalls():
    done = run("map", "trl", "SFTTrainer")
    assert done.returncode == 0, done.stderr
    assert "Before:" in done.stdout and "After:" in done.stdout and "Pitfalls:" in done.stdout


def test_framework_aliases_resolve():
    done = run("map", "forge", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["framework"] == "torchforge"


def test_unknown_framework_exits_2_with_the_known_ones():
    done = run("map", "deepspeed-chat", "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert "Known frameworks:" in error and "trl" in error
    assert "Known frameworks:" in done.stderr


def test_bad_usage_exits_2_with_a_hint():
    done = run("scaffold", "ppo-with-critic")
    assert done.returncode == 2
    assert "kind: Input should be" in done.stderr and "--help" in done.stderr


def test_unreadable_input_exits_2(tmp_path):
    done = run("migrate", str(tmp_path / "missing.py"), "--json")
    assert done.returncode == 2
    assert "missing.py" in json.loads(done.stdout)["error"]


def test_help_lists_every_subcommand_and_each_answers_its_own_help():
    done = run("--help")
    assert done.returncode == 0
    # The command list of the help text, not the program name (which contains "migrate").
    listed = set(re.findall(r"^    (\w+)(?: |$)", done.stdout, re.M))
    assert listed == {tool.command for tool in TOOLS} | {"serve"}
    for command in listed:
        own = run(command, "--help")
        assert own.returncode == 0 and own.stdout.startswith(f"usage: mint-migrate {command}"), command


def test_scaffold_flags_are_the_scaffold_options(tmp_path):
    """One declaration: every ScaffoldOptions field but the header is a flag, validated by the model."""
    from mint_migrate.render import ScaffoldOptions

    done = run("scaffold", "--help")
    for name in set(ScaffoldOptions.model_fields) - {"kind", "header"}:
        assert "--" + name.replace("_", "-") in done.stdout, name
    source = run("scaffold", "grpo", "--loss-fn", "ppo", "--loss-fn-config", '{"clip_low_threshold": 0.7}',
                 "--save-every", "3", "--lora-rank", "4")  # fmt: skip
    assert source.returncode == 0, source.stderr
    assert '"clip_low_threshold": 0.7' in source.stdout and "LORA_RANK = 4" in source.stdout
    bounded = run("scaffold", "sft", "--lora-rank", "0", "--json")
    assert bounded.returncode == 2 and "--lora-rank" in json.loads(bounded.stdout)["error"]


def test_scaffold_flags_cover_switches_optional_bools_and_model_options():
    """The ScaffoldOptions fields the task and throughput work added: a switch, a --x/--no-x pair
    and JSON objects the model validates (data, reward)."""
    fast = run("scaffold", "grpo", "--throughput")
    assert fast.returncode == 0 and "class RolloutEngine" in fast.stdout, fast.stderr
    assert "class RolloutEngine" not in run("scaffold", "grpo").stdout
    assert "NORMALIZE_ADVANTAGES = True" in run("scaffold", "grpo", "--normalize-advantages").stdout
    assert "NORMALIZE_ADVANTAGES = False" in run("scaffold", "grpo", "--no-normalize-advantages").stdout
    reward = run("scaffold", "grpo", "--reward", '{"file": "my_rewards.py", "functions": ["exact"]}')
    assert reward.returncode == 0 and '"file": "my_rewards.py"' in reward.stdout, reward.stderr
    missing = run("scaffold", "grpo", "--reward", '{"file": "my_rewards.py"}', "--json")
    assert missing.returncode == 2 and "--reward.functions" in json.loads(missing.stdout)["error"]
    data = run("scaffold", "sft", "--data", '{"file": "rows.jsonl"}')
    assert data.returncode == 0 and '"file": "rows.jsonl"' in data.stdout, data.stderr


def test_a_concept_may_be_a_flag_of_the_source_framework():
    for args in (["map", "openrlhf", "--pretrain", "--json"], ["map", "openrlhf", "--json", "--model.model_name_or_path"]):
        done = run(*args)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["concepts"][0]["id"] == "pretrain"


def test_json_works_anywhere_in_the_argv():
    for args in (["map", "openrlhf", "--", "--pretrain", "--json"], ["--json", "map", "verl", "rollout.n"]):
        done = run(*args)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["concepts"]
    done = run("serve", "--json")
    assert done.returncode == 2 and "no --json" in json.loads(done.stdout)["error"]


def test_usage_errors_under_json_are_one_json_document():
    done = run("scaffold", "ppo-with-critic", "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)  # one document, nothing else on stdout
    # The request model validates (the MCP tool's message): the kinds it takes, and the usage.
    assert "kind: Input should be 'sft', 'grpo', 'dpo' or 'distill'" in error["error"] and "usage:" in error["usage"]
    assert "--help" in done.stderr
    done = run("lint", "--json")
    assert done.returncode == 2 and "required" in json.loads(done.stdout)["error"]


def test_unknown_concept_tells_a_cli_user_what_to_run():
    done = run("map", "verl", "PPOTrainr")
    assert done.returncode == 2
    assert "mint-migrate map verl" in done.stderr and "Closest match" in done.stderr


def test_lint_of_a_file_that_does_not_parse_says_not_linted(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def train(:\n    pass\n")
    done = run("lint", str(broken))
    assert done.returncode == 2
    assert "not linted" in done.stdout and "error(s)" not in done.stdout
    done = run("lint", str(broken), "--json")
    assert done.returncode == 2 and json.loads(done.stdout)["parse_error"]


def test_output_cut_short_by_a_closed_pipe_is_quiet():
    # `true` exits before the CLI has started, so every write of the CLI meets a closed pipe.
    done = subprocess.run(f"'{CLI}' map verl --json | true", shell=True, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_out_paths_are_relative_to_the_working_directory(tmp_path):
    done = run("scaffold", "sft", "--out", "nested/train.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "nested" / "train.py").is_file() and (tmp_path / "nested" / "mint_run.py").is_file()
    assert "mint_run.py" in done.stdout and "keep them together" in done.stdout
    printed = run("scaffold", "sft", cwd=tmp_path)  # stdout is train.py alone; stderr says what is missing
    assert printed.stdout.startswith("#!/usr/bin/env python3") and "--out DIR/train.py writes both" in printed.stderr
    again = run("scaffold", "sft", "--out", "nested/train.py", "--json", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in json.loads(again.stdout)["error"]
    forced = run("scaffold", "sft", "--out", str(tmp_path / "nested" / "train.py"), "--force", cwd=tmp_path.parent)
    assert forced.returncode == 0, forced.stderr
