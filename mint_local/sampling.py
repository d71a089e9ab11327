"""Sampling with continuous batching: every request in flight decodes in one batch, one token
per step; new requests join at the next step (prefill, then decode with the others) and
finished sequences leave.

Settings stay per request: temperature, top-k, top-p, stop strings or ids, seed and max_tokens.
Returned per-token logprobs are log-probabilities of the sampled tokens under the
temperature-scaled model distribution, before top-k/top-p truncation; at temperature 1 they
equal what a training `forward` computes for the same tokens (greedy decoding, temperature
<= 0, reports the plain model logprobs). A sequence stops when it emits a stop token or
completes a stop string (the stopping token is included, `stop_reason="stop"`), or after
`max_tokens` (`stop_reason="length"`). With `stop=None` the tokenizer's EOS ids stop
sampling; `stop=[]` disables every stop, EOS included (tinker's documented meaning).

Prefix reuse: the keys and values of prompts the server prefilled stay in a PrefixCache (LRU,
bounded in bytes) in blocks of the model's `prefix_block` positions. A request whose prompt
starts with blocks of a recent prompt on the same weights (a conversation re-sending its history,
a group sharing a system prompt) prefills only the rest. The built-in model attends a prompt in
pieces that end at block boundaries (`qwen3.forward_packed`), so the restored keys and values and
every later float are what the request computes with nothing cached. Sampled tokens are not
reused: the decode steps computed their keys and values with other kernel shapes (one query
row, tiles of DECODE_TILE rows), which differ from a prefill's in the last bits.

Exactness: a seeded request gets the same tokens and logprobs, bit for bit, whether it is
served alone or batched with any other requests, and whether or not its prefix was cached. Each request draws from its own generator,
and the model's packed forward computes every row with the same kernels whatever else is in
the batch (see `Qwen3ForCausalLM.forward_packed`). Requests admitted in the same step with
prompts of the same length share one attention call (a cohort); CPU attention on one thread
computes each batch row independently (on more threads it does not: a row's floats depend on
its place in the batch), so decode steps attend on one thread and that is exact too. Models
loaded with transformers, and CUDA, keep one attention batch per request (`merge=False`): there we cannot vouch for the kernels
(on CUDA the attention never runs on cuDNN's kernels, whose floats moved from run to run on an H200;
CUDA's prefix cache stays opt-in until a server-level check there passes).
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import traceback
from collections import OrderedDict, deque
from collections.abc import Callable
from collections.abc import Sequence as Seq
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from .lora import Routing

# Rows per matmul in a decode step, prompt tokens per matmul in a prefill. Fixed per server:
# exactness across batches needs every matmul to have the same shape.
DECODE_TILE = 16
PREFILL_TILE = 32
# Work per scheduler iteration, so one huge request cannot hold the worker for minutes: at most
# this many rows decode one token (whole cohorts, at least one), and prompts are prefilled
# until this many tokens (at least one prompt).
MAX_DECODE_ROWS = 256
MAX_PREFILL_TOKENS = 4096
# While other requests decode, new ones are admitted once the oldest has waited this long, so
# that a burst of requests (a group of concurrent samples) starts together and shares cohorts,
# not one cohort per request. With nothing decoding they start at once.
ADMIT_WINDOW_S = 0.02
# Default memory for the prefix cache's keys and values (`mint-local serve --prefix-cache-mb`).
PREFIX_CACHE_MB = 256


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


@dataclass
class Segment:
    """New tokens for a packed forward: `tokens` (rows lists of `new` ids) continue the rows of `cache`."""

    tokens: list[list[int]]
    cache: Any
    adapters: list[str | None]  # one per row; None = the base weights
    all_logits: bool = False  # logits at every new position (prompt logprobs), else the last one


class LanguageModel(Protocol):
    """What the engine needs from a model: qwen3.Qwen3ForCausalLM offers it directly,
    TransformersLM wraps any transformers causal LM."""

    # Positions per block of the prefix cache, None where prompts' keys and values cannot be
    # reused exactly (TransformersLM). A model with a block size has a cache type with
    # `blocks(start, end, size)` and `from_blocks(blocks)` (qwen3.RowCache).
    prefix_block: int | None

    def full_logits(self, input_ids: torch.Tensor) -> torch.Tensor: ...

    def new_cache(self) -> Any: ...

    def forward_packed(self, segments: Seq[Segment], tile: int, routing: Routing) -> list[torch.Tensor]: ...


class _TransformersCache:
    """A transformers cache with the row operations the decoder needs."""

    def __init__(self) -> None:
        self.hf: Any = None
        self.length = 0

    def expand(self, rows: int) -> _TransformersCache:
        """The one prefilled row as `rows` rows, in place (no prefill is shared on this path)."""
        self.hf.batch_repeat_interleave(rows)
        return self

    def keep(self, rows: list[int]) -> None:
        self.hf.batch_select_indices(torch.tensor(rows, dtype=torch.int64))


class TransformersLM:
    """A thin adapter over a transformers causal LM. It runs each segment as its own batch (no
    tiles), so requests are interleaved but not merged: exact, and fair, not faster."""

    prefix_block = None  # we cannot vouch that a continued prefill computes what a whole one does

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        params = inspect.signature(model.forward).parameters
        # The cache keyword was renamed `past_key_values` -> `cache` in transformers 5.
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._keep_kw = "logits_to_keep" if "logits_to_keep" in params else None

    def full_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits

    def new_cache(self) -> _TransformersCache:
        return _TransformersCache()

    def forward_packed(self, segments: Seq[Segment], tile: int, routing: Routing) -> list[torch.Tensor]:
        device = next(self.model.parameters()).device
        outputs = []
        for seg in segments:
            routing.current = routing.routes(seg.adapters)
            kwargs: dict[str, Any] = {self._cache_kw: seg.cache.hf, "use_cache": True}
            if self._keep_kw and not seg.all_logits:
                kwargs[self._keep_kw] = 1
            out = self.model(input_ids=torch.tensor(seg.tokens, dtype=torch.int64, device=device), **kwargs)
            seg.cache.hf = out.get("cache") if out.get("cache") is not None else out.get("past_key_values")
            seg.cache.length += len(seg.tokens[0])
            logits = out.logits.float()
            outputs.append(logits if seg.all_logits else logits[:, -1, :])
        return outputs


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


def prompt_logprobs(logits: torch.Tensor, prompt: list[int], topk: int) -> tuple[list[float | None], list[list[tuple[int, float]] | None] | None]:
    """From the logits at every prompt position [P, V]: the logprob of each prompt token given
    the ones before it (None for the first), plus the top-k alternatives when topk > 0."""
    lp = torch.log_softmax(logits.float(), dim=-1)
    targets = torch.tensor(prompt[1:], dtype=torch.int64, device=lp.device)
    values: list[float | None] = [None] + lp[:-1].gather(-1, targets[:, None]).squeeze(-1).tolist()
    if topk <= 0:
        return values, None
    top = torch.topk(lp[:-1], min(topk, lp.shape[-1]), dim=-1)
    pairs = [list(zip(i, v, strict=True)) for i, v in zip(top.indices.tolist(), top.values.tolist(), strict=True)]
    return values, [None] + pairs


Report = Callable[[dict[str, Any]], None]


@dataclass(eq=False)
class _Block:
    parent: Any  # the key of the block before it, None for a prompt's first block
    tokens: tuple[int, ...]
    kv: list[torch.Tensor]  # per layer, [2 * kv_heads, block, head_dim]
    nbytes: int


class PrefixCache:
    """Keys and values of prompts' first blocks, per weights (adapter), least recently used
    evicted past `max_bytes`.

    A block is keyed by its adapter and a hash of its tokens and its parent's key, so a lookup
    walks a prompt block by block; each hit is checked (same parent, same tokens), so a hash
    collision is a miss, never a wrong reuse. Blocks of one prompt are touched leaf first, so
    under pressure a conversation loses its newest blocks before the history they extend."""

    def __init__(self, block: int, max_bytes: int, from_blocks: Callable[[list[list[torch.Tensor]]], Any]) -> None:
        self.block = block
        self.max_bytes = max_bytes
        self._from_blocks = from_blocks
        self._blocks: OrderedDict[tuple[str | None, int], _Block] = OrderedDict()
        self.bytes = 0
        self.reused_tokens = 0  # prompt tokens not prefilled thanks to the cache (bench, tests)

    def __len__(self) -> int:
        return len(self._blocks)

    def _chain(self, adapter: str | None, prompt: list[int], blocks: int) -> list[tuple[tuple[str | None, int], tuple[int, ...]]]:
        chain: list[tuple[tuple[str | None, int], tuple[int, ...]]] = []
        parent: Any = None
        for i in range(blocks):
            tokens = tuple(prompt[i * self.block : (i + 1) * self.block])
            key = (adapter, hash((parent, tokens)))
            chain.append((key, tokens))
            parent = key
        return chain

    def restore(self, adapter: str | None, prompt: list[int]) -> tuple[Any, int]:
        """(a cache holding the longest cached prefix of `prompt`, its length) or (None, 0). At
        least the prompt's last token is left to prefill: its logits choose the first token."""
        found: list[_Block] = []
        parent = None
        for key, tokens in self._chain(adapter, prompt, (len(prompt) - 1) // self.block):
            entry = self._blocks.get(key)
            if entry is None or entry.parent != parent or entry.tokens != tokens:
                break
            found.append(entry)
            parent = key
        if not found:
            return None, 0
        length = len(found) * self.block
        self.reused_tokens += length
        return self._from_blocks([b.kv for b in found]), length

    def store(self, adapter: str | None, prompt: list[int], cache: Any) -> None:
        """Keep the complete blocks of `prompt`, whose keys and values `cache` holds (one row,
        the whole prompt prefilled); blocks already kept are only marked used."""
        chain = self._chain(adapter, prompt, len(prompt) // self.block)
        parent = None
        for i, (key, tokens) in enumerate(chain):
            entry = self._blocks.get(key)
            if entry is None or entry.parent != parent or entry.tokens != tokens:
                if entry is not None:  # a hash collision: the newer prompt takes the key
                    self._drop(key)
                kv = cache.blocks(i * self.block, (i + 1) * self.block, self.block)[0]
                entry = self._blocks[key] = _Block(parent, tokens, kv, sum(t.numel() * t.element_size() for t in kv))
                self.bytes += entry.nbytes
            parent = key
        for key, _ in reversed(chain):
            self._blocks.move_to_end(key)
        while self.bytes > self.max_bytes and self._blocks:
            self._drop(next(iter(self._blocks)))

    def forget(self, adapter: str) -> None:
        """Drop every block computed with `adapter` (its weights were unloaded)."""
        for key in [k for k in self._blocks if k[0] == adapter]:
            self._drop(key)

    def _drop(self, key: tuple[str | None, int]) -> None:
        self.bytes -= self._blocks.pop(key).nbytes


class SampleRequest:
    """One sampling request: its `num_samples` rows decode in lockstep until each stops."""

    def __init__(
        self,
        prompt: list[int],
        num_samples: int,
        settings: SampleSettings,
        adapter: str | None,
        *,
        device: torch.device,
        decode: Callable[[list[int]], str],
        want_prompt_logprobs: bool = False,
        topk_prompt: int = 0,
        owner: str | None = None,
        report: Report = lambda payload: None,
    ) -> None:
        self.prompt = prompt
        self.n = num_samples
        self.settings = settings
        self.adapter = adapter
        seed = settings.seed if settings.seed is not None else int.from_bytes(os.urandom(8), "little") >> 1
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.decode = decode
        self.want_prompt_logprobs = want_prompt_logprobs
        self.topk_prompt = topk_prompt
        self.owner = owner
        self.report = report
        self.tokens: list[list[int]] = [[] for _ in range(num_samples)]
        self.logprobs: list[list[float]] = [[] for _ in range(num_samples)]
        self.reasons: list[str | None] = [None] * num_samples
        self.alive = list(range(num_samples))  # samples still decoding
        self.steps = 0
        self.extra: dict[str, Any] = {}
        self.arrived = time.monotonic()

    @property
    def greedy(self) -> bool:
        return self.settings.temperature <= 0.0

    def filters(self, vocab: int) -> bool:
        return 0 < self.settings.top_k < vocab or 0.0 < self.settings.top_p < 1.0

    def take(self, sample: int, token: int, logprob: float) -> None:
        self.tokens[sample].append(token)
        self.logprobs[sample].append(logprob)
        s = self.settings
        if token in s.stop_ids or _ends_with_stop_string(self.tokens[sample], s.stop_strings, self.decode):
            self.reasons[sample] = "stop"

    def end_step(self) -> None:
        self.steps += 1
        self.alive = [i for i in self.alive if self.reasons[i] is None] if self.steps < self.settings.max_tokens else []

    def result(self) -> dict[str, Any]:
        sequences = [
            {"stop_reason": self.reasons[i] or "length", "tokens": self.tokens[i], "logprobs": self.logprobs[i]}
            for i in range(self.n)
        ]
        return {"type": "sample", "sequences": sequences, **self.extra}


@dataclass(eq=False)
class _Cohort:
    """Rows that share one cache: requests admitted together with prompts of one length."""

    cache: Any
    rows: list[tuple[SampleRequest, int]]  # (request, sample) per cache row; a request's rows are adjacent
    requests: list[SampleRequest] = field(default_factory=list)


def _ends_with_stop_string(tokens: list[int], stops: tuple[str, ...], decode: Callable[[list[int]], str]) -> bool:
    if not stops:
        return False
    # Only the tail can complete a stop string that was not complete one token earlier.
    longest = max(len(s) for s in stops)
    tail = decode(tokens[-(longest + 8) :])
    return any(s in tail for s in stops)


class Decoder:
    """Runs the sampling requests in flight, one bounded iteration per `step()`: prefill the
    requests that arrived (up to MAX_PREFILL_TOKENS), then decode one token for up to
    MAX_DECODE_ROWS rows, taking cohorts in turn. Finished requests report their result."""

    def __init__(
        self,
        lm: LanguageModel,
        routing: Routing,
        *,
        vocab_size: int,
        merge: bool,
        decode_tile: int = DECODE_TILE,
        prefill_tile: int = PREFILL_TILE,
        max_decode_rows: int = MAX_DECODE_ROWS,
        max_prefill_tokens: int = MAX_PREFILL_TOKENS,
        admit_window: float = ADMIT_WINDOW_S,
        prefix_cache_bytes: int = 0,
    ) -> None:
        self.lm = lm
        block = getattr(lm, "prefix_block", None)
        self.prefix: PrefixCache | None = None
        if block and prefix_cache_bytes > 0:
            self.prefix = PrefixCache(block, prefix_cache_bytes, type(lm.new_cache()).from_blocks)
        self.routing = routing
        self.vocab_size = vocab_size
        self.merge = merge
        self.decode_tile, self.prefill_tile = decode_tile, prefill_tile
        self.max_decode_rows, self.max_prefill_tokens = max_decode_rows, max_prefill_tokens
        self.admit_window = admit_window
        self.waiting: deque[SampleRequest] = deque()
        self.cohorts: deque[_Cohort] = deque()

    # --- the worker's interface -------------------------------------------------------------

    def add(self, request: SampleRequest) -> None:
        self.waiting.append(request)

    def pending(self) -> bool:
        return bool(self.waiting or self.cohorts)

    def adapters_in_use(self) -> set[str]:
        live = [r.adapter for r in self.waiting] + [r.adapter for c in self.cohorts for r in c.requests]
        return {a for a in live if a is not None}

    def step(self) -> None:
        with torch.inference_mode():
            self._step()

    def _step(self) -> None:
        admitted: list[SampleRequest] = []
        budget = self.max_prefill_tokens
        due = not self.cohorts or (self.waiting and time.monotonic() - self.waiting[0].arrived >= self.admit_window)
        while due and self.waiting and (not admitted or len(self.waiting[0].prompt) <= budget):
            request = self.waiting.popleft()
            budget -= len(request.prompt)
            admitted.append(request)
        if admitted:
            self._guarded(admitted, lambda: self._prefill(admitted))
        if self.cohorts:
            batch: list[_Cohort] = []
            rows = 0
            while self.cohorts and (not batch or rows + len(self.cohorts[0].rows) <= self.max_decode_rows):
                cohort = self.cohorts.popleft()
                batch.append(cohort)
                rows += len(cohort.rows)
            self._guarded([r for c in batch for r in c.requests], lambda: self._decode(batch))

    def cancel(self, owner: str, message: str) -> int:
        """Drop every request of `owner` (queued or decoding); each reports `message` as its error."""
        dropped = [r for r in self.waiting if r.owner == owner]
        self.waiting = deque(r for r in self.waiting if r.owner != owner)
        for cohort in list(self.cohorts):
            gone = [r for r in cohort.requests if r.owner == owner]
            if gone:
                dropped += gone
                self._remove_requests(cohort, set(map(id, gone)))
        for request in dropped:
            request.report({"error": message, "category": "user"})
        return len(dropped)

    def fail_all(self, message: str) -> None:
        requests = list(self.waiting) + [r for c in self.cohorts for r in c.requests]
        self.waiting.clear()
        self.cohorts.clear()
        for request in requests:
            request.report({"error": message, "category": "server"})

    # --- one iteration ----------------------------------------------------------------------

    def _forward(self, segments: list[Segment], tile: int) -> list[torch.Tensor]:
        try:
            return self.lm.forward_packed(segments, tile, self.routing)
        finally:
            self.routing.current = None  # training forwards use each layer's active adapter again

    def _guarded(self, requests: list[SampleRequest], run: Callable[[], None]) -> None:
        """Run one phase; if it fails, its requests fail (the server and other requests go on)."""
        try:
            run()
        except Exception as e:  # noqa: BLE001 - one bad batch must not take the sampler down
            traceback.print_exc(file=sys.stderr)
            ids = set(map(id, requests))
            for cohort in list(self.cohorts):
                self._remove_requests(cohort, ids)
            for request in requests:
                request.report({"error": f"mint-local internal error while sampling: {type(e).__name__}: {e}", "category": "server"})

    def _prefill(self, requests: list[SampleRequest]) -> None:
        # Requests for the same prompt on the same weights (a group of samples sent as separate
        # requests) share one prefill: the same computation, so each still gets what it gets alone.
        segments: dict[Any, Segment] = {}
        mine: list[Segment] = []
        firsts: list[tuple[SampleRequest, Segment]] = []  # per segment, the request it was made for
        for r in requests:
            all_logits = r.want_prompt_logprobs or r.topk_prompt > 0
            key = (r.adapter, tuple(r.prompt), all_logits) if self.merge else id(r)
            if key not in segments:
                cache, cached = None, 0
                if self.prefix is not None and not all_logits:  # prompt logprobs need every position
                    cache, cached = self.prefix.restore(r.adapter, r.prompt)
                segments[key] = Segment([r.prompt[cached:]], cache if cache is not None else self.lm.new_cache(), [r.adapter], all_logits)
                firsts.append((r, segments[key]))
            mine.append(segments[key])
        outputs = dict(zip(map(id, segments.values()), self._forward(list(segments.values()), self.prefill_tile), strict=True))
        if self.prefix is not None:
            for r, seg in firsts:
                self.prefix.store(r.adapter, r.prompt, seg.cache)
        live: list[tuple[SampleRequest, Segment, torch.Tensor]] = []
        for r, seg in zip(requests, mine, strict=True):
            out = outputs[id(seg)]
            if seg.all_logits:
                values, top = prompt_logprobs(out[0], r.prompt, r.topk_prompt)
                r.extra = {"prompt_logprobs": values if r.want_prompt_logprobs else None, "topk_prompt_logprobs": top}
            if r.settings.max_tokens <= 0:
                r.report(r.result())
            else:
                live.append((r, seg, out[0, -1] if seg.all_logits else out[0]))
        if not live:
            return
        logits = torch.cat([last.expand(r.n, -1) for r, _, last in live])
        self._choose(logits, [(r, list(range(r.n))) for r, _, _ in live])
        started: dict[Any, list[tuple[SampleRequest, Any]]] = {}
        for r, seg, _ in live:
            r.end_step()
            if not r.alive:
                r.report(r.result())
                continue
            started.setdefault(len(r.prompt) if self.merge else id(r), []).append((r, seg.cache.expand(len(r.alive))))
        for group in started.values():
            caches = [cache for _, cache in group]
            cache = caches[0] if len(caches) == 1 else type(caches[0]).join(caches)
            rows = [(r, i) for r, _ in group for i in r.alive]
            self.cohorts.append(_Cohort(cache, rows, [r for r, _ in group]))

    def _decode(self, batch: list[_Cohort]) -> None:
        segments = [
            Segment([[r.tokens[i][-1]] for r, i in c.rows], c.cache, [r.adapter for r, _ in c.rows])
            for c in batch
        ]
        outputs = self._forward(segments, self.decode_tile)
        logits = outputs[0] if len(outputs) == 1 else torch.cat(outputs)
        spans = [(r, r.alive) for c in batch for r in c.requests]
        self._choose(logits, spans)
        for cohort in batch:
            for r in cohort.requests:
                r.end_step()
            finished = {id(r) for r in cohort.requests if not r.alive}
            alive = {(id(r), i) for r in cohort.requests for i in r.alive}
            keep = [k for k, (r, i) in enumerate(cohort.rows) if (id(r), i) in alive]
            if len(keep) != len(cohort.rows) and keep:
                cohort.cache.keep(keep)
            cohort.rows = [cohort.rows[k] for k in keep]
            for r in cohort.requests:
                if id(r) in finished:
                    r.report(r.result())
            cohort.requests = [r for r in cohort.requests if id(r) not in finished]
            if cohort.rows:
                self.cohorts.append(cohort)

    def _remove_requests(self, cohort: _Cohort, ids: set[int]) -> None:
        keep = [k for k, (r, _) in enumerate(cohort.rows) if id(r) not in ids]
        if len(keep) != len(cohort.rows) and keep:
            cohort.cache.keep(keep)
        cohort.rows = [cohort.rows[k] for k in keep]
        cohort.requests = [r for r in cohort.requests if id(r) not in ids]
        if not cohort.rows and cohort in self.cohorts:
            self.cohorts.remove(cohort)

    def _choose(self, logits: torch.Tensor, spans: list[tuple[SampleRequest, list[int]]]) -> None:
        """Pick one token per row. Rows come request by request (`spans`: each request and the
        samples its rows stand for). Every op is row-wise, except the uniform numbers, which
        each request draws from its own generator for its own rows.

        The draw inverts the CDF with one uniform number per row: torch.multinomial draws one
        exponential per vocabulary entry (2048 per row here), which cost more than the model's
        whole decode step."""
        device = logits.device
        temperatures = [1.0 if r.greedy else r.settings.temperature for r, samples in spans for _ in samples]
        scaled = logits / torch.tensor(temperatures, dtype=logits.dtype, device=device)[:, None]
        logprobs = torch.log_softmax(scaled, dim=-1)
        chosen = logits.argmax(dim=-1)
        if not all(r.greedy for r, _ in spans):
            probs = torch.softmax(scaled, dim=-1)
            uniforms = []
            at = 0
            for r, samples in spans:
                rows = slice(at, at + len(samples))
                at += len(samples)
                if r.greedy:
                    uniforms.append(torch.zeros(len(samples), device=device))
                    continue
                if r.filters(self.vocab_size):
                    probs[rows] = torch.softmax(_filter_logits(scaled[rows], r.settings.top_k, r.settings.top_p), dim=-1)
                uniforms.append(torch.rand(len(samples), generator=r.generator, device=device))
            cdf = probs.cumsum(dim=-1)
            # 1 - u lies in (0, 1], so the target is in (0, total] and the first index whose CDF
            # reaches it always has probability > 0.
            target = (1.0 - torch.cat(uniforms)) * cdf[:, -1]
            drawn = torch.searchsorted(cdf, target[:, None]).squeeze(-1).clamp_(max=cdf.shape[-1] - 1)
            greedy_rows = [r.greedy for r, samples in spans for _ in samples]
            chosen = torch.where(torch.tensor(greedy_rows, device=device), chosen, drawn) if any(greedy_rows) else drawn
        chosen_lp = logprobs.gather(-1, chosen[:, None]).squeeze(-1).tolist()
        chosen_ids = chosen.tolist()
        at = 0
        for r, samples in spans:
            for sample in samples:
                r.take(sample, chosen_ids[at], chosen_lp[at])
                at += 1
