"""Run a source training script for one real step and record what its loss trains on.

    python -m mint_migrate.parity.harness --script SRC --model DIR --rows N --out RECORD.json [--data FILE] [-- ARGS]

This runs in a process of its own (parity.source_side starts it): it imports torch, transformers
and the source framework, changes a few of their entry points, runs the user's script unchanged
with `runpy`, and stops it right after the first backward pass. What changes, and why each change
leaves the objective alone:

- every `from_pretrained` loads the one tiny model folder both sides share, in float32 (the
  script's Hub model is not here, and a step-0 comparison needs the same weights on both sides);
- `load_dataset` keeps the first N rows (or reads --data instead, for a Hub dataset offline);
  the rows it loaded are recorded, so train.py is fed exactly the same ones;
- TrainingArguments: one step of N rows on the CPU, in float32, nothing saved or reported;
  NEFTune noise off (random by design); the script's own batch settings are recorded;
- a PEFT config is dropped: LoRA starts as the identity (B = 0), so step 0 is the base model's;
- a plain loop's DataLoader gives its first N items in order as one batch;
- a Tinker-SDK script runs against the mint-local train.py uses (the parent points TINKER_BASE_URL
  there); its first forward_backward's datums and the loss the server returned are its step;
- GRPO: GRPOTrainer scores the completions train.py sampled (given with --completions) instead of
  generating its own, and its advantages are kept. This is the one place TRL's internals resist:
  both hooks are private methods of TRL 1.16 (`_generate_single_turn`, `_compute_loss`), so another
  TRL version may need them adjusted; rewards, advantages and the loss are TRL's own code.

What is measured, not assumed: the first `backward()` is the step's loss; a hook on each forward
pass that runs with gradients keeps the tokens and the gradient of that loss with respect to each
token's log-probability. For a weighted cross-entropy L = -sum_t w_t log p_t that gradient is
-w_t: the per-token weight in the source's own normalisation, whatever code computed it (TRL's
token mean, a hand-written mask, a division by the accumulation steps). From a plain model's
logits the weight is read off dL/dlogits = w_t (softmax - onehot(target)), and a loss that is not
of that form is reported as such.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import runpy
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from mint_migrate.parity.compare import text_leaves
from mint_migrate.parity.source_side import uses_trl


class StepDone(BaseException):
    """Raised after the first backward pass. BaseException: a script's `except Exception` must
    not swallow it."""


class NeedsData(BaseException):
    """The script's dataset could not be loaded here (a Hub dataset, offline)."""


class Watch:
    """Everything the patches see during the run."""

    def __init__(self, model_dir: Path, rows: int, data: Path | None) -> None:
        self.model_dir = model_dir
        self.n_rows = rows
        self.data = data
        self.notes: list[str] = []
        self.rows: list[dict] | None = None
        self.calls: list[dict] = []
        self.loss: float | None = None
        self.trainer: Any = None
        self.trainer_depth = 0
        self.in_trainer = False
        self.forward_depth = 0
        self.source_batch: dict[str, Any] = {}
        self.requested_models: set[str] = set()
        self.completions: list[dict] | None = None  # GRPO: the completions to score, from train.py's samples
        self.advantages: list[float] = []
        self.tinker_step: dict | None = None  # a Tinker-SDK script's first forward_backward, as sent

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


# --- loaders: every model and tokenizer is the shared tiny folder -----------------------------------


