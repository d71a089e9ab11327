"""Turn request data (datums, prompts) into tensors, rejecting anything the engine cannot run.

Runs in the HTTP handler, before a request is queued, so a bad request gets a 400 at once
with a message that names the datum and the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from . import protocol as p
from .errors import UserError
from .losses import INT_INPUTS, SPECS, resolve_config


MAX_DENSE_VALUES = 50_000_000


@dataclass
class PreparedDatum:
    tokens: torch.Tensor  # int64 [N]
    targets: torch.Tensor  # int64 [N] or [N, K]
    inputs: dict[str, torch.Tensor]  # every loss_fn_input except target_tokens, float32

    @property
    def length(self) -> int:
        return int(self.tokens.shape[0])


@dataclass
class PreparedBatch:
    data: list[PreparedDatum]
    loss_fn: str
    config: dict[str, float]

    @property
    def num_tokens(self) -> int:
        return sum(d.length for d in self.data)


def model_input_tokens(mi: p.ModelInput, what: str, vocab_size: int) -> list[int]:
    tokens: list[int] = []
    for chunk in mi.chunks:
        if chunk.type != "encoded_text":
            raise UserError(
                f"{what}: chunk type {chunk.type!r} is not supported: mint-local serves text-only models, so "
                "image chunks (ImageChunk, ImageAssetPointerChunk) are refused; send EncodedTextChunk token "
                "lists here and run vision code against hosted MinT"
            )
        tokens.extend(chunk.tokens or [])
    for t in tokens:
        if not 0 <= t < vocab_size:
            raise UserError(f"{what}: token id {t} is outside the model's vocabulary [0, {vocab_size})")
    return tokens


def tensor_from_wire(td: p.TensorData | p.ReverseKLTensor, what: str, integer: bool) -> torch.Tensor:
    """Dense torch tensor from tinker's TensorData (dense or CSR sparse); UserError if malformed."""
    dtype = torch.int64 if integer else torch.float32
    data = td.data if isinstance(td.data, list) else [td.data]
    crow = getattr(td, "sparse_crow_indices", None)
    if crow is not None:
        col = getattr(td, "sparse_col_indices", None)
        if col is None or td.shape is None or len(td.shape) != 2:
            raise UserError(f"{what}: a sparse tensor needs sparse_col_indices and a 2-D shape")
        if math.prod(td.shape) > MAX_DENSE_VALUES:
            raise UserError(f"{what}: sparse shape {td.shape} is too large to densify")
        try:
            # check_invariants: malformed indices must be a 400, not a segfault.
            sparse = torch.sparse_csr_tensor(
                torch.tensor(crow, dtype=torch.int64),
                torch.tensor(col, dtype=torch.int64),
                torch.tensor(data, dtype=torch.float64),
                td.shape,
                check_invariants=True,
            )
            dense = sparse.to_dense()
        except (RuntimeError, ValueError) as e:
            raise UserError(f"{what}: invalid sparse tensor: {e}") from None
    else:
        dense = torch.tensor(data, dtype=torch.float64)
        if td.shape is not None:
            if math.prod(td.shape) != dense.numel():
                raise UserError(f"{what}: shape {td.shape} does not match its {dense.numel()} values")
            dense = dense.reshape(td.shape)
    if integer:
        if not torch.equal(dense, dense.round()):
            raise UserError(f"{what}: expected integer token ids, got non-integer values")
        return dense.to(dtype)
    # Checked after the cast: 1e39 is finite in float64 but inf in the float32 the loss uses.
    values = dense.to(dtype)
    if not torch.isfinite(values).all():
        raise UserError(f"{what}: contains NaN or infinite values (or values beyond float32's range, about 3.4e38)")
    return values


def prepare_batch(
    fbi: p.ForwardBackwardInput, *, vocab_size: int, max_length: int, what: str = "forward_backward"
) -> PreparedBatch:
    config = resolve_config(fbi.loss_fn, fbi.loss_fn_config)
    spec = SPECS[fbi.loss_fn]
    if not fbi.data:
        raise UserError(f"{what}: data is empty; pass at least one Datum")
    allowed = set(spec.required) | set(spec.optional)
    prepared = []
    for i, datum in enumerate(fbi.data):
        where = f"{what}: datum {i}"
        keys = set(datum.loss_fn_inputs)
        missing = [k for k in spec.required if k not in keys]
        if missing:
            raise UserError(
                f"{where}: loss_fn={fbi.loss_fn!r} needs loss_fn_inputs {list(spec.required)}; missing {missing}"
            )
        extra = sorted(keys - allowed)
        if extra:
            raise UserError(
                f"{where}: loss_fn_inputs {extra} are not used by loss_fn={fbi.loss_fn!r} "
                f"(accepted: {sorted(allowed)})"
            )
        tokens = model_input_tokens(datum.model_input, f"{where}: model_input", vocab_size)
        n = len(tokens)
        if n == 0:
            raise UserError(f"{where}: model_input is empty")
        if n > max_length:
            raise UserError(f"{where}: model_input has {n} tokens; this model's context is {max_length}")
        tensors = {
            key: tensor_from_wire(td, f"{where}: loss_fn_inputs[{key!r}]", key in INT_INPUTS)
            for key, td in datum.loss_fn_inputs.items()
        }
        targets = tensors.pop("target_tokens")
        if targets.dim() == 0 or targets.shape[0] != n:
            got = "a scalar" if targets.dim() == 0 else f"{targets.shape[0]} entries"
            raise UserError(
                f"{where}: target_tokens has {got} but model_input has {n} tokens; position i of "
                "model_input predicts target_tokens[i], so build input=tokens[:-1], target=tokens[1:]"
            )
        if targets.dim() > 2 or (targets.dim() == 2 and "target_tokens" not in spec.two_dim_ok):
            raise UserError(f"{where}: target_tokens must be 1-D for loss_fn={fbi.loss_fn!r}, got shape {list(targets.shape)}")
        if targets.numel() and (targets.min() < 0 or targets.max() >= vocab_size):
            raise UserError(f"{where}: target_tokens has ids outside the vocabulary [0, {vocab_size})")
        for key, t in tensors.items():
            expected = targets.shape if key in spec.two_dim_ok else (n,)
            if tuple(t.shape) != tuple(expected):
                raise UserError(
                    f"{where}: loss_fn_inputs[{key!r}] has shape {list(t.shape)} but must match "
                    f"target_tokens, shape {list(expected)}"
                )
        prepared.append(PreparedDatum(tokens=torch.tensor(tokens, dtype=torch.int64), targets=targets, inputs=tensors))
    return PreparedBatch(data=prepared, loss_fn=fbi.loss_fn, config=config)
