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

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 - the PyTorch convention
from torch import nn


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


class KVCache:
    """Keys and values per layer, [batch, kv_heads, seen tokens, head_dim]."""

    def __init__(self, num_layers: int) -> None:
        self.layers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * num_layers

    @property
    def seen(self) -> int:
        first = self.layers[0]
        return 0 if first is None else int(first[0].shape[2])

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        past = self.layers[layer]
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        self.layers[layer] = (k, v)
        return k, v

    def batch_repeat_interleave(self, repeats: int) -> None:
        self.layers = [None if kv is None else (kv[0].repeat_interleave(repeats, 0), kv[1].repeat_interleave(repeats, 0)) for kv in self.layers]


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

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor], cache: KVCache | None, past: int) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, self.heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, t, self.kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = rope[0].unsqueeze(1), rope[1].unsqueeze(1)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if cache is not None:
            k, v = cache.update(self.layer, k, v)
        groups = self.heads // self.kv_heads
        if groups > 1:
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        mask = None
        if past and t > 1:  # new tokens after a cached prefix: each sees the prefix and the new ones before it
            mask = torch.arange(t, device=x.device)[:, None] + past >= torch.arange(past + t, device=x.device)[None, :]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=past == 0 and t > 1, scale=self.head_dim**-0.5)
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

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor], cache: KVCache | None, past: int) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), rope, cache, past)
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen3Model(nn.Module):
    def __init__(self, c: Qwen3Config) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(c, i) for i in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        # RoPE frequencies stay float32 whatever the weights' dtype (set on the device by load()).
        self.inv_freq = _inv_freq(c, torch.device("cpu"))

    def forward(self, input_ids: torch.Tensor, cache: KVCache | None) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        past = cache.seen if cache is not None else 0
        positions = torch.arange(past, past + input_ids.shape[1], device=input_ids.device, dtype=torch.float32)
        freqs = positions[:, None] * self.inv_freq[None, :]
        angles = torch.cat((freqs, freqs), dim=-1)[None]
        rope = (angles.cos().to(x.dtype), angles.sin().to(x.dtype))
        for layer in self.layers:
            x = layer(x, rope, cache, past)
        return self.norm(x)


class Qwen3ForCausalLM(nn.Module):
    """Offers the engine's language-model interface directly: `full_logits` and `step`."""

    def __init__(self, config: Qwen3Config) -> None:
        super().__init__()
        self.config = config
        self.model = Qwen3Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def full_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.model(input_ids, None))

    def step(self, input_ids: torch.Tensor, cache: KVCache | None) -> tuple[torch.Tensor, KVCache]:
        cache = cache if cache is not None else KVCache(self.config.num_hidden_layers)
        hidden = self.model(input_ids, cache)
        return self.lm_head(hidden[:, -1:, :])[:, -1, :].float(), cache


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
