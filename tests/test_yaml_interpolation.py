"""The YAML reader resolves interpolations the way OmegaConf does (issue 23: test against the field's
library): whole-value and partial `${...}` references, absolute and relative, chains of them, over
seeded random configs. Values OmegaConf would need the environment or a resolver for stay as written."""

import random

import pytest
import yaml
from omegaconf import OmegaConf

from mint_migrate.analyze.yamlconf import YamlConfig


def leaves(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def random_config(seed: int) -> dict:
    rng = random.Random(seed)
    config: dict = {}
    paths: list[str] = []
    for section in rng.sample(["data", "actor", "rollout", "trainer", "optim"], 3):
        config[section] = {}
        for i in range(rng.randint(2, 5)):
            key = f"k{i}"
            value = rng.choice([rng.randint(1, 4096), round(rng.uniform(0, 1), 4), f"name{rng.randint(0, 99)}",
                                rng.choice([True, False])])
            config[section][key] = value
            paths.append(f"{section}.{key}")
    for _ in range(rng.randint(2, 6)):  # interpolations of earlier values, whole or inside a string
        section = rng.choice(list(config))
        target = rng.choice(paths)
        shape = rng.choice(["whole", "partial", "relative"])
        key = f"ref{len(paths)}"
        if shape == "whole":
            config[section][key] = "${" + target + "}"
        elif shape == "partial":
            config[section][key] = "run-${" + target + "}-v2"
        else:
            sibling = rng.choice([k for k, v in config[section].items() if not str(v).startswith(("$", "run-"))])
            config[section][key] = "${." + sibling + "}"
        paths.append(f"{section}.{key}")
    return config


@pytest.mark.parametrize("seed", range(40))
def test_interpolations_resolve_as_omegaconf_resolves_them(seed):
    text = yaml.safe_dump(random_config(seed), sort_keys=False)
    expected = leaves(OmegaConf.to_container(OmegaConf.create(text), resolve=True))
    ours = {key: value.value for key, value in YamlConfig(text, "c.yaml").values.items()}
    assert ours == expected


def test_what_needs_the_environment_stays_as_written():
    text = "home: ${oc.env:HOME}\npath: ${home}/data\nlr: 1e-6\n"
    ours = {k: v.value for k, v in YamlConfig(text, "c.yaml").values.items()}
    assert ours == {"home": "${oc.env:HOME}", "path": "${home}/data", "lr": 1e-6}
    assert OmegaConf.create(text).lr == 1e-6  # the scalar reading agrees with OmegaConf's