def patch_loaders(watch: Watch) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoProcessor, AutoTokenizer, PreTrainedModel
    from transformers.models.auto.auto_factory import _BaseAutoModelClass
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase

    folder = str(watch.model_dir)
    model_type = AutoConfig.from_pretrained(folder).model_type
    kept_tokenizer_options = ("padding_side", "truncation_side", "model_max_length", "add_bos_token", "add_eos_token")
    original_auto_model = _BaseAutoModelClass.from_pretrained.__func__
    original_model = PreTrainedModel.from_pretrained.__func__
    original_tokenizer = AutoTokenizer.from_pretrained.__func__
    original_base_tokenizer = PreTrainedTokenizerBase.from_pretrained.__func__
    original_config = AutoConfig.from_pretrained.__func__

    def requested(name: Any) -> None:
        if isinstance(name, (str, os.PathLike)) and str(name) != folder:
            watch.requested_models.add(str(name))

    def auto_model(cls, name=None, *args, **kwargs):
        requested(name)
        return original_auto_model(cls, folder, dtype=torch.float32)

    def model(cls, name=None, *args, **kwargs):
        requested(name)
        if getattr(cls.config_class, "model_type", model_type) != model_type:
            # LlamaForCausalLM.from_pretrained(...): the tiny weights only fit their own class.
            return original_auto_model(AutoModelForCausalLM, folder, dtype=torch.float32)
        return original_model(cls, folder, dtype=torch.float32)

    def tokenizer(cls, name=None, *args, **kwargs):
        requested(name)
        options = {k: v for k, v in kwargs.items() if k in kept_tokenizer_options}
        return original_tokenizer(AutoTokenizer, folder, **options)

    def base_tokenizer(cls, name=None, *args, **kwargs):
        if str(name) == folder:  # AutoTokenizer's own call, once it has picked the class
            return original_base_tokenizer(cls, name, *args, **kwargs)
        return tokenizer(cls, name, *args, **kwargs)

    def config(cls, name=None, *args, **kwargs):
        requested(name)
        kwargs.pop("trust_remote_code", None)
        return original_config(AutoConfig, folder, **kwargs)

    _BaseAutoModelClass.from_pretrained = classmethod(auto_model)
    PreTrainedModel.from_pretrained = classmethod(model)
    AutoTokenizer.from_pretrained = classmethod(tokenizer)
    PreTrainedTokenizerBase.from_pretrained = classmethod(base_tokenizer)
    AutoProcessor.from_pretrained = classmethod(tokenizer)
    AutoConfig.from_pretrained = classmethod(config)


# --- datasets: the first N rows, recorded -----------------------------------------------------------


class _AnySplit(dict):
    """A DatasetDict stand-in for --data: every split name the script asks for is the data."""

    def __missing__(self, key: str):
        return self["train"]


def _head(dataset: Any, n: int) -> Any:
    """The first n rows of a datasets Dataset / IterableDataset / DatasetDict (other things as they are)."""
    from datasets import Dataset, DatasetDict, IterableDataset

    if isinstance(dataset, DatasetDict):
        return DatasetDict({name: _head(split, n) for name, split in dataset.items()})
    if isinstance(dataset, Dataset):
        return dataset.select(range(min(n, len(dataset))))
    if isinstance(dataset, IterableDataset):
        return Dataset.from_list(list(dataset.take(n)))
    return dataset


def _rows_of(dataset: Any) -> list[dict] | None:
    from datasets import Dataset, DatasetDict

    if isinstance(dataset, (DatasetDict, _AnySplit)) and len(dataset):
        dataset = dataset["train"] if "train" in dataset else next(iter(dataset.values()))
    if isinstance(dataset, Dataset):
        return json.loads(json.dumps(dataset.to_list(), default=str))
    return None


def patch_datasets(watch: Watch) -> None:
    try:
        import datasets
        import datasets.load
    except ImportError:
        return
    original = datasets.load_dataset

    def load_dataset(path, *args, **kwargs):
        if watch.data is not None:
            builder = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}.get(
                watch.data.suffix.lower(), "json"
            )
            loaded = _head(original(builder, data_files=str(watch.data), split="train"), watch.n_rows)
            watch.note(f"load_dataset({path!r}) read the first {len(loaded)} rows of {watch.data.name} instead")
            result = loaded if kwargs.get("split") or len(args) >= 3 else _AnySplit(train=loaded)
        else:
            try:
                result = _head(original(path, *args, **kwargs), watch.n_rows)
            except Exception as exc:
                raise NeedsData(f"load_dataset({path!r}) failed here: {type(exc).__name__}: {exc}") from exc
        if watch.rows is None:
            watch.rows = _rows_of(result)
        return result

    datasets.load_dataset = load_dataset
    datasets.load.load_dataset = load_dataset


