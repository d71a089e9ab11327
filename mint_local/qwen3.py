"""A compact Qwen3 causal LM in plain torch, for mint-local's built-in tiny models.

Why not transformers here: importing transformers' model code costs about 3 s on a 2-core
machine (it pulls in torch._dynamo, torch.distributed.tensor and sympy), more than the whole
cold-start budget of `mint-local serve`. The built-in tiny models are Qwen3 folders that
mint-local writes itself, with a known, plain configuration (full attention, default RoPE, no
biases), so this module only implements that configuration and refuses any other. Parameter
names match transformers' `Qwen3ForCausalLM`, so it loads the same `model.safetensors` and its
LoRA adapters are interchangeable with ones trained on the transformers model; the tests check
both against transformers and peft. Any other model folder is loaded with transformers.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 - the PyTorch convention
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

# Positions per block of the sampler's RoPE table (Qwen3ForCausalLM._rope_table).
ROPE_BLOCK = 1024
# A prompt's attention runs in pieces that end at multiples of this position (forward_packed),
# so the keys and values of a prompt's first k * PREFILL_BLOCK tokens are the same floats
# whether they were computed with this prompt or with an earlier one that starts the same way:
# the sampler's prefix cache reuses them in these blocks.
PREFILL_BLOCK = 64


class UnsupportedConfig(ValueError):
    pass


@dataclass(frozen=True)
class Qwen3Config:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    tie_word_embeddings: bool
    eos_token_id: int | list[int] | None

    # Read by the engine, as on a transformers config.
    architectures = ("Qwen3ForCausalLM",)

    @classmethod
    def from_folder(cls, folder: Path) -> Qwen3Config:
        raw: dict[str, Any] = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        rope = raw.get("rope_parameters") or {"rope_type": "default", "rope_theta": raw.get("rope_theta", 10000.0)}
        unsupported = {
            "model_type": raw.get("model_type") != "qwen3",
            "rope_type": rope.get("rope_type", "default") != "default",
            "attention_bias": bool(raw.get("attention_bias")),
            "use_sliding_window": bool(raw.get("use_sliding_window")),
            "hidden_act": raw.get("hidden_act", "silu") != "silu",
        }
        bad = [key for key, is_bad in unsupported.items() if is_bad]
        if bad:
            raise UnsupportedConfig(f"{folder}: the built-in Qwen3 does not implement {', '.join(bad)}; load it with transformers")
        return cls(
            vocab_size=int(raw["vocab_size"]),
            hidden_size=int(raw["hidden_size"]),
            intermediate_size=int(raw["intermediate_size"]),
            num_hidden_layers=int(raw["num_hidden_layers"]),
            num_attention_heads=int(raw["num_attention_heads"]),
            num_key_value_heads=int(raw["num_key_value_heads"]),
            head_dim=int(raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"]),
            rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
            rope_theta=float(rope["rope_theta"]),
            max_position_embeddings=int(raw.get("max_position_embeddings", 4096)),
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
            eos_token_id=raw.get("eos_token_id"),
        )


class RowCache:
    """Keys and values of one group of sampling rows (a cohort) for the packed forward: per
    layer one [rows, 2 * kv_heads, capacity, head_dim] buffer, keys then values, that grows by
    doubling, so a decode step writes one position instead of copying the cache. All rows hold
    the same number of tokens.

    The buffers depend only on this cohort's own history (prompt length, steps, rows that
    finished), never on other requests in the batch: attention over them runs with the same
    shapes whether a request is served alone or with others."""

    def __init__(self, num_layers: int) -> None:
        self.layers: list[torch.Tensor | None] = [None] * num_layers
        self.length = 0

    def write(self, layer: int, kv: torch.Tensor) -> torch.Tensor:
        """Append kv ([rows, 2 * kv_heads, new, head_dim]) after the cached tokens; return the
        view of every key and value so far."""
        end = self.length + kv.shape[2]
        buffer = self.layers[layer]
        if buffer is None or buffer.shape[2] < end:
            # A power of two: the capacity (so the strides attention sees) depends only on the
            # length, never on how the cache got there (one prefill, steps, a restored prefix).
            capacity = 1 << (end - 1).bit_length()
            grown = kv.new_empty((kv.shape[0], kv.shape[1], capacity, kv.shape[3]))
            if buffer is not None:
                grown[:, :, : self.length] = buffer[:, :, : self.length]
            buffer = self.layers[layer] = grown
        buffer[:, :, self.length : end] = kv
        return buffer[:, :, :end]

    def expand(self, rows: int) -> RowCache:
        """A new cache with `rows` copies of this one prefilled row (num_samples > 1; requests
        with the same prompt share the prefill)."""
        expanded = RowCache(len(self.layers))
        expanded.length = self.length
        expanded.layers = [None if t is None else t.repeat(rows, 1, 1, 1) for t in self.layers]
        return expanded

    def keep(self, rows: list[int]) -> None:
        """Drop the rows not listed (finished sequences leave the batch)."""
        index = torch.tensor(rows, dtype=torch.int64)
        self.layers = [None if t is None else t.index_select(0, index.to(t.device)) for t in self.layers]

    def blocks(self, start: int, end: int, size: int) -> list[list[torch.Tensor]]:
        """Copies of row 0's keys and values of positions start..end, per block of `size`
        positions: [block][layer] -> [2 * kv_heads, size, head_dim] (the prefix cache's unit)."""
        return [[t[0, :, a : a + size].clone() for t in self.layers if t is not None] for a in range(start, end, size)]

    @classmethod
    def from_blocks(cls, blocks: list[list[torch.Tensor]]) -> RowCache:
        """A one-row cache holding these blocks of positions 0.. in order (see `blocks`)."""
        cache = cls(len(blocks[0]))
        cache.length = sum(b[0].shape[1] for b in blocks)
        capacity = 1 << (cache.length - 1).bit_length()
        for layer in range(len(cache.layers)):
            first = blocks[0][layer]
            buffer = first.new_empty((1, first.shape[0], capacity, first.shape[2]))
            at = 0
            for block in blocks:
                buffer[0, :, at : at + block[layer].shape[1]] = block[layer]
                at += block[layer].shape[1]
            cache.layers[layer] = buffer
        return cache

    @classmethod
    def join(cls, caches: list[RowCache]) -> RowCache:
        """One cache holding the rows of several caches of the same length and capacity (requests
        admitted together with prompts of one length decode as one attention batch)."""
        joined = cls(len(caches[0].layers))
        joined.length = caches[0].length
        joined.layers = [None if t is None else torch.cat([c.layers[i] for c in caches]) for i, t in enumerate(caches[0].layers)]  # type: ignore[misc]
        return joined


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def _norm(norm: RMSNorm, x: torch.Tensor) -> torch.Tensor:
    """RMSNorm in one fused call where that gives the module's exact result (float32): the packed
    forward runs a norm per tile and layer, and on small models each op's overhead counts."""
    if x.dtype == torch.float32:
        return F.rms_norm(x, norm.weight.shape, norm.weight, norm.eps)
    return norm(x)


def _exact_attention(device: torch.device) -> contextlib.AbstractContextManager:
    """The attention kernels the sampler may use. On CUDA not cuDNN's: torch 2.11 on an H200
    picks it for a decode step and for a prompt piece with a mask, and there the same requests
    served twice in one process got other logprobs (~1e-3) and tokens, with or without the prefix
    cache; with flash, memory-efficient or math kernels they were identical, cached or not
    (bench/gpu_exactness.py, bench/RESULTS.md). The CPU keeps torch's choice."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _inv_freq(c: Qwen3Config, device: torch.device) -> torch.Tensor:
    return 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.int64, device=device).float() / c.head_dim))


class Attention(nn.Module):
    def __init__(self, c: Qwen3Config, layer: int) -> None:
        super().__init__()
        self.layer = layer
        self.heads, self.kv_heads, self.head_dim = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.q_proj = nn.Linear(c.hidden_size, c.num_attention_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)
        self.q_norm = RMSNorm(c.head_dim, c.rms_norm_eps)
        self.k_norm = RMSNorm(c.head_dim, c.rms_norm_eps)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, self.heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, t, self.kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = rope[0].unsqueeze(1), rope[1].unsqueeze(1)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        if groups > 1:
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1, scale=self.head_dim**-0.5)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, c: Qwen3Config) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c: Qwen3Config, layer: int) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c, layer)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MLP(c)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), rope)
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen3Model(nn.Module):
    def __init__(self, c: Qwen3Config) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(c, i) for i in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        # RoPE frequencies stay float32 whatever the weights' dtype (set on the device by load()).
        self.inv_freq = _inv_freq(c, torch.device("cpu"))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device, dtype=torch.float32)
        freqs = positions[:, None] * self.inv_freq[None, :]
        angles = torch.cat((freqs, freqs), dim=-1)[None]
        rope = (angles.cos().to(x.dtype), angles.sin().to(x.dtype))
        for layer in self.layers:
            x = layer(x, rope)
        return self.norm(x)


class Qwen3ForCausalLM(nn.Module):
    """Offers the engine's language-model interface directly: `full_logits` (training), and
    `new_cache` and `forward_packed` (sampling)."""

    def __init__(self, config: Qwen3Config) -> None:
        super().__init__()
        self.config = config
        self.model = Qwen3Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    # Prompt positions per block of the sampler's prefix cache (None would turn it off).
    prefix_block: int | None = PREFILL_BLOCK

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def full_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.model(input_ids))

    # --- the packed forward of the sampler --------------------------------------------------

    def new_cache(self) -> RowCache:
        return RowCache(self.config.num_hidden_layers)

    def _rope_table(self, dtype: torch.dtype, positions: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of positions 0.. (at least `positions` of them), sin with its first half
        negated: then rope(x) = x * cos + swap_halves(x) * sin, the same products as
        rotate_half's. Built in blocks of ROPE_BLOCK positions as the context grows (the server
        may run past max_position_embeddings: `--max-context`); a fixed block shape keeps each
        value the same however long the table has grown."""
        table = self.__dict__.get("_rope")
        if table is not None and table[0].dtype == dtype and table[0].shape[0] >= positions:
            return table
        inv_freq = self.model.inv_freq
        half = self.config.head_dim // 2
        cos_blocks, sin_blocks = ([table[0]], [table[1]]) if table is not None and table[0].dtype == dtype else ([], [])
        for start in range(sum(b.shape[0] for b in cos_blocks), positions, ROPE_BLOCK):
            freqs = torch.arange(start, start + ROPE_BLOCK, device=inv_freq.device, dtype=torch.float32)[:, None] * inv_freq[None, :]
            angles = torch.cat((freqs, freqs), dim=-1)
            sin = angles.sin()
            sin[:, :half] = -sin[:, :half]
            cos_blocks.append(angles.cos().to(dtype))
            sin_blocks.append(sin.to(dtype))
        table = self.__dict__["_rope"] = (torch.cat(cos_blocks), torch.cat(sin_blocks))
        return table

    def forward_packed(self, segments: Sequence[Any], tile: int, routing: Any) -> list[torch.Tensor]:
        """Run the new tokens of several sampling requests as one batch; return, per segment,
        float32 logits [rows, new, vocab] (`all_logits`) or [rows, vocab] (last position).

        A segment is `tokens` (rows lists of `new` token ids), a `cache` (RowCache) and
        `adapters` (one per row, None for the base weights). Rows of all segments are flattened
        into one token axis that is cut into tiles of exactly `tile` rows (the last one
        zero-padded), and every matmul, norm and elementwise op runs tile by tile. Attention runs per segment, on that segment's own
        cache (a decode step's on one thread, see below). So each op sees the same shapes
        whatever else is in the batch, and a request's results are bit for bit those it gets alone: CPU (and GPU) matmul kernels change their
        blocking with the number of rows, which moves results by ~1e-7 relative when rows are
        batched with a varying count.

        `routing` (lora.Routing) is pointed at each tile's rows before the tile runs, so the
        LoRA layers add each row's own adapter."""
        c = self.config
        device = self.model.embed_tokens.weight.device
        dtype = self.model.embed_tokens.weight.dtype
        spans, ids, positions, adapters = [], [], [], []
        start = 0
        for seg in segments:
            rows, new = len(seg.tokens), len(seg.tokens[0])
            spans.append((start, start + rows * new, rows, new))
            start += rows * new
            for row in seg.tokens:
                ids.extend(row)
            positions.extend(list(range(seg.cache.length, seg.cache.length + new)) * rows)
            adapters.extend(a for a in seg.adapters for _ in range(new))
        total = start
        padded = -(-total // tile) * tile
        pad_rows = padded - total
        adapters.extend([None] * pad_rows)
        cos_table, sin_table = self._rope_table(dtype, max(positions) + 1)
        flat = torch.tensor([ids + [0] * pad_rows, positions + [0] * pad_rows], dtype=torch.int64).to(device)
        cos, sin = cos_table[flat[1]][:, None, :], sin_table[flat[1]][:, None, :]
        x = self.model.embed_tokens(flat[0])
        heads, kv_heads, head_dim = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        scale, gqa = head_dim**-0.5, heads != kv_heads
        pad = x.new_zeros((padded - total, heads * head_dim)) if padded > total else None

        def rope(t: torch.Tensor, at: slice) -> torch.Tensor:
            swapped = t.view(t.shape[0], t.shape[1], 2, head_dim // 2).flip(2).view(t.shape)
            return t * cos[at] + swapped * sin[at]

        def tiled(row_adapters: list[str | None]) -> list[tuple[slice, Any]]:
            """Tiles over rows with these adapters, each with its LoRA routes."""
            return [(slice(a, a + tile), routing.routes(row_adapters[a : a + tile])) for a in range(0, len(row_adapters), tile)]

        def each_tile(tiles: list[tuple[slice, Any]], fn: Callable[[slice], torch.Tensor]) -> torch.Tensor:
            outs = []
            for at, routes in tiles:
                routing.current = routes
                outs.append(fn(at))
            return outs[0] if len(outs) == 1 else torch.cat(outs)

        # A segment's new tokens attend in pieces that end at multiples of PREFILL_BLOCK
        # (positions from 0), each piece to every key before its end: the pieces, so the
        # attention calls, are the same whether a prompt runs from position 0 or continues a
        # restored prefix, and so are the floats. A piece that starts at 0 is plain causal.
        pieces: list[list[tuple[int, int, torch.Tensor | None]]] = []
        for seg, (_s, _e, _rows, new) in zip(segments, spans, strict=True):
            past, mine = seg.cache.length, []
            for a in range(past, past + new) if new > 1 else ():
                if a == past or a % PREFILL_BLOCK == 0:
                    b = min(past + new, (a // PREFILL_BLOCK + 1) * PREFILL_BLOCK)
                    mask = None if a == 0 else torch.arange(a, b, device=device)[:, None] >= torch.arange(b, device=device)[None, :]
                    mine.append((a - past, b - past, mask))
            pieces.append(mine)
        # A decode step's attention runs on one thread: with more, torch's CPU attention computes
        # the rows on different threads differently (a row's result moves in the last bits with
        # its place in the batch, and a batch with fewer rows than threads takes another path),
        # so a request batched into a cohort would not get what it gets alone.
        threads = torch.get_num_threads() if device.type == "cpu" else 1
        tiles = tiled(adapters)
        with _exact_attention(device):
            for layer in self.model.layers:
                attn = layer.self_attn

                def project(t: slice, layer: Any = layer, attn: Any = attn, x: torch.Tensor = x) -> torch.Tensor:
                    h = _norm(layer.input_layernorm, x[t])
                    q = _norm(attn.q_norm, attn.q_proj(h).view(tile, heads, head_dim))
                    k = _norm(attn.k_norm, attn.k_proj(h).view(tile, kv_heads, head_dim))
                    v = attn.v_proj(h).view(tile, kv_heads, head_dim)
                    return torch.cat((rope(torch.cat((q, k), dim=1), t), v), dim=1)  # one rope for q and k

                qkv = each_tile(tiles, project)  # [padded, heads + 2 * kv_heads, head_dim]
                outs = []
                for seg, (s, e, rows, new), mine in zip(segments, spans, pieces, strict=True):
                    past = seg.cache.length
                    # [rows, heads + 2 * kv_heads, new, head_dim]; decode steps (new == 1) take one op
                    both = qkv[s:e, :, None] if new == 1 else qkv[s:e].view(rows, new, -1, head_dim).transpose(1, 2)
                    cached = seg.cache.write(attn.layer, both[:, heads:])
                    keys, values = cached[:, :kv_heads], cached[:, kv_heads:]
                    if new == 1:
                        if threads > 1:
                            torch.set_num_threads(1)
                        try:
                            out = F.scaled_dot_product_attention(both[:, :heads], keys, values, scale=scale, enable_gqa=gqa)
                        finally:
                            if threads > 1:
                                torch.set_num_threads(threads)
                        outs.append(out.reshape(rows, heads * head_dim))
                        continue
                    parts = [
                        F.scaled_dot_product_attention(
                            both[:, :heads, a:b], keys[:, :, : past + b], values[:, :, : past + b],
                            attn_mask=mask, is_causal=mask is None, scale=scale, enable_gqa=gqa,
                        )
                        for a, b, mask in mine
                    ]  # fmt: skip
                    out = parts[0] if len(parts) == 1 else torch.cat(parts, dim=2)
                    outs.append(out.transpose(1, 2).reshape(rows * new, heads * head_dim))
                if pad is not None:
                    outs.append(pad)
                attended = outs[0] if len(outs) == 1 else torch.cat(outs)

                def finish(t: slice, layer: Any = layer, attn: Any = attn, x: torch.Tensor = x, attended: torch.Tensor = attended) -> torch.Tensor:
                    y = x[t] + attn.o_proj(attended[t])
                    return y + layer.mlp(_norm(layer.post_attention_layernorm, y))

                x = each_tile(tiles, finish)
        for seg, (_, _, _, new) in zip(segments, spans, strict=True):
            seg.cache.length += new
        # The unembedding runs only on the positions whose logits are wanted, again in tiles.
        wanted: list[torch.Tensor] = []
        wanted_adapters: list[str | None] = []
        for seg, (s, e, _rows, new) in zip(segments, spans, strict=True):
            wanted.append(torch.arange(s, e) if seg.all_logits else torch.arange(s + new - 1, e, new))
            wanted_adapters.extend(a for a in seg.adapters for _ in range(new if seg.all_logits else 1))
        index = torch.cat(wanted)
        count = len(index)
        padding = -count % tile
        wanted_adapters.extend([None] * padding)
        picked = x[index.to(device)]
        if padding:
            picked = torch.cat((picked, picked.new_zeros((padding, picked.shape[1]))))
        logits = each_tile(tiled(wanted_adapters), lambda t: self.lm_head(_norm(self.model.norm, picked[t])).float())
        outputs, at = [], 0
        for seg, (_s, _e, rows, new) in zip(segments, spans, strict=True):
            n = rows * new if seg.all_logits else rows
            block = logits[at : at + n]
            outputs.append(block.view(rows, new, -1) if seg.all_logits else block)
            at += n
        return outputs


def load(folder: Path, device: torch.device, dtype: torch.dtype) -> Qwen3ForCausalLM:
    """The model in `folder` (config.json + model.safetensors), frozen, in eval mode."""
    from safetensors.torch import load_file

    config = Qwen3Config.from_folder(folder)
    # Built on the CPU and then overwritten (~5 ms for tiny, ~0.2 s for tiny-30m): building on the
    # meta device would skip that initialisation, but the first op on a meta tensor imports
    # torch._dynamo (about 1 s), far more than it saves.
    model = Qwen3ForCausalLM(config)
    weights = load_file(str(folder / "model.safetensors"))
    if config.tie_word_embeddings:
        weights.setdefault("lm_head.weight", weights["model.embed_tokens.weight"])
    model.load_state_dict(weights, strict=True)
    model.to(device=device, dtype=dtype)
    model.model.inv_freq = _inv_freq(config, device)
    model.eval()
    model.requires_grad_(False)
    return model
