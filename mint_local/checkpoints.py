"""Checkpoints and training runs in the state directory, addressed by `tinker://` paths.

Layout (everything survives a restart except `ephemeral/`):

    STATE/runs/<run_id>/run.json                      base model, LoRA settings, metadata
    STATE/runs/<run_id>/weights/<name>/               save_state: adapter + optimizer
    STATE/runs/<run_id>/sampler_weights/<name>/       save_weights_for_sampler: adapter only
    STATE/ephemeral/<sampling_session_id>/            save_weights_and_get_sampling_client

A checkpoint folder is a standard PEFT adapter (`adapter_model.safetensors`,
`adapter_config.json`), so `peft.PeftModel.from_pretrained(base, folder)` loads it elsewhere,
plus `checkpoint.json` (mint-local metadata) and, for training checkpoints, `optimizer.pt`.
The path `tinker://<run_id>/weights/<name>` maps to `runs/<run_id>/weights/<name>`;
`mint://` is accepted as a synonym.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from .errors import NotFound, UserError

CheckpointKind = Literal["training", "sampler"]
_KIND_DIR = {"training": "weights", "sampler": "sampler_weights"}
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
ADAPTER_FILE = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
META_FILE = "checkpoint.json"
OPTIMIZER_FILE = "optimizer.pt"
PATH_HELP = "expected tinker://RUN_ID/weights/NAME (save_state) or tinker://RUN_ID/sampler_weights/NAME"


@dataclass(frozen=True)
class CheckpointRef:
    run_id: str
    kind: CheckpointKind
    name: str

    @property
    def checkpoint_id(self) -> str:
        return f"{_KIND_DIR[self.kind]}/{self.name}"

    @property
    def tinker_path(self) -> str:
        return f"tinker://{self.run_id}/{self.checkpoint_id}"


def new_run_id() -> str:
    return "run-" + uuid.uuid4().hex[:12]


def check_name(name: str, what: str = "checkpoint name") -> str:
    if not _NAME_RE.match(name or ""):
        raise UserError(
            f"invalid {what} {name!r}: use 1-128 letters, digits, '.', '_' or '-' (no '/'), "
            "starting with a letter or digit"
        )
    return name


def parse_path(path: str) -> CheckpointRef:
    """`tinker://RUN/weights/NAME` (or `mint://...`) -> CheckpointRef; UserError otherwise."""
    rest = None
    for scheme in ("tinker://", "mint://"):
        if path.startswith(scheme):
            rest = path[len(scheme) :]
    if rest is None:
        raise UserError(f"not a checkpoint path: {path!r}; {PATH_HELP}")
    parts = rest.split("/")
    if len(parts) != 3 or parts[1] not in ("weights", "sampler_weights"):
        raise UserError(f"not a checkpoint path: {path!r}; {PATH_HELP}")
    run_id, kind_dir, name = parts
    if not _NAME_RE.match(run_id) or not _NAME_RE.match(name):
        raise UserError(f"not a checkpoint path: {path!r}; {PATH_HELP}")
    kind: CheckpointKind = "training" if kind_dir == "weights" else "sampler"
    return CheckpointRef(run_id=run_id, kind=kind, name=name)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:6]}")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


class CheckpointStore:
    def __init__(self, state_dir: Path) -> None:
        self.root = Path(state_dir).resolve()
        self.runs_dir = self.root / "runs"
        self.ephemeral_dir = self.root / "ephemeral"
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        # Ephemeral samplers die with the server that made them.
        shutil.rmtree(self.ephemeral_dir, ignore_errors=True)
        self.ephemeral_dir.mkdir(parents=True, exist_ok=True)

    # --- training runs -------------------------------------------------------------------------

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / check_name(run_id, "training run id")

    def write_run(self, run_id: str, meta: dict[str, Any]) -> None:
        d = self.run_dir(run_id)
        d.mkdir(parents=True, exist_ok=True)
        _write_json(d / "run.json", meta)

    def read_run(self, run_id: str) -> dict[str, Any]:
        try:
            f = self.run_dir(run_id) / "run.json"
        except UserError:
            raise NotFound(f"unknown training run {run_id!r}") from None
        if not f.is_file():
            raise NotFound(f"unknown training run {run_id!r} (not in {self.runs_dir})")
        return json.loads(f.read_text(encoding="utf-8"))

    def touch_run(self, run_id: str) -> None:
        meta = self.read_run(run_id)
        meta["last_request_time"] = time.time()
        self.write_run(run_id, meta)

    def list_run_ids(self) -> list[str]:
        runs = [p for p in self.runs_dir.iterdir() if (p / "run.json").is_file()]
        runs.sort(key=lambda p: (p / "run.json").stat().st_mtime, reverse=True)
        return [p.name for p in runs]

    def training_run(self, run_id: str) -> dict[str, Any]:
        """The TrainingRun wire shape."""
        meta = self.read_run(run_id)
        ckpts = self.list_checkpoints(run_id)
        last = {kind: None for kind in ("training", "sampler")}
        for c in ckpts:  # newest last
            last[c["checkpoint_type"]] = c
        return {
            "training_run_id": run_id,
            "base_model": meta["base_model"],
            "model_owner": "mint-local",
            "is_lora": True,
            "corrupted": False,
            "lora_rank": meta["lora"]["rank"],
            "last_request_time": _iso(meta.get("last_request_time") or meta["created"]),
            "last_checkpoint": last["training"],
            "last_sampler_checkpoint": last["sampler"],
            "user_metadata": {str(k): str(v) for k, v in (meta.get("user_metadata") or {}).items()},
        }

    # --- checkpoints ---------------------------------------------------------------------------

    def dir_for(self, ref: CheckpointRef) -> Path:
        return self.run_dir(ref.run_id) / _KIND_DIR[ref.kind] / ref.name

    def exists(self, ref: CheckpointRef) -> bool:
        return (self.dir_for(ref) / META_FILE).is_file()

    def read_meta(self, ref: CheckpointRef) -> dict[str, Any]:
        f = self.dir_for(ref) / META_FILE
        if not f.is_file():
            raise NotFound(
                f"checkpoint {ref.tinker_path} does not exist in {self.root}; list the run's "
                "checkpoints with rest_client.list_checkpoints(run_id)"
            )
        return json.loads(f.read_text(encoding="utf-8"))

    def resolve(self, path: str) -> tuple[CheckpointRef, dict[str, Any]]:
        ref = parse_path(path)
        return ref, self.read_meta(ref)

    def save(
        self,
        ref: CheckpointRef | None,
        *,
        tensors: dict[str, Any],
        adapter_config: dict[str, Any],
        meta: dict[str, Any],
        optimizer_state: dict[str, Any] | None = None,
        overwrite: bool = True,
        target_dir: Path | None = None,
    ) -> Path:
        """Write one checkpoint folder atomically (scratch folder, then rename)."""
        from safetensors.torch import save_file

        final = target_dir if target_dir is not None else self.dir_for(ref)  # type: ignore[arg-type]
        if (final / META_FILE).exists() and not overwrite:
            raise UserError(
                f"checkpoint {ref.tinker_path if ref else final} already exists; pass overwrite=True "
                "to save_state or choose another name"
            )
        final.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
        try:
            save_file({k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}, str(scratch / ADAPTER_FILE))
            (scratch / ADAPTER_CONFIG).write_text(json.dumps(adapter_config, indent=2, sort_keys=True), encoding="utf-8")
            if optimizer_state is not None:
                import torch

                torch.save(optimizer_state, scratch / OPTIMIZER_FILE)
            meta = dict(meta, uid=uuid.uuid4().hex, time=time.time())
            if ref is not None:
                meta.update(checkpoint_id=ref.checkpoint_id, checkpoint_type=ref.kind, tinker_path=ref.tinker_path)
            (scratch / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
            if final.exists():
                trash = final.with_name(f".{final.name}-old-{uuid.uuid4().hex[:6]}")
                os.replace(final, trash)
                os.replace(scratch, final)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                os.replace(scratch, final)
        finally:
            if scratch.exists():
                shutil.rmtree(scratch, ignore_errors=True)
        return final

    def load_tensors(self, folder: Path) -> dict[str, Any]:
        from safetensors.torch import load_file

        return load_file(str(folder / ADAPTER_FILE))

    def load_optimizer(self, folder: Path) -> dict[str, Any] | None:
        f = folder / OPTIMIZER_FILE
        if not f.is_file():
            return None
        import torch

        return torch.load(f, map_location="cpu", weights_only=True)

    def checkpoint_entry(self, ref: CheckpointRef) -> dict[str, Any]:
        """The Checkpoint wire shape."""
        meta = self.read_meta(ref)
        folder = self.dir_for(ref)
        size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        return {
            "checkpoint_id": ref.checkpoint_id,
            "checkpoint_type": ref.kind,
            "time": _iso(meta["time"]),
            "tinker_path": ref.tinker_path,
            "size_bytes": size,
            "public": False,
            "expires_at": None,
        }

    def list_checkpoints(self, run_id: str) -> list[dict[str, Any]]:
        self.read_run(run_id)
        entries = []
        for kind, sub in _KIND_DIR.items():
            d = self.run_dir(run_id) / sub
            if not d.is_dir():
                continue
            for folder in d.iterdir():
                # Dot-folders are saves in progress (or left by a crash mid-save), never checkpoints.
                if not folder.name.startswith(".") and (folder / META_FILE).is_file():
                    entries.append(self.checkpoint_entry(CheckpointRef(run_id, kind, folder.name)))  # type: ignore[arg-type]
        entries.sort(key=lambda e: e["time"])
        return entries

    def delete(self, ref: CheckpointRef) -> None:
        self.read_meta(ref)
        shutil.rmtree(self.dir_for(ref))
