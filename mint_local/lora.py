"""Multi-adapter LoRA layers: PEFT's LoRA math, initialisation and file layout, without peft.

A target linear layer is replaced by a `LoraLinear` that keeps the original layer as
`base_layer` (as peft does, so module names and saved keys are the same) and any number of
named adapters, of which a chosen set is active. An adapter adds `B(A(x)) * alpha / r`; A is
initialised like peft's default (Kaiming-uniform with a = sqrt(5)), B with zeros, so a new
adapter leaves the model's output unchanged. Adapter weights stay float32 on a bf16 base model,
so Adam's state and small updates keep their precision; inputs are cast up and the sum is cast
back, as peft does.

Why not peft itself: importing peft imports transformers' model code (about 3 s here), which the
built-in tiny models otherwise never need. The adapter files mint-local writes load with
`peft.PeftModel.from_pretrained`, and the tests check that the two give the same outputs and the
same training steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Adapter:
    A: nn.Parameter  # [rank, in_features]
    B: nn.Parameter  # [out_features, rank]
    scale: float


class Routing:
    """Per-row adapters for a batch whose rows use different adapters (the sampler's packed
    forward). `current` is None outside such a batch (the layers use their `active` set); else
    it lists (adapter, rows) pairs for the rows in flight, rows None meaning all of them, and
    rows in no pair use the base weights alone. One object is shared by every LoRA layer of a
    model, so the caller switches all layers with one assignment per tile."""

    def __init__(self) -> None:
        self.current: list[tuple[str, torch.Tensor | None]] | None = None

    @staticmethod
    def routes(adapters: list[str | None]) -> list[tuple[str, torch.Tensor | None]]:
        """The routes for rows whose adapters are `adapters` (None: the base weights alone)."""
        first = adapters[0]
        if all(a == first for a in adapters):
            return [] if first is None else [(first, None)]
        rows: dict[str, list[int]] = {}
        for i, a in enumerate(adapters):
            if a is not None:
                rows.setdefault(a, []).append(i)
        return [(a, torch.tensor(r, dtype=torch.int64)) for a, r in rows.items()]


class LoraLinear(nn.Module):
    def __init__(self, base_layer: nn.Module) -> None:
        super().__init__()
        self.base_layer = base_layer
        # transformers' Conv1D (GPT-2 style) stores its weight as [in, out]; nn.Linear as [out, in].
        weight = base_layer.weight
        transposed = not isinstance(base_layer, nn.Linear)
        self.in_features = int(weight.shape[0] if transposed else weight.shape[1])
        self.out_features = int(weight.shape[1] if transposed else weight.shape[0])
        # Plain attributes, not registered parameters: adapters are created and dropped at run
        # time, and each training client hands its own parameter list to its optimizer.
        self.adapters: dict[str, Adapter] = {}
        self.active: tuple[str, ...] = ()
        self.routing: Routing | None = None

    def add(self, name: str, rank: int, alpha: float) -> None:
        """A fresh adapter, drawn from torch's global CPU generator (the caller seeds it)."""
        device = self.base_layer.weight.device
        a = torch.empty(rank, self.in_features, dtype=torch.float32)
        nn.init.kaiming_uniform_(a, a=math.sqrt(5))
        b = torch.zeros(self.out_features, rank, dtype=torch.float32)
        self.adapters[name] = Adapter(nn.Parameter(a.to(device)), nn.Parameter(b.to(device)), alpha / rank)

    def remove(self, name: str) -> None:
        self.adapters.pop(name, None)
        self.active = tuple(a for a in self.active if a != name)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result = self.base_layer(x)
        routes = self.routing.current if self.routing is not None else None
        if routes is not None:
            return self._routed(x, result, routes)
        if not self.active:
            return result
        dtype = result.dtype
        for name in self.active:
            adapter = self.adapters[name]
            lowered = x.to(adapter.A.dtype) @ adapter.A.t()
            result = result + (lowered @ adapter.B.t()) * adapter.scale
        return result.to(dtype)

    def _routed(self, x: torch.Tensor, result: torch.Tensor, routes: list[tuple[str, torch.Tensor | None]]) -> torch.Tensor:
        # Each adapter's update is computed on the whole tile and then kept for its own rows:
        # computing it on just those rows would change the matmul's shape, and its rounding,
        # with the number of rows that happen to share the adapter.
        out = result
        for name, rows in routes:
            adapter = self.adapters.get(name)
            if adapter is None:  # this layer is not one of the adapter's targets
                continue
            update = ((x.to(adapter.A.dtype) @ adapter.A.t()) @ adapter.B.t()) * adapter.scale
            if rows is None:
                out = (result + update).to(result.dtype)
            else:
                rows = rows.to(result.device)
                out = out.index_copy(0, rows, (result.index_select(0, rows) + update.index_select(0, rows)).to(result.dtype))
        return out


def inject(model: nn.Module, targets: list[str], name: str, rank: int, alpha: float) -> list[tuple[str, LoraLinear]]:
    """Add adapter `name` to each module named in `targets` (full dotted names), wrapping plain
    layers on first use, and return every LoRA layer of the model by name."""
    for target in targets:
        module = model.get_submodule(target)
        if not isinstance(module, LoraLinear):
            parent_name, _, child = target.rpartition(".")
            module = LoraLinear(module)
            module.routing = routing(model)
            setattr(model.get_submodule(parent_name) if parent_name else model, child, module)
        module.add(name, rank, alpha)
    return layers(model)


def routing(model: nn.Module) -> Routing:
    """The model's shared Routing (created on first use)."""
    shared = model.__dict__.get("lora_routing")
    if shared is None:
        shared = model.__dict__["lora_routing"] = Routing()
    return shared


def layers(model: nn.Module) -> list[tuple[str, LoraLinear]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoraLinear)]