# --- training arguments: one step of N rows, on the CPU, in float32 ---------------------------------

_ONE_STEP = {
    "max_steps": 1,
    "gradient_accumulation_steps": 1,
    "use_cpu": True,
    "bf16": False,
    "fp16": False,
    "tf32": None,
    "report_to": "none",
    "save_strategy": "no",
    "eval_strategy": "no",
    "logging_strategy": "no",
    "load_best_model_at_end": False,
    "push_to_hub": False,
    "gradient_checkpointing": False,
    "torch_compile": False,
    "deepspeed": None,
    "fsdp": "",
    "optim": "adamw_torch",
    "dataloader_num_workers": 0,
    "dataloader_drop_last": False,
    "dataloader_pin_memory": False,
    "auto_find_batch_size": False,
    "neftune_noise_alpha": None,
    "use_liger_kernel": False,
    "disable_tqdm": True,
    # TRL's options, where the config has them
    "dataset_num_proc": None,
    "use_vllm": False,
}


def patch_training_arguments(watch: Watch) -> None:
    from transformers import TrainingArguments

    original = TrainingArguments.__post_init__
    output_dir = tempfile.mkdtemp(prefix="parity-source-")

    def post_init(self) -> None:
        watch.source_batch = {
            "per_device_train_batch_size": self.per_device_train_batch_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
        }
        if getattr(self, "neftune_noise_alpha", None):
            watch.note("NEFTune noise turned off for the step: it is random by design")
        for key, value in _ONE_STEP.items():
            if hasattr(self, key):
                setattr(self, key, value)
        self.per_device_train_batch_size = watch.n_rows
        if getattr(self, "num_generations", None):  # GRPO: a batch counts completions, one generation per step
            self.per_device_train_batch_size = watch.n_rows * self.num_generations
            self.steps_per_generation, self.generation_batch_size = 1, None
        self.output_dir = output_dir
        original(self)

    TrainingArguments.__post_init__ = post_init


# --- trainers ----------------------------------------------------------------------------------------


def _trainer_classes() -> list[type]:
    """TRL's trainers when the script uses TRL (importing it costs seconds), and transformers' Trainer."""
    from transformers import Trainer

    trl = sys.modules.get("trl")
    names = ("SFTTrainer", "DPOTrainer", "GRPOTrainer")
    return [*(getattr(trl, name) for name in names if trl is not None and hasattr(trl, name)), Trainer]


def patch_trainers(watch: Watch, classes: list[type]) -> None:
    """Each trainer gets the first N rows and no PEFT config; train() runs with the probe on."""
    for cls in classes:
        original = cls.__init__

        def __init__(self, *args, _original=original, **kwargs):  # noqa: N807 - it replaces the class's __init__
            bound = inspect.signature(_original).bind_partial(self, *args, **kwargs)
            arguments = bound.arguments
            watch.trainer_depth += 1
            try:
                if watch.trainer_depth == 1:
                    dataset = _head(arguments.get("train_dataset"), watch.n_rows)
                    dataset = _first_items(dataset, watch.n_rows)
                    if "train_dataset" in arguments:
                        arguments["train_dataset"] = dataset
                    if watch.rows is None:
                        watch.rows = _rows_of(dataset)
                    if arguments.get("eval_dataset") is not None:
                        arguments["eval_dataset"] = None
                    if arguments.get("peft_config") is not None:
                        arguments["peft_config"] = None
                        watch.note(
                            "peft_config not applied: LoRA starts as the identity (B = 0), so the step-0 "
                            "objective is the base model's on both sides"
                        )
                _original(*bound.args, **bound.kwargs)
            finally:
                watch.trainer_depth -= 1

        cls.__init__ = __init__

    from transformers import Trainer

    original_train = Trainer.train

    def train(self, *args, **kwargs):
        watch.trainer = self
        watch.in_trainer = True
        install_probe(self.model, watch)
        try:
            return original_train(self)
        finally:
            watch.in_trainer = False

    Trainer.train = train


