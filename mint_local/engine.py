"""The model engine: one base model, many LoRA adapters.

Every training client is a named LoRA adapter (lora.py: PEFT's math and file layout) on the
single base model, with its own AdamW (adam.py); samplers are adapters loaded from checkpoints
(a small LRU keeps the recent ones resident). The built-in tiny models run on qwen3.py, any
other model folder on transformers. Everything that touches the model, loading included, runs
on the one worker thread (futures.Worker), so switching the active adapter never races.

Gradients accumulate in each adapter's `.grad` across forward_backward calls until
optim_step. Losses are summed per token (see losses.py).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from . import lora, losses, qwen3, sampling
from .adam import AdamSettings, AdamW
from .checkpoints import CheckpointRef, CheckpointStore
from .cpu_threads import ThreadGovernor
from .errors import NotFound, UserError
from .inputs import PreparedBatch
from .tiny_model import VARIANTS, ensure_tiny_model, served_name

LORA_ALPHA = 32
SAMPLER_ADAPTER_SLOTS = 4
# Logits of one micro-batch stay under this many bytes (float32), so long batches fit.
LOGITS_BUDGET_BYTES = 512 * 1024 * 1024
MAX_MICRO_BATCH_TOKENS = 32768
SMALL_MODEL_PARAMS = 10_000_000
# After each optim_step the adapter must still give finite logits on the start of the last
# sequence it trained on: weights of 1e20 are finite, yet every forward through them is NaN.
PROBE_TOKENS = 32

_ATTN_PARTS = {"self_attn", "attn", "attention", "self_attention", "cross_attn"}
_MLP_PARTS = {"mlp", "feed_forward", "ffn", "block_sparse_moe", "experts"}


def log(msg: str) -> None:
    print(f"mint-local: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class LoraSpec:
    rank: int
    train_mlp: bool = True
    train_attn: bool = True
    train_unembed: bool = True

    def describe(self) -> str:
        return (
            f"rank={self.rank}, train_mlp={self.train_mlp}, train_attn={self.train_attn}, "
            f"train_unembed={self.train_unembed}"
        )


@dataclass
class TrainingModel:
    model_id: str
    spec: LoraSpec
    base_model: str
    session_id: str
    param_names: list[str]
    params: list[torch.nn.Parameter]
    optimizer: AdamW
    created: float = field(default_factory=time.time)
    steps: int = 0
    probe: torch.Tensor | None = None  # int64 [<= PROBE_TOKENS]: the start of the last sequence trained on

    @property
    def adapter(self) -> str:
        return self.model_id


@dataclass(frozen=True)
class AdapterSource:
    """Weights to sample or score with: a checkpoint folder, or None for the plain base model."""

    folder: Path | None
    uid: str | None
    model_path: str | None = None


BASE_WEIGHTS = AdapterSource(None, None)


def td(t: torch.Tensor) -> dict[str, Any]:
    """A tensor in tinker's TensorData wire shape."""
    t = t.detach().to("cpu", torch.float32)
    return {"data": t.reshape(-1).tolist(), "dtype": "float32", "shape": list(t.shape)}


