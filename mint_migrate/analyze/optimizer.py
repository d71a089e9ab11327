"""The Adam settings train.py trains with: the source's, never MinT's defaults in their place.

`types.AdamParams` in tinker 0.22 takes beta1, beta2, eps, weight_decay and grad_clip_norm. For each,
train.py uses, in order: the value the inputs state (harvest.py, read through the synonym table);
the default of the optimizer class the source builds itself (`torch.optim.AdamW(...)`); the default
of the source framework's trainer (its analyzer's `optimizer_defaults`); and only when the source
says nothing at all and has no framework default, MinT's own choice, reported as such.
"""

from dataclasses import dataclass

from mint_migrate.analyze.harvest import Stated
from mint_migrate.analyze.synonyms import meaning

PARAMS = ("beta1", "beta2", "eps", "weight_decay", "grad_clip_norm")
# MinT's choice when nothing else says: the cookbook's Adam (tinker 0.22's AdamParams default eps is
# 1e-12; the cookbook and our scaffolds pass 1e-8), no decay, no clipping.
MINT_DEFAULTS = {"beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.0, "grad_clip_norm": 0.0}
# torch.optim defaults, for sources that build the optimizer themselves (no clipping unless they clip).
TORCH_CLASSES = {
    "AdamW": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "grad_clip_norm": 0.0},
    "Adam": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0, "grad_clip_norm": 0.0},
    "FusedAdam": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0, "grad_clip_norm": 0.0},
    "AdamW8bit": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "grad_clip_norm": 0.0},
    "PagedAdamW": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "grad_clip_norm": 0.0},
}


@dataclass(frozen=True)
class Origin:
    """Where one Adam setting of train.py comes from."""

    kind: str  # stated | optimizer_class | framework | mint
    text: str  # file:line, or "<framework> default: <name>", or MinT's reason
    item: Stated | None = None


@dataclass
class OptimizerChoice:
    values: dict[str, float]
    origins: dict[str, Origin]
    used: dict[tuple[str, int, str], str]  # (key, line, path) of each stated item used -> the param it set


def choose(framework: str, stated: list[Stated], framework_defaults: dict[str, tuple[float, str]],
           optimizer_class: str | None) -> OptimizerChoice:
    values: dict[str, float] = {}
    origins: dict[str, Origin] = {}
    used: dict[tuple[str, int, str], str] = {}
    found = _stated(stated)
    for param in PARAMS:
        item, value = found.get(param, (None, None))
        if item is not None:
            values[param], origins[param] = value, Origin("stated", str(item.loc), item)
            used[(item.key, item.loc.line, item.loc.path)] = param
        elif optimizer_class in TORCH_CLASSES:
            values[param] = TORCH_CLASSES[optimizer_class][param]
            origins[param] = Origin("optimizer_class", f"torch.optim.{optimizer_class} default")
        elif param in framework_defaults:
            value, name = framework_defaults[param]
            values[param], origins[param] = float(value), Origin("framework", f"{framework} default: {name}")
        else:
            values[param] = MINT_DEFAULTS[param]
            origins[param] = Origin("mint", "the inputs and their framework say nothing: MinT's Adam "
                                            "(the cookbook's values)")
    return OptimizerChoice(values, origins, used)


def _stated(stated: list[Stated]) -> dict[str, tuple[Stated, float]]:
    """The policy's Adam settings the inputs state, by AdamParams name (the run's value wins: the
    harvest already kept one item per name; among synonyms the higher level wins)."""
    out: dict[str, tuple[Stated, float]] = {}
    for item in stated:
        m = meaning(item.key, item.owner)
        if m is None or m.family != "optimizer":
            continue
        pairs: list[tuple[str, object]] = []
        if m.concept == "optimizer.betas" and isinstance(item.value, list | tuple) and len(item.value) == 2:
            pairs = [("beta1", item.value[0]), ("beta2", item.value[1])]
        elif m.concept.startswith("optimizer.") and m.concept != "optimizer.betas":
            pairs = [(m.concept.split(".", 1)[1], item.value)]
        for param, value in pairs:
            if param not in PARAMS or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            old = out.get(param)
            if old is None or item.level >= old[0].level:
                out[param] = (item, float(value))
    if "grad_clip_norm" in out and out["grad_clip_norm"][1] < 0:
        out["grad_clip_norm"] = (out["grad_clip_norm"][0], 0.0)  # a negative norm turns clipping off
    return out