def patch_grpo(watch: Watch) -> None:
    """GRPOTrainer scores the completions train.py sampled instead of generating its own (the one
    place the two runs would otherwise differ by chance), and its advantages are kept."""
    if "trl" not in sys.modules or not hasattr(sys.modules["trl"], "GRPOTrainer"):
        return
    from trl import GRPOTrainer

    hooked = getattr(GRPOTrainer, "_generate_single_turn", None)
    fits = hooked is not None and "prompt_ids" in inspect.signature(hooked).parameters
    original_loss = GRPOTrainer._compute_loss

    def generate(self, prompt_ids, *args, **kwargs):
        if not fits:  # another TRL: say so, rather than feed its trainer what it does not expect
            raise RuntimeError(
                "parity's GRPO hooks follow TRL 1.16's GRPOTrainer (_generate_single_turn(prompt_ids, ...)); TRL "
                f"{sys.modules['trl'].__version__} has another one, so its step cannot take train.py's completions"
            )
        if watch.completions is None:
            raise RuntimeError("GRPO parity needs train.py's sampled completions (--completions)")
        return [fixed_completion(watch, list(ids), self.processing_class) for ids in prompt_ids], None

    def compute_loss(self, model, inputs):
        watch.advantages += [float(a) for a in inputs["advantages"].reshape(len(inputs["advantages"]), -1)[:, 0]]
        return original_loss(self, model, inputs)

    GRPOTrainer._generate_single_turn = generate
    GRPOTrainer._compute_loss = compute_loss


def patch_tinker(watch: Watch) -> None:
    """A Tinker-SDK script runs itself against mint-local (the parent points TINKER_BASE_URL there):
    its first forward_backward goes to the server as written, and the datums it sent, with the
    loss the server returned, are its step. Nothing about the datums is reconstructed."""
    try:
        import tinker
    except ImportError:
        return
    original, original_async = tinker.TrainingClient.forward_backward, tinker.TrainingClient.forward_backward_async

    def keep(data, loss_fn, loss_fn_config, result) -> None:
        watch.tinker_step = {
            "loss_fn": loss_fn, "loss_fn_config": loss_fn_config,
            "datums": [{"model_input": d.model_input.to_ints(),
                        "loss_fn_inputs": {k: v.tolist() for k, v in d.loss_fn_inputs.items()}} for d in data],
            "metrics": dict(result.metrics), "loss_sum": result.metrics.get("loss:sum"),
        }  # fmt: skip
        raise StepDone

    def forward_backward(self, data, loss_fn, loss_fn_config=None, *args, **kwargs):
        future = original(self, data, loss_fn, loss_fn_config, *args, **kwargs)
        keep(data, loss_fn, loss_fn_config, future.result())

    async def forward_backward_async(self, data, loss_fn, loss_fn_config=None, *args, **kwargs):
        future = await original_async(self, data, loss_fn, loss_fn_config, *args, **kwargs)
        keep(data, loss_fn, loss_fn_config, await future)

    tinker.TrainingClient.forward_backward = forward_backward
    tinker.TrainingClient.forward_backward_async = forward_backward_async


