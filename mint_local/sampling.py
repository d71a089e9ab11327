"""Token sampling with a KV cache: temperature, top-k, top-p, stop strings or ids, seeds.

Returned per-token logprobs are log-probabilities of the sampled tokens under the
temperature-scaled model distribution, before top-k/top-p truncation; at temperature 1 they
equal what a training `forward` computes for the same tokens (greedy decoding, temperature
<= 0, reports the plain model logprobs). A sequence stops when it emits a stop token or
completes a stop string (the stopping token is included, `stop_reason="stop"`), or after
`max_tokens` (`stop_reason="length"`). With `stop=None` the tokenizer's EOS ids stop
sampling; `stop=[]` disables every stop, EOS included (tinker's documented meaning).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch


@dataclass
class SampleSettings:
    max_tokens: int
    temperature: float
    top_k: int
    top_p: float
    seed: int | None
    stop_ids: frozenset[int]
    stop_strings: tuple[str, ...]


@dataclass
class Sequence:
    tokens: list[int]
    logprobs: list[float]
    stop_reason: str


class LanguageModel(Protocol):
    """What sampling and the engine need from a model: the built-in qwen3.Qwen3ForCausalLM
    offers it directly, TransformersLM wraps any transformers causal LM."""

    def full_logits(self, input_ids: torch.Tensor) -> torch.Tensor: ...

    def step(self, input_ids: torch.Tensor, cache: Any | None) -> tuple[torch.Tensor, Any]:
        """Last-position float32 logits for `input_ids` after the cached tokens, and the cache
        (which has `batch_repeat_interleave(n)`)."""
        ...


class TransformersLM:
    """A thin adapter over a transformers causal LM that hides the cache keyword (which was
    renamed `past_key_values` -> `cache` in transformers 5)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._keep_kw = "logits_to_keep" if "logits_to_keep" in params else None

    def full_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits

    def step(self, input_ids: torch.Tensor, cache: object | None) -> tuple[torch.Tensor, object]:
        kwargs = {self._cache_kw: cache, "use_cache": True}
        if self._keep_kw:
            kwargs[self._keep_kw] = 1
        out = self.model(input_ids=input_ids, **kwargs)
        new_cache = out.get("cache") if out.get("cache") is not None else out.get("past_key_values")
        return out.logits[:, -1, :].float(), new_cache


def _filter_logits(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    if 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if 0.0 < top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # Drop a token when the mass before it already reaches top_p; the top token always stays.
        drop_sorted = (probs.cumsum(dim=-1) - probs) >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def generate(
    lm: LanguageModel,
    prompt: list[int],
    num_samples: int,
    settings: SampleSettings,
    device: torch.device,
    decode: Callable[[list[int]], str],
) -> list[Sequence]:
    seed = settings.seed if settings.seed is not None else int.from_bytes(os.urandom(8), "little") >> 1
    generator = torch.Generator(device=device).manual_seed(seed)
    greedy = settings.temperature <= 0.0

    logits, cache = lm.step(torch.tensor([prompt], dtype=torch.int64, device=device), None)
    if num_samples > 1:
        cache.batch_repeat_interleave(num_samples)  # type: ignore[union-attr]
        logits = logits.expand(num_samples, -1)

    tokens: list[list[int]] = [[] for _ in range(num_samples)]
    logprobs: list[list[float]] = [[] for _ in range(num_samples)]
    reasons: list[str | None] = [None] * num_samples
    for _ in range(settings.max_tokens):
        if greedy:
            chosen = logits.argmax(dim=-1)
            lp = torch.log_softmax(logits, dim=-1)
        else:
            scaled = logits / settings.temperature
            lp = torch.log_softmax(scaled, dim=-1)
            probs = torch.softmax(_filter_logits(scaled, settings.top_k, settings.top_p), dim=-1)
            chosen = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        chosen_lp = lp.gather(-1, chosen[:, None]).squeeze(-1).tolist()
        chosen_list = chosen.tolist()
        for row in range(num_samples):
            if reasons[row] is not None:
                continue
            tok = chosen_list[row]
            tokens[row].append(tok)
            logprobs[row].append(chosen_lp[row])
            if tok in settings.stop_ids or _ends_with_stop_string(tokens[row], settings.stop_strings, decode):
                reasons[row] = "stop"
        if all(r is not None for r in reasons):
            break
        logits, cache = lm.step(chosen[:, None], cache)
    return [
        Sequence(tokens=tokens[row], logprobs=logprobs[row], stop_reason=reasons[row] or "length")
        for row in range(num_samples)
    ]


def _ends_with_stop_string(tokens: list[int], stops: tuple[str, ...], decode: Callable[[list[int]], str]) -> bool:
    if not stops:
        return False
    # Only the tail can complete a stop string that was not complete one token earlier.
    longest = max(len(s) for s in stops)
    tail = decode(tokens[-(longest + 8) :])
    return any(s in tail for s in stops)


def prompt_logprobs(
    lm: LanguageModel, prompt: list[int], device: torch.device, topk: int
) -> tuple[list[float | None], list[list[tuple[int, float]] | None] | None]:
    """Logprob of each prompt token given the ones before it (None for the first), plus the
    top-k alternatives at each position when topk > 0."""
    ids = torch.tensor([prompt], dtype=torch.int64, device=device)
    lp = torch.log_softmax(lm.full_logits(ids)[0].float(), dim=-1)  # [P, V]
    targets = ids[0, 1:]
    values: list[float | None] = [None] + lp[:-1].gather(-1, targets[:, None]).squeeze(-1).tolist()
    if topk <= 0:
        return values, None
    top = torch.topk(lp[:-1], min(topk, lp.shape[-1]), dim=-1)
    pairs = [list(zip(i, v, strict=True)) for i, v in zip(top.indices.tolist(), top.values.tolist(), strict=True)]
    return values, [None] + pairs
