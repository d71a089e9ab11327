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

Crash safety: a checkpoint is written into a hidden scratch folder `.NAME~new~WRITER~X` and
renamed into place. Overwriting moves the old folder aside to `.NAME~old~WRITER~X` first (two
renames); a process killed between them leaves NAME missing, and the next start renames the old
folder back, so a checkpoint the client was told about is never lost. Every other hidden folder
left by a dead writer is removed at start; those of a live one (another server on the same state
directory) are left alone.

Whether a writer is alive is never judged by its PID: a restarted container's server gets the
same PID as the one that crashed (often 1), which made recovery skip the restore. Each store
holds an flock on `STATE/writers/WRITER.lock` for its process's life; the kernel releases it
however the process ends, and a lock another process can take belongs to a dead writer.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from .errors import NotFound, UserError

CheckpointKind = Literal["training", "sampler"]
_KIND_DIR = {"training": "weights", "sampler": "sampler_weights"}
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # always fullmatch: "name\n" is refused
# Hidden work folders: ".NAME~new~WRITER~X" (a save in progress), ".NAME~old~WRITER~X" (the folder
# an overwrite replaces). "~" never occurs in a name, so NAME and the writer can be read back.
# WRITER is "w" + 12 hex digits (a store's writer id), or a PID: what older versions wrote, and
# what a store falls back to where the file system has no flock.
_WORK_RE = re.compile(
    r"\.(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,127})~(?P<role>new|old)~(?P<writer>[0-9]+|w[0-9a-f]{12})~[0-9a-f]+"
)
WRITERS_DIR = "writers"
# Set by the crash tests only: the process exits at this point of a save, as a kill -9 would.
FAILPOINT_ENV = "MINT_LOCAL_FAILPOINT"
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
    if not _NAME_RE.fullmatch(name or ""):
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
    if not _NAME_RE.fullmatch(run_id) or not _NAME_RE.fullmatch(name):
        raise UserError(f"not a checkpoint path: {path!r}; {PATH_HELP}")
    kind: CheckpointKind = "training" if kind_dir == "weights" else "sampler"
    return CheckpointRef(run_id=run_id, kind=kind, name=name)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


def _failpoint(where: str) -> None:
    if os.environ.get(FAILPOINT_ENV) == where:
        os._exit(137)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _try_lock(fd: int) -> bool:
    """Take an exclusive flock without waiting: False if another open file holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    return True


class WriterLock:
    """A store's writer id, alive exactly as long as its process: the store holds an flock on
    `writers/ID.lock`, which the kernel drops when the process ends, however it ends."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        writer = "w" + uuid.uuid4().hex[:12]
        # Locked under a name recovery never reads, then renamed (the lock stays with the file):
        # a lock file recovery can see is held, or its writer is dead.
        tmp = folder / f".{writer}.tmp"
        self._fd: int | None = os.open(tmp, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if not _try_lock(self._fd):
                raise OSError(errno.EAGAIN, "lock taken")
            os.replace(tmp, folder / f"{writer}.lock")
            self.id = writer
        except OSError:  # no flock on this file system (some network or FUSE mounts): name saves by PID
            os.close(self._fd)
            self._fd = None
            tmp.unlink(missing_ok=True)
            self.id = str(os.getpid())

    def close(self) -> None:
        """Give the lock up (the process exiting does the same)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    __del__ = close


def _writer_alive(writer: str, writers: Path | None) -> bool:
    if writer.isdigit():
        # Named by its PID: alive if that PID is, the best such a name can tell (a reused PID
        # looks alive, which is why stores hold a lock instead).
        return _pid_alive(int(writer))
    try:
        fd = os.open(writers / f"{writer}.lock", os.O_RDWR) if writers is not None else None
    except FileNotFoundError:
        return False  # only a dead writer's lock file is ever removed
    if fd is None:
        return False
    try:
        return not _try_lock(fd)
    finally:
        os.close(fd)  # and with it the lock, if this took it


def _work_dir(final: Path, role: str, writer: str) -> Path:
    return final.with_name(f".{final.name}~{role}~{writer}~{uuid.uuid4().hex[:8]}")


def recover_folder(parent: Path, writers: Path | None = None) -> list[str]:
    """Finish or undo the saves a dead writer left in `parent` (`writers`: the folder of the
    writers' lock files); returns what was done."""
    done = []
    leftovers = [p for p in parent.iterdir() if p.name.startswith(".") and p.is_dir()]
    for p in sorted(leftovers, key=lambda p: p.name):
        m = _WORK_RE.fullmatch(p.name)
        if m and _writer_alive(m["writer"], writers):
            continue  # another live server on this state directory is saving
        final = parent / m["name"] if m else None
        if m and m["role"] == "old" and final is not None and not final.exists() and (p / META_FILE).is_file():
            # Killed between the two renames of an overwrite: the old checkpoint is the last one
            # the client was told about, so it goes back in place.
            os.replace(p, final)
            done.append(f"restored {final}")
        else:
            shutil.rmtree(p, ignore_errors=True)
            done.append(f"removed unfinished {p}")
    return done


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
        self.writers_dir = self.root / WRITERS_DIR
        self.writer = WriterLock(self.writers_dir)
        # Ephemeral samplers die with the server that made them.
        shutil.rmtree(self.ephemeral_dir, ignore_errors=True)
        self.ephemeral_dir.mkdir(parents=True, exist_ok=True)
        self.recover()

    def recover(self) -> None:
        """Undo what a killed process left half done (see the module docstring), then forget
        the writers that are gone."""
        for run in self.runs_dir.iterdir():
            for sub in _KIND_DIR.values():
                if (run / sub).is_dir():
                    for line in recover_folder(run / sub, self.writers_dir):
                        print(f"mint-local: checkpoint recovery: {line}", file=sys.stderr, flush=True)
        for f in self.writers_dir.glob("w*.lock"):
            if f.stem == self.writer.id:
                continue
            try:
                fd = os.open(f, os.O_RDWR)
            except OSError:
                continue  # another start removed it
            try:
                if _try_lock(fd):  # held while unlinking, so a live writer's file is never removed
                    f.unlink(missing_ok=True)
            except OSError:
                pass
            finally:
                os.close(fd)

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
        scratch = _work_dir(final, "new", self.writer.id)
        scratch.mkdir()
        try:
            save_file({k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}, str(scratch / ADAPTER_FILE))
            (scratch / ADAPTER_CONFIG).write_text(json.dumps(adapter_config, indent=2, sort_keys=True), encoding="utf-8")
            if optimizer_state is not None:
                import torch

                torch.save(optimizer_state, scratch / OPTIMIZER_FILE)
            meta = dict(meta, uid=uuid.uuid4().hex, time=time.time())
            if ref is not None:
                meta.update(checkpoint_id=ref.checkpoint_id, checkpoint_type=ref.kind, tinker_path=ref.tinker_path)
            # checkpoint.json last: a folder holding it is complete.
            (scratch / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
            _failpoint("save:written")
            if final.exists():
                trash = _work_dir(final, "old", self.writer.id)
                os.replace(final, trash)
                _failpoint("save:between-renames")
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