def fixed_completion(watch: Watch, prompt: list[int], tokenizer: Any) -> list[int]:
    """The next unused completion train.py sampled for this prompt: the group with the same prompt
    tokens, else (a template difference, which the comparison reports) the group of the same row."""
    groups = watch.completions
    group = next((g for g in groups if g["prompt"] == prompt and g["next"] < len(g["completions"])), None)
    if group is None:
        text = tokenizer.decode(prompt)
        candidates = [g for g in groups if g["next"] < len(g["completions"])]
        scored = [(sum(len(v) for v in text_leaves(g["row"]) if v in text), i) for i, g in enumerate(candidates)]
        if not scored or max(scored)[0] == 0:
            raise RuntimeError(f"no completion of train.py's step belongs to the prompt {text[:80]!r}")
        group = candidates[max(scored)[1]]
    group["next"] += 1
    return group["completions"][group["next"] - 1]


def _first_items(dataset: Any, n: int) -> Any:
    """A map-style torch dataset cut to its first n items (datasets' own types are handled by _head)."""
    if dataset is None or not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
        return dataset
    if type(dataset).__module__.startswith("datasets"):
        return dataset
    from torch.utils.data import Subset

    return Subset(dataset, range(min(n, len(dataset)))) if len(dataset) > n else dataset


def patch_dataloader(watch: Watch) -> None:
    """A plain loop's DataLoader yields its first N items, in order, as one batch."""
    from torch.utils.data import DataLoader

    original = DataLoader.__init__
    signature = inspect.signature(original)

    def __init__(self, *args, **kwargs):  # noqa: N807 - it replaces DataLoader.__init__
        if watch.in_trainer:
            return original(self, *args, **kwargs)
        arguments = signature.bind_partial(self, *args, **kwargs).arguments
        arguments.pop("self")
        dataset = _first_items(_head(arguments.pop("dataset"), watch.n_rows), watch.n_rows)
        if watch.rows is None:
            watch.rows = _rows_of(dataset)
        batch_size = arguments.get("batch_size", 1)
        if batch_size not in (None, watch.n_rows):
            watch.source_batch.setdefault("dataloader_batch_size", batch_size)
        for key in ("sampler", "batch_sampler", "shuffle"):
            arguments.pop(key, None)
        arguments.update(batch_size=watch.n_rows, drop_last=False, num_workers=0)
        for key in ("prefetch_factor", "persistent_workers", "worker_init_fn", "multiprocessing_context"):
            arguments.pop(key, None)
        return original(self, dataset, **arguments)

    DataLoader.__init__ = __init__


# --- the probe: tokens and d(loss)/d(token log-probability) --------------------------------------------


def _causal_lms(model: Any) -> list[Any]:
    from transformers import PreTrainedModel

    found = []
    for module in model.modules():
        if isinstance(module, PreTrainedModel) and module.get_output_embeddings() is not None:
            if not any(module is other for other in found):
                found.append(module)
    # The innermost one (a PEFT wrapper holds the real model inside): its forward is what runs.
    return found[-1:] if found else []


def install_probe(model: Any, watch: Watch) -> None:
    import torch

    for lm in _causal_lms(model):
        current = lm.forward
        if getattr(current, "_parity_probe", False):
            continue

        def forward(*args, _current=current, **kwargs):
            if watch.forward_depth or not torch.is_grad_enabled():
                return _current(*args, **kwargs)
            watch.forward_depth += 1
            try:
                output = _current(*args, **kwargs)
            finally:
                watch.forward_depth -= 1
            _record_call(watch, args, kwargs, output)
            return output

        forward._parity_probe = True
        lm.forward = forward


def _record_call(watch: Watch, args: tuple, kwargs: dict, output: Any) -> None:
    input_ids = kwargs.get("input_ids", args[0] if args else None)
    if input_ids is None:
        watch.note("a forward pass without input_ids (inputs_embeds) was not recorded")
        return
    attention_mask = kwargs.get("attention_mask")
    call = {
        "input_ids": input_ids.detach().cpu(),
        "attention_mask": None if attention_mask is None else attention_mask.detach().cpu(),
        "labels": None if kwargs.get("labels") is None else kwargs["labels"].detach().cpu(),
    }
    log_probs = getattr(output, "log_probs", None)
    logits = getattr(output, "logits", None)
    if log_probs is not None and log_probs.requires_grad:
        call.update(kind="log_probs", values=log_probs.detach().cpu())
        tensor = log_probs
    elif logits is not None and logits.requires_grad:
        call.update(kind="logits", values=logits.detach().cpu())
        tensor = logits
    else:
        return

    def keep_gradient(grad):
        call["grad"] = grad.detach().cpu()

    tensor.register_hook(keep_gradient)
    watch.calls.append(call)


