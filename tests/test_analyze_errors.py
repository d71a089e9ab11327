"""Unknown or unparseable inputs: a MintMigrateError naming the file and line, exit 2, nothing written."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mint_migrate.analyze import analyze
from mint_migrate.analyze.evidence import Level, Loc, Value
from mint_migrate.analyze.yamlconf import YamlConfig
from mint_migrate.errors import MintMigrateError
from mint_migrate.migrate import migrate

CLI = str(Path(sys.executable).parent / "mint-migrate")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "name, text, pattern",
    [
        ("train.py", "import trl\ndef f(:\n", r"train\.py:2:\d+: cannot parse Python"),
        ("run.sh", "LR=1\npython t.py --name 'open\n", r"run\.sh:2: cannot parse shell"),
        ("cfg.yaml", "a: 1\nb: [1, 2\nc: 3\n", r"cfg\.yaml:\d+: cannot parse YAML"),
        ("cfg.yaml", "- just\n- a list\n", r"cfg\.yaml:1: the YAML document is not a mapping"),
        ("notes.txt", "hello\n", r"notes\.txt:1: unknown file type"),
        ("util.py", "import os\nprint(os.getcwd())\n", r"util\.py:1: no training setup found"),
        ("run.sh", "echo hi\nmkdir -p out\n", r"run\.sh:1: no training command found"),
        ("run.sh", "python missing_script.py --lr 1\n", r"run\.sh:1: the command runs missing_script\.py"),
        ("cfg.yaml", "foo: 1\nbar: baz\n", r"cfg\.yaml:1: unrecognised config"),
        (
            "zero3.yaml",
            "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n",
            r"zero3\.yaml:1: this is an accelerate / DeepSpeed config",
        ),
        ("loop.py", "import torch\nmodel = torch.nn.Linear(2, 2)\nprint(model)\n", r"loop\.py:1: no training setup"),
    ],
)
def test_bad_inputs_raise_with_file_and_line(tmp_path, name, text, pattern):
    with pytest.raises(MintMigrateError, match=pattern):
        analyze(write(tmp_path, name, text), [])


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(MintMigrateError, match="no such file"):
        analyze(tmp_path / "nope.py", [])
    with pytest.raises(MintMigrateError, match="is a directory"):
        analyze(tmp_path, [])


def test_a_bad_companion_fails_the_whole_migration_and_writes_nothing(tmp_path):
    source = write(tmp_path, "sft.py", "from trl import SFTTrainer\nSFTTrainer(model='m')\n")
    bad = write(tmp_path, "recipe.yaml", "learning_rate: [1\n")
    with pytest.raises(MintMigrateError, match=r"recipe\.yaml:\d+: cannot parse YAML"):
        migrate(source, [bad], output_dir="out", workspace=tmp_path, overwrite=False)
    assert not (tmp_path / "out").exists()


def test_cli_exits_2_with_the_message_and_writes_nothing(tmp_path):
    source = write(tmp_path, "train.py", "import trl\nx = (\n")
    done = subprocess.run(
        [CLI, "migrate", str(source), "--out", "out", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "train.py:2" in json.loads(done.stdout)["error"]
    assert "cannot parse Python" in done.stderr
    assert not (tmp_path / "out").exists()


def test_yaml_reads_floats_like_omegaconf_and_resolves_interpolations():
    y = YamlConfig("lr: 1e-6\nbase:\n  n: 8\nrollout:\n  n: ${base.n}\n  env: ${oc.env:HOME}\nq: '1e-6'\n", "c.yaml")
    assert y.get("lr") == Value(1e-6, Loc("c.yaml", 1), Level.CONFIG)
    assert y.get("rollout.n") == Value(8, Loc("c.yaml", 3), Level.CONFIG)  # traced to where 8 is written
    assert y.get("rollout.env").value == "${oc.env:HOME}"  # left unresolved
    assert y.get("q").value == "1e-6"  # quoted: a string, as in OmegaConf


def test_yaml_sizes_computed_by_arithmetic_resolvers_are_numbers_other_resolvers_stay_as_written():
    y = YamlConfig("max_req_tokens: 1024\nmax_res_tokens: 512\ntrainer:\n  training:\n"
                   "    seq_len: ${sum:${max_req_tokens},${max_res_tokens}}\nref:\n  seq_len: ${trainer.training.seq_len}\n"
                   "cap: ${max:${max_req_tokens}, 4096}\nodd: ${my_resolver:${max_req_tokens}}\n", "c.yaml")
    assert y.get("trainer.training.seq_len") == Value(1536, Loc("c.yaml", 5), Level.CONFIG)
    assert y.get("ref.seq_len").value == 1536 and y.get("cap").value == 4096
    assert y.get("odd").value == "${my_resolver:1024}"  # a resolver only the project knows
