"""YAML configs are composed within bounds (mint_migrate/analyze/yamlconf.py): an alias bomb, a
recursive alias or deep nesting is refused with a clear error (exit 2, one JSON document with
--json), never a RecursionError, minutes of work or gigabytes; and 600 seeded fuzzed configs give
only a plan or that error."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from mint_migrate.analyze.yamlconf import YamlConfig
from mint_migrate.errors import MintMigrateError
from mint_migrate.migrate import migrate

CLI = str(Path(sys.executable).parent / "mint-migrate")
FIXTURE = Path(__file__).parent / "fixtures/migrate/verl/ppo_gae_yaml/ppo_qwen_critic.yaml"

BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)
HOSTILE = {
    "alias bomb": (BILLION_LAUGHS, "alias bomb"),
    "recursive alias": ("trainer: &t\n  lr: 1\n  again: *t\n", "recursive alias"),
    "recursive flow alias": ("a: &x [1, *x]\n", "recursive alias"),
    "deep block nesting": ("".join(f"{'  ' * i}k{i}:\n" for i in range(400)) + "  " * 400 + "v: 1\n", "nested deeper"),
    "deep flow nesting": ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper"),
    "many aliases": ("a: &a 1\nb: [" + ", ".join(["*a"] * 20000) + "]\n", "aliases"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_yaml_is_refused_with_a_clear_error(name):
    text, words = HOSTILE[name]
    with pytest.raises(MintMigrateError, match=words) as info:
        YamlConfig(text, "config.yaml")
    assert "cannot parse YAML" in str(info.value) and "config.yaml:" in str(info.value)


def test_a_bomb_over_the_cli_exits_2_with_one_json_document(tmp_path):
    (tmp_path / "bomb.yaml").write_text(BILLION_LAUGHS, encoding="utf-8")
    done = subprocess.run([CLI, "migrate", str(tmp_path / "bomb.yaml"), "--json"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert "alias bomb" in json.loads(done.stdout)["error"]


def test_shared_anchors_within_bounds_still_read():
    config = YamlConfig("base: &b\n  lr: 1e-5\n  bs: 8\nactor: *b\ncritic:\n  <<: *b\n  bs: 4\n", "c.yaml")
    assert config.get("actor.lr").value == 1e-5 and config.get("critic.bs").value == 4


def _mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(text) + 1)
        match rng.randrange(7):
            case 0:
                text = text[:at] + text[at + rng.randint(1, 80):]
            case 1:
                text = text[:at] + text[at:at + rng.randint(1, 80)] * rng.randint(2, 40) + text[at:]
            case 2:
                text = text[:at] + rng.choice(["&a ", "*a", "&b [*b]", "<<: *a\n", "{", "[", "- ", ": ", "!!python/name:os.system ", "\t", "\0", "%YAML 1.1\n", "---\n"]) + text[at:]
            case 3:
                depth = rng.randint(50, 3000)
                text = text[:at] + rng.choice(["[" * depth, "{a: " * depth, "".join(f"\n{' ' * i}k:" for i in range(depth))]) + text[at:]
            case 4:
                text = "a: &a [x, x]\n" + "".join(f"l{i}: &l{i} [*{'a' if i == 0 else f'l{i - 1}'}, *{'a' if i == 0 else f'l{i - 1}'}]\n" for i in range(rng.randint(5, 40))) + text
            case 5:
                text = text[:at] + "${" + text[at:]
            case _:
                text = text[:at] + "".join(rng.choice(":-[]{}&*!|>'\"#%@` \n") for _ in range(rng.randint(1, 30))) + text[at:]
    return text


def test_600_fuzzed_configs_give_a_plan_or_a_clear_error(tmp_path):
    rng = random.Random(26)
    base = FIXTURE.read_text(encoding="utf-8")
    outcomes = {"plan": 0, "refused": 0}
    for i in range(600):
        path = tmp_path / f"c{i}.yaml"
        path.write_text(_mutate(base, rng), encoding="utf-8")
        try:
            migrate(path, [], output_dir=None, workspace=tmp_path, overwrite=False)
            outcomes["plan"] += 1
        except MintMigrateError as exc:
            assert str(exc).strip(), path
            outcomes["refused"] += 1
        path.unlink()
    assert outcomes["plan"] > 50 and outcomes["refused"] > 50, outcomes  # both kinds were really exercised