def patch_backward(watch: Watch) -> None:
    """The first backward pass is the step: keep its loss, let it run, then stop the script."""
    import torch

    original = torch.autograd.backward

    def backward(tensors, *args, **kwargs):
        if watch.loss is not None:
            return original(tensors, *args, **kwargs)
        first = tensors[0] if isinstance(tensors, (list, tuple)) else tensors
        watch.loss = float(first.detach().float().sum())
        original(tensors, *args, **kwargs)
        raise StepDone

    torch.autograd.backward = backward


# --- from recorded calls to sequences ---------------------------------------------------------------------


def call_sequences(call: dict) -> list[dict]:
    """Each row of a recorded forward pass: tokens, per-token weights and log-probabilities."""
    import torch

    grad = call.get("grad")
    input_ids = call["input_ids"]
    batch, length = input_ids.shape
    mask = call["attention_mask"] if call["attention_mask"] is not None else torch.ones_like(input_ids)
    labels = call["labels"]
    if grad is None:
        grad = torch.zeros(call["values"].shape)
    if call["kind"] == "log_probs":
        # TRL's fused head: log_probs[b, t] is log p(labels[b, t + 1]), zero where the label is -100.
        trained = labels[:, 1:] != -100 if labels is not None else torch.ones(batch, length - 1, dtype=torch.bool)
        weights = (-grad.double()) * trained
        logps = call["values"].double() * trained
        residual = torch.zeros(batch, length - 1, dtype=torch.float64)
    else:
        values = call["values"].double()[:, : length - 1]
        g = grad.double()[:, : length - 1]
        targets = input_ids[:, 1:].clone()
        if labels is not None:
            shifted = labels[:, 1:]
            targets = torch.where(shifted != -100, shifted, targets)
        probs = torch.softmax(values, dim=-1)
        p_target = probs.gather(-1, targets[..., None]).squeeze(-1)
        g_target = g.gather(-1, targets[..., None]).squeeze(-1)
        # For L = -sum w_t log p_t: dL/dlogits_t = w_t (p_t - onehot(target_t)).
        weights = -g_target / (1.0 - p_target).clamp(min=1e-12)
        expected = weights[..., None] * (probs - torch.nn.functional.one_hot(targets, probs.shape[-1]))
        scale = g.abs().amax(dim=-1).clamp(min=1e-30)
        residual = (g - expected).abs().amax(dim=-1) / scale
        residual = torch.where(g.abs().amax(dim=-1) > 1e-12, residual, torch.zeros_like(residual))
        trained = weights.abs() > 0
        logps = torch.log(p_target.clamp(min=1e-300)) * trained
    out = []
    for b in range(batch):
        valid = mask[b].nonzero().flatten().tolist()
        if not valid:
            continue
        positions = valid[:-1]
        out.append(
            {
                "tokens": input_ids[b, valid].tolist(),
                "weights": [float(weights[b, t]) for t in positions],
                "logprob_sum": float(logps[b, positions].sum()) if positions else 0.0,
                "residual": float(residual[b, positions].max()) if positions else 0.0,
            }
        )
    return out


