"""The `mint-migrate` CLI contract: one JSON document with --json, exit 0 / 1 / 2, help that answers."""

import json
import subprocess
import sys
from pathlib import Path

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
    assert "invalid choice" in done.stderr and "--help" in done.stderr


def test_unreadable_input_exits_2(tmp_path):
    done = run("migrate", str(tmp_path / "missing.py"), "--json")
    assert done.returncode == 2
    assert "missing.py" in json.loads(done.stdout)["error"]


def test_help_lists_every_subcommand():
    done = run("--help")
    assert done.returncode == 0
    for command in ("migrate", "scaffold", "map", "lint", "preflight", "smoke", "serve"):
        assert command in done.stdout


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
    assert "invalid choice" in error["error"] and "usage:" in error["usage"]
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
    assert (tmp_path / "nested" / "train.py").is_file()
    again = run("scaffold", "sft", "--out", "nested/train.py", "--json", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in json.loads(again.stdout)["error"]
    forced = run("scaffold", "sft", "--out", str(tmp_path / "nested" / "train.py"), "--force", cwd=tmp_path.parent)
    assert forced.returncode == 0, forced.stderr