class Engine:
    def __init__(
        self,
        model: str = "tiny",
        *,
        device: str = "auto",
        dtype: str = "auto",
        state_dir: Path | str = ".mint-local",
        serve_any_model: bool = False,
        threads: int | None = None,
        max_context: int | None = None,
        prefix_cache_mb: int | None = None,
    ) -> None:
        self.store = CheckpointStore(Path(state_dir))
        self.serve_any_model = serve_any_model
        self._aliases_logged: set[str] = set()
        self.path, self.name, aliases, builtin = _resolve_model_source(model)
        self.aliases = set(aliases) | {self.name, str(self.path)}
        self.tokenizer_id = str(self.path)
        self.device = _pick_device(device)
        self.dtype = _pick_dtype(dtype, self.device)
        self.model = qwen3.load(self.path, self.device, self.dtype) if builtin else _load_transformers_model(self.path, self.device, self.dtype)
        self.num_parameters = sum(p.numel() for p in self.model.parameters())
        # None: the thread count is fixed (--threads, a small model, or CUDA).
        self.thread_governor: ThreadGovernor | None = None
        if threads is None and self.device.type == "cpu" and self.num_parameters < SMALL_MODEL_PARAMS:
            # A small model's ops are too short to win from splitting across cores; one thread
            # avoids the fan-out cost and leaves the other cores to the client process.
            threads = 1
        if threads:
            torch.set_num_threads(threads)
        elif self.device.type == "cpu":
            # Only the CPUs other work leaves free (cpu_threads.py): on a busy machine a parallel
            # op waits for a thread that is not running.
            self.thread_governor = ThreadGovernor(torch.set_num_threads, ceiling=torch.get_num_threads())
        config = self.model.config
        self.arch = (getattr(config, "architectures", None) or [type(self.model).__name__])[0]
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        self.max_context = _pick_max_context(max_context, int(getattr(config, "max_position_embeddings", 0) or 4096), builtin, self.path)
        self.lm: sampling.LanguageModel = self.model if builtin else sampling.TransformersLM(self.model)
        self.routing = lora.routing(self.model)
        # Requests share attention batches only where the kernels are known to compute each
        # batch row on its own (the built-in model on the CPU); see sampling.py.
        self._merge_cohorts = builtin and self.device.type == "cpu"
        self.prefix_cache_mb = _pick_prefix_cache_mb(prefix_cache_mb, self.device)
        self.decoder = self.new_decoder(prefix_cache_bytes=self.prefix_cache_mb << 20)
        self.groups = _linear_module_groups(self.model)
        self.eos_ids = _eos_ids(self.path, config)
        self._tokenizer = None
        self.models: dict[str, TrainingModel] = {}
        self._layers: list[tuple[str, lora.LoraLinear]] = []
        self._active: str | None | object = object()
        self._sampler_adapters: OrderedDict[str, str] = OrderedDict()
        self._sampler_counter = 0

    # --- static information (safe from any thread) ---------------------------------------------

    def resolve_base_model(self, name: str | None, what: str) -> str:
        if name in self.aliases:
            return self.name
        if self.serve_any_model:
            if name not in self._aliases_logged:
                self._aliases_logged.add(name or "")
                log(f"--serve-any-model: serving {what} for base_model {name!r} with {self.name}")
            return self.name
        raise UserError(
            f"{what}: base_model {name!r} is not served here; this mint-local serves {self.name!r}. "
            "Pass that name, start mint-local with --model PATH for another local model, or with "
            "--serve-any-model to answer every name with the loaded model"
        )

    def capabilities(self) -> dict[str, Any]:
        return {"supported_models": [{"model_name": self.name, "max_context_length": self.max_context}]}

    def get_model(self, model_id: str) -> TrainingModel:
        tm = self.models.get(model_id)
        if tm is not None:
            return tm
        try:
            self.store.read_run(model_id)
        except UserError:
            raise NotFound(f"unknown model_id {model_id!r}; create one with service_client.create_lora_training_client(...)") from None
        raise NotFound(
            f"model {model_id!r} is not loaded in this mint-local process (it was created before a restart "
            "or unloaded). Create a new training client and load_state_with_optimizer() one of its "
            "checkpoints (rest_client.list_checkpoints(run_id) lists them)"
        )

    def info(self, model_id: str) -> dict[str, Any]:
        tm = self.get_model(model_id)
        return {
            "type": "get_info",
            "model_data": {"arch": self.arch, "model_name": self.name, "tokenizer_id": self.tokenizer_id},
            "model_id": model_id,
            "is_lora": True,
            "lora_rank": tm.spec.rank,
            "model_name": self.name,
        }

    def check_loadable(self, tm: TrainingModel, path: str) -> AdapterSource:
        ref, meta = self.store.resolve(path)
        if ref.kind != "training":
            raise UserError(
                f"{path} is a sampler checkpoint (weights only, no optimizer state); load_state needs a "
                "training checkpoint path tinker://RUN/weights/NAME, which training_client.save_state(name) returns"
            )
        self._check_compatible(meta, tm.spec, path)
        return AdapterSource(self.store.dir_for(ref), meta["uid"], path)

    def sampler_source(self, model_path: str) -> AdapterSource:
        ref, meta = self.store.resolve(model_path)
        self.check_same_base(meta, model_path)
        return AdapterSource(self.store.dir_for(ref), meta["uid"], model_path)

    def check_same_base(self, meta: dict[str, Any], path: str) -> None:
        """A checkpoint fits if it was trained on this base model, by name or by folder."""
        if meta.get("base_model") != self.name and meta.get("base_model_path") != str(self.path):
            raise UserError(
                f"{path} was trained on base model {meta.get('base_model')!r}; this mint-local serves {self.name!r}"
            )

    def _check_compatible(self, meta: dict[str, Any], spec: LoraSpec, path: str) -> None:
        self.check_same_base(meta, path)
        saved = LoraSpec(**meta["lora"])
        if saved != spec:
            raise UserError(
                f"{path} was saved with LoRA {saved.describe()}, but this training client has "
                f"{spec.describe()}; create the training client with the same settings before loading it"
            )

    # --- adapters -------------------------------------------------------------------------------

    def _targets(self, spec: LoraSpec) -> list[str]:
        targets = []
        if spec.train_attn:
            targets += self.groups["attn"]
        if spec.train_mlp:
            targets += self.groups["mlp"]
        if spec.train_unembed:
            targets += self.groups["unembed"]
        if not targets:
            raise UserError(f"no layers of {self.arch} match train_attn/train_mlp/train_unembed ({spec.describe()})")
        return targets

    def _inject(self, adapter: str, rank: int, alpha: float, targets: list[str], seed: int | None) -> None:
        # LoRA factors are drawn from the CPU generator, so forking that one makes `seed` exact.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed if seed is not None else int(time.time_ns() % (2**31)))
            try:
                self._layers = lora.inject(self.model, sorted(targets), adapter, rank, alpha)
            except AttributeError as e:
                raise UserError(f"adapter {adapter!r}: {self.arch} has no layer {e}; was it made for another model?") from None
        self._active = object()

    def _remove(self, adapter: str) -> None:
        for _, layer in self._layers:
            layer.remove(adapter)
        self._active = object()

    def _activate(self, adapter: str | None) -> None:
        if adapter == self._active:
            return
        for _, layer in self._layers:
            layer.active = (adapter,) if adapter in layer.adapters else ()
        self._active = adapter

    def _adapter_tensors(self, adapter: str) -> dict[str, torch.nn.Parameter]:
        # peft's key layout, so the saved adapter_model.safetensors loads with PeftModel.from_pretrained.
        out = {}
        for name, layer in self._layers:
            if adapter in layer.adapters:
                out[f"base_model.model.{name}.lora_A.weight"] = layer.adapters[adapter].A
                out[f"base_model.model.{name}.lora_B.weight"] = layer.adapters[adapter].B
        return out

    def _adapter_config(self, rank: int, alpha: float, targets: list[str]) -> dict[str, Any]:
        return {
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": str(self.path),
            "r": rank,
            "lora_alpha": alpha,
            "lora_dropout": 0.0,
            "bias": "none",
            "target_modules": sorted(targets),
            "fan_in_fan_out": False,
            "inference_mode": True,
        }

    def _load_sampler_adapter(self, source: AdapterSource) -> str | None:
        """Make the checkpoint's adapter resident (LRU) and return its adapter name."""
        if source.folder is None:
            return None
        key = source.uid or str(source.folder)
        if key in self._sampler_adapters:
            self._sampler_adapters.move_to_end(key)
            return self._sampler_adapters[key]
        config = json.loads((source.folder / "adapter_config.json").read_text(encoding="utf-8"))
        tensors = self.store.load_tensors(source.folder)
        self._sampler_counter += 1
        name = f"sampler-{self._sampler_counter}"
        self._inject(name, int(config["r"]), float(config["lora_alpha"]), list(config["target_modules"]), seed=0)
        self._copy_into(name, tensors, what=str(source.model_path or source.folder))
        self._sampler_adapters[key] = name
        in_use = self.decoder.adapters_in_use()
        for old_key, old in list(self._sampler_adapters.items()):
            if len(self._sampler_adapters) <= SAMPLER_ADAPTER_SLOTS:
                break
            if old != name and old not in in_use:  # never evict an adapter a request still decodes with
                del self._sampler_adapters[old_key]
                self._remove(old)
                if self.decoder.prefix is not None:
                    self.decoder.prefix.forget(old)
        return name

    def _copy_into(self, adapter: str, tensors: dict[str, torch.Tensor], what: str) -> None:
        own = self._adapter_tensors(adapter)
        missing = sorted(set(own) - set(tensors))
        if missing:
            raise UserError(f"{what}: checkpoint lacks adapter weights {missing[:3]}...; was it saved by another model?")
        with torch.no_grad():
            for key, param in own.items():
                src = tensors[key]
                if src.shape != param.shape:
                    raise UserError(f"{what}: weight {key} has shape {list(src.shape)}, expected {list(param.shape)}")
                param.copy_(src.to(param.device, param.dtype))

    # --- training (worker thread) ---------------------------------------------------------------

    def create_model(self, model_id: str, base_model: str, lora: Any, session_id: str, user_metadata: dict[str, Any] | None) -> dict[str, Any]:
        spec = LoraSpec(rank=lora.rank, train_mlp=lora.train_mlp, train_attn=lora.train_attn, train_unembed=lora.train_unembed)
        self._inject(model_id, spec.rank, LORA_ALPHA, self._targets(spec), lora.seed)
        tensors = self._adapter_tensors(model_id)
        names = sorted(tensors)
        params = [tensors[n] for n in names]
        self.models[model_id] = TrainingModel(model_id, spec, base_model, session_id, names, params, AdamW(params))
        self.store.write_run(
            model_id,
            {
                "training_run_id": model_id,
                "base_model": base_model,
                "lora": asdict(spec),
                "seed": lora.seed,
                "session_id": session_id,
                "user_metadata": user_metadata or {},
                "created": time.time(),
            },
        )
        log(f"created model {model_id} on {self.name} (LoRA {spec.describe()}, {sum(p.numel() for p in params):,} trainable parameters)")
        return {"type": "create_model", "model_id": model_id}

    def unload_model(self, model_id: str) -> dict[str, Any]:
        self.get_model(model_id)
        del self.models[model_id]
        self._remove(model_id)
        return {"type": "unload_model", "model_id": model_id}

    def _micro_batches(self, lengths: list[int]) -> list[list[int]]:
        budget = max(1, min(MAX_MICRO_BATCH_TOKENS, LOGITS_BUDGET_BYTES // (4 * self.vocab_size)))
        batches: list[list[int]] = []
        current: list[int] = []
        longest = 0
        for i, n in enumerate(lengths):
            if current and max(longest, n) * (len(current) + 1) > budget:
                batches.append(current)
                current, longest = [], 0
            current.append(i)
            longest = max(longest, n)
        if current:
            batches.append(current)
        return batches

    def _padded(self, seqs: list[torch.Tensor]) -> torch.Tensor:
        # Right padding needs no attention mask: causal attention never looks ahead.
        width = max(int(s.shape[0]) for s in seqs)
        out = torch.zeros((len(seqs), width), dtype=torch.int64)
        for row, s in enumerate(seqs):
            out[row, : s.shape[0]] = s
        return out.to(self.device)

    @staticmethod
    def _target_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        lse = torch.logsumexp(logits, dim=-1)
        if targets.dim() == 1:
            return logits.gather(-1, targets[:, None]).squeeze(-1) - lse
        return logits.gather(-1, targets) - lse[:, None]

    def forward(self, model_id: str, batch: PreparedBatch, backward: bool) -> dict[str, Any]:
        tm = self.get_model(model_id)
        self._activate(tm.adapter)
        loss_fn = losses.LOSS_FUNCTIONS[batch.loss_fn]
        outputs: list[dict[str, Any]] = [{} for _ in batch.data]
        total = 0.0
        for idxs in self._micro_batches([d.length for d in batch.data]):
            with torch.enable_grad() if backward else torch.inference_mode():
                logits = self.lm.full_logits(self._padded([batch.data[i].tokens for i in idxs]))
                terms = []
                for row, i in enumerate(idxs):
                    d = batch.data[i]
                    lp = self._target_logprobs(logits[row, : d.length], d.targets.to(self.device))
                    inputs = {k: v.to(self.device) for k, v in d.inputs.items()}
                    elementwise = loss_fn(lp, inputs, batch.config)
                    terms.append(elementwise.sum())
                    outputs[i] = {"logprobs": td(lp), "elementwise_loss": td(elementwise)}
                loss = torch.stack(terms).sum()
                if backward:
                    loss.backward()
                    tm.probe = batch.data[idxs[0]].tokens[:PROBE_TOKENS]
            total += float(loss.detach())
        return {
            "loss_fn_output_type": "ArrayRecord",
            "loss_fn_outputs": outputs,
            "metrics": {"loss:sum": total, "num_tokens:sum": float(batch.num_tokens)},
        }

    def optim_step(self, model_id: str, adam: Any) -> dict[str, Any]:
        tm = self.get_model(model_id)
        with_grad = [p for p in tm.params if p.grad is not None]
        grad_norm = 0.0
        if with_grad:
            norm = torch.nn.utils.get_total_norm([p.grad for p in with_grad])
            grad_norm = float(norm)
            if not math.isfinite(grad_norm):
                tm.optimizer.zero_grad()
                raise UserError(
                    "optim_step: the gradient accumulated since the last optim_step has NaN or infinite values "
                    "(a forward_backward's loss was not finite: check its weights, advantages and logprobs). The step "
                    "was skipped and the gradient cleared; the weights and optimizer state are unchanged"
                )
            if adam.grad_clip_norm > 0:
                torch.nn.utils.clip_grads_with_norm_(with_grad, adam.grad_clip_norm, norm)
            self._guarded_step(tm, AdamSettings(adam.learning_rate, adam.beta1, adam.beta2, adam.eps, adam.weight_decay))
        tm.steps += 1
        return {"metrics": {"grad_norm:mean": grad_norm, "learning_rate:mean": adam.learning_rate, "step:max": float(tm.steps)}}

    def _guarded_step(self, tm: TrainingModel, settings: AdamSettings) -> None:
        """One AdamW step that is undone unless the adapter is still usable after it: every weight
        and Adam moment finite, and finite logits on the start of the last sequence trained on.
        A finite but absurd learning rate (1e20) leaves finite weights whose products overflow
        float32, so every later forward and sample would be NaN; checking the weights alone
        misses that. One bad request never leaves the adapter unusable. The copy is of the LoRA
        weights and moments only."""
        params = [p.detach().clone() for p in tm.params]
        state = tm.optimizer.state_dict()
        state = {**state, **{k: [None if t is None else t.clone() for t in state[k]] for k in ("exp_avg", "exp_avg_sq")}}
        try:
            tm.optimizer.step(settings)
            if self._usable(tm):
                return
        except RuntimeError:  # e.g. a step size beyond float32 ("cannot be converted ... without overflow")
            pass
        finally:
            tm.optimizer.zero_grad()
        with torch.no_grad():
            for p, old in zip(tm.params, params, strict=True):
                p.copy_(old)
        tm.optimizer.load_state_dict(state)
        raise UserError(
            f"optim_step: this step (learning_rate={settings.learning_rate:g}) would have made the model's outputs "
            "non-finite (weights, Adam moments or the logits they produce overflow float32), so it was undone: the "
            "weights and optimizer state are exactly as before it, and the gradient was discarded. Lower the "
            "learning rate (LoRA fine-tuning typically uses 1e-5 to 1e-3) or the loss scale (weights, advantages)"
        )

    def _usable(self, tm: TrainingModel) -> bool:
        moments = [t for t in (*tm.optimizer.exp_avg, *tm.optimizer.exp_avg_sq) if t is not None]
        if not all(bool(torch.isfinite(t).all()) for t in (*tm.params, *moments)):
            return False
        probe = tm.probe if tm.probe is not None else torch.arange(min(PROBE_TOKENS, self.vocab_size))
        self._activate(tm.adapter)
        with torch.inference_mode():
            logits = self.lm.full_logits(probe[None].to(self.device))
        return bool(torch.isfinite(logits).all())

    def _checkpoint_meta(self, tm: TrainingModel) -> dict[str, Any]:
        return {
            "base_model": self.name,
            "base_model_path": str(self.path),
            "lora": asdict(tm.spec),
            "steps": tm.steps,
            "model_id": tm.model_id,
        }

    def save_state(self, model_id: str, ref: CheckpointRef, overwrite: bool) -> dict[str, Any]:
        tm = self.get_model(model_id)
        tensors = self._adapter_tensors(tm.adapter)
        optimizer_state = {"param_names": tm.param_names, "steps": tm.steps, "optimizer": tm.optimizer.state_dict()}
        self.store.save(
            ref,
            tensors=tensors,
            adapter_config=self._adapter_config(tm.spec.rank, LORA_ALPHA, self._targets(tm.spec)),
            meta=self._checkpoint_meta(tm),
            optimizer_state=optimizer_state,
            overwrite=overwrite,
        )
        return {"type": "save_weights", "path": ref.tinker_path}

    def save_for_sampler(self, model_id: str, ref: CheckpointRef | None, ephemeral_dir: Path | None) -> Path:
        tm = self.get_model(model_id)
        return self.store.save(
            ref,
            tensors=self._adapter_tensors(tm.adapter),
            adapter_config=self._adapter_config(tm.spec.rank, LORA_ALPHA, self._targets(tm.spec)),
            meta=self._checkpoint_meta(tm),
            target_dir=ephemeral_dir,
        )

    def load_state(self, model_id: str, source: AdapterSource, with_optimizer: bool) -> dict[str, Any]:
        tm = self.get_model(model_id)
        assert source.folder is not None
        self._copy_into(tm.adapter, self.store.load_tensors(source.folder), what=str(source.model_path))
        fresh = AdamW(tm.params)
        steps = 0
        if with_optimizer:
            saved = self.store.load_optimizer(source.folder)
            if saved is None or saved.get("param_names") != tm.param_names:
                raise UserError(f"{source.model_path}: no matching optimizer state in this checkpoint")
            try:
                fresh.load_state_dict(saved["optimizer"])
            except (ValueError, KeyError, TypeError) as e:
                raise UserError(f"{source.model_path}: its optimizer state does not fit this adapter ({e}); load_state() restores the weights alone") from None
            steps = int(saved.get("steps", 0))
        fresh.zero_grad()
        tm.optimizer = fresh
        tm.steps = steps
        return {"type": "load_weights", "path": source.model_path}

    # --- sampling (worker thread) ---------------------------------------------------------------

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = _load_decoder(self.path)
        return self._tokenizer

    def new_decoder(self, **limits: Any) -> sampling.Decoder:
        """A sampler for this model; `limits` override the Decoder's work bounds and turn on its
        prefix cache (`prefix_cache_bytes`; without it every prompt is prefilled whole)."""
        return sampling.Decoder(self.lm, self.routing, vocab_size=self.vocab_size, merge=self._merge_cohorts, **limits)

    def sample_request(
        self,
        source: AdapterSource,
        prompt: list[int],
        num_samples: int,
        params: Any,
        want_prompt_logprobs: bool,
        topk_prompt: int,
        *,
        owner: str | None = None,
        report: sampling.Report = lambda payload: None,
    ) -> sampling.SampleRequest:
        """A sampling request for the decoder (worker thread: it may load the checkpoint's adapter)."""
        adapter = self._load_sampler_adapter(source)
        stop = params.stop
        stop_strings: tuple[str, ...] = ()
        stop_ids: frozenset[int] = frozenset(self.eos_ids)
        if stop is not None:
            items = [stop] if isinstance(stop, str) else list(stop)
            stop_strings = tuple(s for s in items if isinstance(s, str) and s)
            # Explicit stops add to EOS, as in serving engines; only stop=[] turns EOS off too.
            given = frozenset(int(s) for s in items if isinstance(s, int))
            stop_ids = given | frozenset(self.eos_ids) if items else frozenset()
        room = self.max_context - len(prompt)
        max_tokens = room if params.max_tokens is None else min(params.max_tokens, room)
        settings = sampling.SampleSettings(
            max_tokens=max_tokens,
            temperature=params.temperature,
            top_k=params.top_k,
            top_p=params.top_p,
            seed=params.seed,
            stop_ids=stop_ids,
            stop_strings=stop_strings,
        )
        return sampling.SampleRequest(
            prompt,
            num_samples,
            settings,
            adapter,
            device=self.device,
            decode=self._decode,
            want_prompt_logprobs=want_prompt_logprobs,
            topk_prompt=topk_prompt,
            owner=owner,
            report=report,
        )

    def sample(
        self,
        source: AdapterSource,
        prompt: list[int],
        num_samples: int,
        params: Any,
        want_prompt_logprobs: bool,
        topk_prompt: int,
    ) -> dict[str, Any]:
        """Serve one sampling request alone, start to finish (the server batches requests through
        `decoder` instead; results are the same bit for bit)."""
        result: dict[str, Any] = {}
        decoder = self.new_decoder()
        decoder.add(self.sample_request(source, prompt, num_samples, params, want_prompt_logprobs, topk_prompt, report=result.update))
        while decoder.pending():
            decoder.step()
        if "error" in result:
            raise RuntimeError(result["error"])
        return result

    def _decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=False)

    # --- MinT extensions (worker thread) --------------------------------------------------------

    def forward_backward_reverse_kl(self, model_id: str, reference: AdapterSource, data: list[dict[str, Any]], temperature: float) -> dict[str, Any]:
        """Per target position, KL(student || reference) over the full vocabulary at `temperature`,
        times `weights`, summed. The student's position i is paired with the reference position
        at the same distance from the end of `reference_input`, so a reference prompt may differ
        in length from the student's (e.g. a teacher with a privileged system prompt)."""
        tm = self.get_model(model_id)
        reference_logits = []
        self._activate(self._load_sampler_adapter(reference))
        with torch.no_grad():
            for d in data:
                logits = self.lm.full_logits(d["reference"][None].to(self.device))[0].float()
                reference_logits.append(logits)
        self._activate(tm.adapter)
        outputs, total = [], 0.0
        with torch.enable_grad():
            for d, ref_logits in zip(data, reference_logits, strict=True):
                student = self.lm.full_logits(d["student"][None].to(self.device))[0]
                n, offset = student.shape[0], ref_logits.shape[0] - student.shape[0]
                start = max(0, -offset)  # student positions before this have no reference partner
                kl = torch.zeros(n, device=self.device)
                kl[start:] = losses.reverse_kl(student[start:], ref_logits[start + offset :], temperature)
                elementwise = kl * d["weights"].to(self.device)
                loss = elementwise.sum()
                loss.backward()
                tm.probe = d["student"][:PROBE_TOKENS]
                total += float(loss.detach())
                outputs.append({"loss": td(elementwise)})
        return {"type": "mint_forward_backward_reverse_kl", "outputs": outputs, "metrics": {"loss:sum": total}}

    def interpolate(self, sources: list[tuple[CheckpointRef, dict[str, Any]]], coefficients: list[float], out: CheckpointRef) -> dict[str, Any]:
        """Write the LoRA delta sum_i c_i * dW_i as one exact adapter of rank sum_i r_i
        (stack the scaled A factors and the B factors); with coefficients summing to 1 this is
        the weight interpolation sum_i c_i * W_i."""
        loaded = []
        for ref, meta in sources:
            folder = self.store.dir_for(ref)
            config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
            loaded.append((config, self.store.load_tensors(folder), meta))
        modules = sorted({k[: -len(".lora_A.weight")] for _, t, _ in loaded for k in t if k.endswith(".lora_A.weight")})
        tensors: dict[str, torch.Tensor] = {}
        for module in modules:
            a_parts, b_parts = [], []
            shape_a = next(t[f"{module}.lora_A.weight"].shape[1] for _, t, _ in loaded if f"{module}.lora_A.weight" in t)
            shape_b = next(t[f"{module}.lora_B.weight"].shape[0] for _, t, _ in loaded if f"{module}.lora_B.weight" in t)
            for (config, t, _), c in zip(loaded, coefficients, strict=True):
                r = int(config["r"])
                scale = float(config["lora_alpha"]) / r
                if f"{module}.lora_A.weight" in t:
                    a_parts.append(t[f"{module}.lora_A.weight"].float() * (c * scale))
                    b_parts.append(t[f"{module}.lora_B.weight"].float())
                else:
                    a_parts.append(torch.zeros(r, shape_a))
                    b_parts.append(torch.zeros(shape_b, r))
            tensors[f"{module}.lora_A.weight"] = torch.cat(a_parts, dim=0)
            tensors[f"{module}.lora_B.weight"] = torch.cat(b_parts, dim=1)
        rank = sum(int(config["r"]) for config, _, _ in loaded)
        targets = sorted(m[len("base_model.model.") :] for m in modules)
        lora = [LoraSpec(**meta["lora"]) for _, _, meta in loaded]
        spec = LoraSpec(
            rank=rank,
            train_mlp=any(s.train_mlp for s in lora),
            train_attn=any(s.train_attn for s in lora),
            train_unembed=any(s.train_unembed for s in lora),
        )
        self.store.save(
            out,
            tensors=tensors,
            adapter_config=self._adapter_config(rank, rank, targets),
            meta={"base_model": self.name, "base_model_path": str(self.path), "lora": asdict(spec), "steps": 0, "interpolated_from": [r.tinker_path for r, _ in sources], "coefficients": coefficients},
        )
        return {
            "type": "mint_interpolate_checkpoints",
            "path": out.tinker_path,
            "checkpoint_type": "sampler",
            "source_paths": [r.tinker_path for r, _ in sources],
            "coefficients": coefficients,
            "has_rank_shards": False,
        }


# --- model loading --------------------------------------------------------------------------------


def _resolve_model_source(model: str) -> tuple[Path, str, list[str], bool]:
    """(folder, served name, accepted aliases, built-in?) for `tiny`, `tiny-30m` or a local HF
    folder. Built-in variants run on qwen3.py; any other folder on transformers."""
    if model in VARIANTS:
        path = ensure_tiny_model(model)
        return path, served_name(model), [model], True
    path = Path(model).expanduser().resolve()
    if not (path / "config.json").is_file():
        raise UserError(
            f"--model {model!r}: not a tiny variant ({', '.join(VARIANTS)}) and not a Hugging Face model "
            "folder with a config.json (mint-local never downloads models; pass a local folder)"
        )
    aliases = [path.name]
    # An HF cache snapshot (.../models--Org--Name/snapshots/<rev>) also answers to "Org/Name".
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
        aliases.append(path.parent.parent.name[len("models--") :].replace("--", "/"))
    name = aliases[-1] if len(aliases) > 1 else str(path)
    return path, name, aliases, False


def _pick_max_context(asked: int | None, configured: int, builtin: bool, path: Path) -> int:
    """Tokens per sequence (prompt + sampled). The built-in models use RoPE and no learned
    positions, so any length runs; a model folder's own limit can only be lowered (models with
    learned position embeddings fail past it)."""
    if asked is None:
        return configured
    if asked < 16:
        raise UserError(f"--max-context {asked}: use at least 16 tokens")
    if asked > configured and not builtin:
        raise UserError(
            f"--max-context {asked}: {path} declares max_position_embeddings={configured}; only the built-in "
            "tiny models take a longer context than their config says"
        )
    return asked


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _pick_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """The base model's dtype: bf16 on CUDA, float32 on CPU unless asked. Adapters, their Adam
    state and the loss stay float32 whatever this is."""
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if dtype not in DTYPES:
        raise UserError(f"--dtype {dtype!r}: use auto, {' or '.join(DTYPES)}")
    return DTYPES[dtype]


def _pick_prefix_cache_mb(asked: int | None, device: torch.device) -> int:
    """Memory for the prefix cache: what was asked, else 256 MB on the CPU and none on CUDA. On
    an H200 (bench/RESULTS.md, Dec 4) a cached conversation first did not match an uncached one:
    torch's cuDNN attention gave other floats for the same requests from run to run. Without
    cuDNN attention (qwen3._exact_attention) they matched bit for bit in-process; until that is
    also shown through a server on a GPU, reuse there stays opt-in."""
    if asked is not None:
        return max(0, asked)
    return sampling.PREFIX_CACHE_MB if device.type == "cpu" else 0


def _pick_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: torch sees no CUDA device here; use --device cpu or auto")
    if device not in ("cpu", "cuda"):
        raise UserError(f"--device {device!r}: use auto, cpu or cuda")
    return torch.device(device)


def _load_transformers_model(path: Path, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
    except TypeError:  # transformers < 4.56 calls it torch_dtype
        model = AutoModelForCausalLM.from_pretrained(str(path), torch_dtype=dtype)
    model.to(device)
    model.eval()
    model.requires_grad_(False)
    return model


def _load_decoder(path: Path) -> Any:
    """Something with `decode(ids, skip_special_tokens=...)`: the `tokenizers` library (cheap to
    import) when the folder has a tokenizer.json, else transformers' AutoTokenizer."""
    if (path / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(path / "tokenizer.json"))
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def _linear_module_groups(model: torch.nn.Module) -> dict[str, list[str]]:
    linear_types: tuple[type, ...] = (torch.nn.Linear,)
    # GPT-2 style models use transformers' Conv1D; it is loaded only if such a model was.
    pytorch_utils = sys.modules.get("transformers.pytorch_utils")
    if pytorch_utils is not None:
        linear_types += (pytorch_utils.Conv1D,)
    unembed_module = model.get_output_embeddings()
    groups: dict[str, list[str]] = {"attn": [], "mlp": [], "unembed": []}
    for name, module in model.named_modules():
        if module is unembed_module:
            groups["unembed"].append(name)
        elif isinstance(module, linear_types):
            parts = set(name.split("."))
            if parts & _ATTN_PARTS:
                groups["attn"].append(name)
            elif parts & _MLP_PARTS:
                groups["mlp"].append(name)
    return groups


def _eos_ids(path: Path, config: Any) -> list[int]:
    ids: set[int] = set()
    for source in (config, getattr(config, "generation_config", None)):
        eos = getattr(source, "eos_token_id", None) if source is not None else None
        if isinstance(eos, int):
            ids.add(eos)
        elif isinstance(eos, (list, tuple)):
            ids.update(int(e) for e in eos)
    gen = path / "generation_config.json"
    if gen.is_file():
        eos = json.loads(gen.read_text(encoding="utf-8")).get("eos_token_id")
        if isinstance(eos, int):
            ids.add(eos)
        elif isinstance(eos, list):
            ids.update(int(e) for e in eos)
    return sorted(ids)