def tinker_record(watch: Watch, seconds: float) -> dict:
    """The script's own datums, read as train.py's --parity-dump is (one reader for both sides)."""
    from mint_migrate.parity.mint_side import dump_to_record

    step = watch.tinker_step
    if step["loss_fn"] not in ("cross_entropy",):
        raise RuntimeError(
            f"the script's first forward_backward uses {step['loss_fn']!r}: a Tinker RL script samples its own "
            "completions, and parity compares RL only on train.py's completions, which this script cannot be given"
        )
    record = dump_to_record({**step, "rows": watch.rows}).model_dump()
    notes = list(watch.notes)
    if watch.requested_models:
        notes.append(f"{', '.join(sorted(watch.requested_models))} -> the shared tiny model {watch.model_dir.name}")
    record.update(side="source", runner="tinker TrainingClient.forward_backward (the script's own datums)",
                  loss_name="loss:sum of the script's forward_backward", notes=notes, seconds=round(seconds, 3))  # fmt: skip
    return record


def build_record(watch: Watch, script: Path, seconds: float) -> dict:
    if watch.tinker_step is not None:
        return tinker_record(watch, seconds)
    trainer = watch.trainer
    kind, runner, config = "sft", "pytorch loop (its first loss.backward())", {}
    loss_name = "the first backward()'s loss"
    if trainer is not None:
        name = type(trainer).__name__
        module = type(trainer).__module__.split(".")[0]
        runner = f"{module}.{name}"
        kind = {"DPOTrainer": "dpo", "GRPOTrainer": "grpo"}.get(name, "sft")
        loss_name = f"{name}.compute_loss"
        config = trainer_config(trainer)
    grad_calls = [c for c in watch.calls if "grad" in c]
    if not grad_calls:
        raise RuntimeError("the first backward pass did not reach the model's output: no per-token gradient to read")
    sequences = [s for call in grad_calls for s in call_sequences(call)]
    if kind == "dpo":
        half = len(sequences) // 2
        for i, sequence in enumerate(sequences):
            sequence["role"] = "chosen" if i < half else "rejected"
    if kind == "grpo":
        if len(watch.advantages) != len(sequences):
            raise RuntimeError(f"{len(watch.advantages)} advantages for {len(sequences)} sequences")
        for sequence, advantage in zip(sequences, watch.advantages, strict=True):
            sequence.update(role="completion", advantage=advantage)
    worst = max((s.pop("residual") for s in sequences), default=0.0)
    if worst > 1e-3:
        watch.note(
            f"the loss is not a weighted cross-entropy on the next token (gradient residual {worst:.2g}): "
            "label smoothing, a KL term or another objective; the weights are its best cross-entropy reading"
        )
    if watch.requested_models:
        watch.note(f"{', '.join(sorted(watch.requested_models))} -> the shared tiny model {watch.model_dir.name}")
    config["source_batch"] = watch.source_batch
    return {
        "side": "source",
        "runner": runner,
        "kind": kind,
        "loss": watch.loss,
        "loss_name": loss_name,
        "sequences": sequences,
        "rows": watch.rows,
        "config": config,
        "notes": watch.notes,
        "seconds": round(seconds, 3),
    }


_CONFIG_KEYS = (
    "max_length",
    "max_seq_length",
    "max_prompt_length",
    "max_completion_length",
    "truncation_mode",
    "packing",
    "padding_free",
    "completion_only_loss",
    "assistant_only_loss",
    "dataset_text_field",
    "loss_type",
    "label_smoothing_factor",
    "average_tokens_across_devices",
    "beta",
    "num_generations",
    "scale_rewards",
    "num_iterations",
    "mask_truncated_completions",
    "temperature",
)


def trainer_config(trainer: Any) -> dict:
    config = {}
    for key in _CONFIG_KEYS:
        if hasattr(trainer.args, key):
            value = getattr(trainer.args, key)
            config[key] = value if isinstance(value, (bool, int, float, str, list, type(None))) else str(value)
    for key in ("beta", "loss_types", "ld_alpha", "f_divergence_type"):
        if hasattr(trainer, key):
            value = getattr(trainer, key)
            config[key] = value if isinstance(value, (bool, int, float, str, list, type(None))) else str(value)
    return config


# --- main ------------------------------------------------------------------------------------------------


def run(
    script: Path,
    model_dir: Path,
    rows: int,
    data: Path | None,
    script_args: list[str],
    completions: Path | None,
    pinned: tuple[int, int] | None = None,
) -> dict:
    """The first step's record. `pinned`: fds of the script's folder and file, opened by the parent
    inside an MCP tool's fence; that folder is the cwd and that file's content is what runs."""
    if pinned is not None:
        os.fchdir(pinned[0])
        os.close(pinned[0])
        with os.fdopen(pinned[1], "rb") as handle:
            source = handle.read()
        script = Path(os.getcwd()) / script.name
    os.environ.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        WANDB_MODE="disabled",
        WANDB_DISABLED="true",
        TOKENIZERS_PARALLELISM="false",
        CUDA_VISIBLE_DEVICES="",
        ACCELERATE_USE_CPU="true",
    )
    started = time.monotonic()
    import torch

    torch.manual_seed(0)
    watch = Watch(model_dir, rows, data)
    if completions is not None:
        watch.completions = [{**group, "next": 0} for group in json.loads(completions.read_text(encoding="utf-8"))]
    patch_loaders(watch)
    patch_datasets(watch)
    patch_training_arguments(watch)
    if uses_trl(script):
        import trl  # noqa: F401 - its trainers are patched below

    patch_trainers(watch, _trainer_classes())
    patch_grpo(watch)
    patch_dataloader(watch)
    patch_tinker(watch)
    patch_backward(watch)
    _probe_loaded_models(watch)

    sys.argv = [str(script), *script_args]
    sys.path.insert(0, str(script.parent))
    try:
        if pinned is None:
            os.chdir(script.parent)
            runpy.run_path(str(script), run_name="__main__")
        else:  # what run_path does with the file it reads, given the content read from the fd
            code = compile(source, str(script), "exec")
            runpy._run_module_code(code, None, "__main__", pkg_name="", script_name=str(script))
    except StepDone:
        return build_record(watch, script, time.monotonic() - started)
    except NeedsData as exc:
        raise RuntimeError(
            f"{exc}. Give --data FILE: a local copy of the first rows of that dataset, in the same format "
            "(.jsonl, .json, .parquet or .csv)."
        ) from None
    except SystemExit as exc:
        raise RuntimeError(f"the script exited (code {exc.code}) before its first training step") from None
    raise RuntimeError("the script ended without a training step (no backward pass ran)")


def _probe_loaded_models(watch: Watch) -> None:
    """Plain loops: every model from_pretrained returns is watched from the start."""
    from transformers import PreTrainedModel

    original = PreTrainedModel.from_pretrained.__func__

    def from_pretrained(cls, *args, **kwargs):
        model = original(cls, *args, **kwargs)
        install_probe(model, watch)
        return model

    PreTrainedModel.from_pretrained = classmethod(from_pretrained)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", type=Path)
    parser.add_argument("--completions", type=Path, help="GRPO: JSON [{prompt, completions, row}] from train.py")
    parser.add_argument("--script-fds", help="DIR_FD,FILE_FD: run the script pinned by the parent (an MCP tool)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    script_args = args.script_args[1:] if args.script_args[:1] == ["--"] else args.script_args
    out = args.out.resolve()
    try:
        record = run(
            args.script.resolve(),
            args.model.resolve(),
            args.rows,
            args.data.resolve() if args.data else None,
            script_args,
            args.completions.resolve() if args.completions else None,
            tuple(int(fd) for fd in args.script_fds.split(",")) if args.script_fds else None,  # type: ignore[arg-type]
        )
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a record the parent explains
        detail = "".join(traceback.format_exception(exc)[-12:])
        out.write_text(json.dumps({"error": str(exc) or type(exc).__name__, "traceback": detail}), encoding="utf-8")
        return 1
    out.write_text(json.dumps(record, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # The script's threads (tokenizers, datasets) must not keep the process alive.
    os._exit(code)
