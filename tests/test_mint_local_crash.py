"""mint-local killed in the middle of a save: a confirmed checkpoint is never lost, and nothing
half-written outlives the next start.

The server is a real process; it dies by os._exit at a named point of a save (the
MINT_LOCAL_FAILPOINT hook in checkpoints.py), which leaves the disk exactly as a kill -9 there
would. The next server on the same state directory must repair it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import httpx
import mint
import pytest
import torch

from mint_local.checkpoints import FAILPOINT_ENV, recover_folder
from mint_local.launcher import LISTENING_PREFIX, LocalServer
from mint_local.testing import TEST_API_KEY, TEXT, ce_datum, checkpoint_dir, logprobs_of

ADAM = mint.AdamParams(learning_rate=5e-2)


def start(state, monkeypatch, failpoint: str | None) -> LocalServer:
    if failpoint:
        monkeypatch.setenv(FAILPOINT_ENV, failpoint)
    else:
        monkeypatch.delenv(FAILPOINT_ENV, raising=False)
    return LocalServer.start(model="tiny", device="cpu", state_dir=state)


def train_step(tc, tokens) -> None:
    tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
    tc.optim_step(ADAM).result()


def save_and_die(server: LocalServer, model_id: str, name: str, overwrite: bool) -> None:
    """Ask for a save over raw HTTP (the SDK would retry a dead server for minutes); the server
    exits at its failpoint."""
    body = {"model_id": model_id, "path": name, "overwrite": overwrite}
    httpx.post(f"{server.base_url}/api/v1/save_weights", json=body, headers={"X-API-Key": TEST_API_KEY}, timeout=30)
    assert server.proc.wait(timeout=60) == 137


def hidden(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.slow
def test_kill_during_saves_loses_no_confirmed_checkpoint_and_leaves_nothing_behind(tmp_path, monkeypatch):
    state = tmp_path / "state"

    # 1. A confirmed checkpoint, then an overwrite of it killed between its two renames.
    with start(state, monkeypatch, "save:between-renames") as server:
        sc = mint.ServiceClient(base_url=server.base_url, api_key=TEST_API_KEY)
        tc = sc.create_lora_training_client(base_model=server.model_name, rank=4, seed=1)
        tokens = tc.get_tokenizer().encode(TEXT)
        train_step(tc, tokens)
        confirmed = tc.save_state("ck").result().path
        confirmed_logprobs = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
        train_step(tc, tokens)
        save_and_die(server, tc.model_id, "ck", overwrite=True)
        sc.holder.close()
    folder = checkpoint_dir(state, confirmed)
    assert not folder.exists()  # the window the old code lost a checkpoint in
    left = hidden(folder.parent)
    assert [n.split("~")[:2] for n in left] == [[".ck", "new"], [".ck", "old"]], left

    # 2. The next server puts the confirmed checkpoint back; then a save is killed after its
    #    files are written but before it is renamed into place.
    with start(state, monkeypatch, "save:written") as server:
        assert folder.is_dir() and hidden(folder.parent) == []
        sc = mint.ServiceClient(base_url=server.base_url, api_key=TEST_API_KEY)
        tc = sc.create_lora_training_client(base_model=server.model_name, rank=4, seed=1)
        tc.load_state_with_optimizer(confirmed).result()
        restored = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
        assert torch.equal(restored, confirmed_logprobs)
        save_and_die(server, tc.model_id, "never-confirmed", overwrite=False)
        sc.holder.close()
    second_run = tc.model_id
    weights_dir = state / "runs" / second_run / "weights"
    assert any(n.startswith(".never-confirmed~new~") for n in hidden(weights_dir))

    # 3. A clean start sweeps the half-done save; everything confirmed is still there.
    with start(state, monkeypatch, None) as server:
        assert hidden(weights_dir) == []
        sc = mint.ServiceClient(base_url=server.base_url, api_key=TEST_API_KEY)
        rest = sc.create_rest_client()
        run_id = confirmed.removeprefix("tinker://").split("/")[0]
        assert [c.tinker_path for c in rest.list_checkpoints(run_id).result().checkpoints] == [confirmed]
        assert rest.list_checkpoints(second_run).result().checkpoints == []
        sc.holder.close()


def test_recovery_leaves_the_work_of_a_live_process_alone(tmp_path):
    """Two servers may share a state directory: one's start must not sweep the other's save."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    live_pid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for name in (f".a~new~{live_pid.pid}~abcd", f".b~new~{dead_pid}~abcd", ".c-legacy-tmp"):
            (tmp_path / name).mkdir()
        (tmp_path / f".d~old~{dead_pid}~abcd").mkdir()
        (tmp_path / f".d~old~{dead_pid}~abcd" / "checkpoint.json").write_text("{}")
        done = recover_folder(tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == [f".a~new~{live_pid.pid}~abcd", "d"]
        assert len(done) == 3
    finally:
        live_pid.kill()
        live_pid.wait()


# --- PID reuse: the restarted server has the PID of the one that crashed --------------------------


def _pid_namespaces_work() -> bool:
    try:
        return subprocess.run(["unshare", "-Urpf", "sh", "-c", "test $$ = 1"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class ServerAsPid1:
    """mint-local as PID 1 of a PID namespace of its own, as in a container: every such start
    gets the same PID, as a restarted container's server does. `unshare --kill-child` takes the
    server down with it."""

    def __init__(self, state, log, failpoint: str | None) -> None:
        env = {k: v for k, v in os.environ.items() if k != FAILPOINT_ENV}
        if failpoint:
            env[FAILPOINT_ENV] = failpoint
        cmd = ["unshare", "-Urpf", "--kill-child", sys.executable, "-m", "mint_local", "serve", "--host", "127.0.0.1",
               "--port", "0", "--model", "tiny", "--device", "cpu", "--state-dir", str(state)]  # fmt: skip
        self.log = open(log, "a", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True, env=dict(env, PYTHONUNBUFFERED="1"))
        for line in self.proc.stdout:
            if line.startswith(LISTENING_PREFIX):
                self.base_url = line[len(LISTENING_PREFIX) :].strip()
                break
        else:
            raise AssertionError(f"mint-local did not start: {log.read_text(encoding='utf-8')[-3000:]}")

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # unshare ignores SIGTERM; its death kills the server (--kill-child)
            self.proc.wait(30)
        self.log.close()


@pytest.mark.skipif(not _pid_namespaces_work(), reason="needs unprivileged user and PID namespaces (unshare -Urpf)")
def test_an_interrupted_overwrite_is_restored_when_its_pid_is_alive_again(tmp_path):
    """The issue's case: a server dies between the two renames of an overwrite, and the next one
    runs with the same PID (PID 1 in a container, each time). Recovery judged the writer by its
    PID, found it alive (itself) and left the confirmed checkpoint missing behind `.ck~old~1~...`."""
    state, log = tmp_path / "state", tmp_path / "server.log"
    first = ServerAsPid1(state, log, "save:between-renames")
    try:
        sc = mint.ServiceClient(base_url=first.base_url, api_key=TEST_API_KEY)
        tc = sc.create_lora_training_client(base_model="tiny", rank=4, seed=1)
        tokens = tc.get_tokenizer().encode(TEXT)
        train_step(tc, tokens)
        confirmed = tc.save_state("ck").result().path
        confirmed_logprobs = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
        train_step(tc, tokens)
        body = {"model_id": tc.model_id, "path": "ck", "overwrite": True}
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(f"{first.base_url}/api/v1/save_weights", json=body, headers={"X-API-Key": TEST_API_KEY}, timeout=30)
        assert first.wait(60) == 137
        sc.holder.close()
    finally:
        first.stop()
    folder = checkpoint_dir(state, confirmed)
    assert not folder.exists() and any(n.startswith(".ck~old~") for n in hidden(folder.parent))

    second = ServerAsPid1(state, log, None)  # PID 1 again: the crashed writer's PID is alive
    try:
        assert folder.is_dir() and hidden(folder.parent) == [], hidden(folder.parent)
        sc = mint.ServiceClient(base_url=second.base_url, api_key=TEST_API_KEY)
        tc = sc.create_lora_training_client(base_model="tiny", rank=4, seed=1)
        tc.load_state_with_optimizer(confirmed).result()
        assert torch.equal(logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result()), confirmed_logprobs)
        sc.holder.close()
    finally:
        second.stop()
    assert f"checkpoint recovery: restored {folder}" in log.read_text(encoding="utf-8")


def test_recovery_judges_writers_by_their_lock_not_their_pid(tmp_path):
    """A store's work folders are named by its writer id; they are left alone while the process
    holding that writer's lock lives, and recovered once it is gone, whatever PIDs do."""
    state = tmp_path / "state"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from mint_local.checkpoints import CheckpointStore; "
         "s = CheckpointStore(Path(sys.argv[1])); print(s.writer.id, flush=True); time.sleep(120)", str(state)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        live = holder.stdout.readline().strip()
        dead = subprocess.run(
            [sys.executable, "-c", "import sys; from pathlib import Path; from mint_local.checkpoints import CheckpointStore; "
             "print(CheckpointStore(Path(sys.argv[1])).writer.id)", str(state)],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        assert live.startswith("w") and dead.startswith("w") and live != dead
        folder = tmp_path / "weights"
        folder.mkdir()
        for name in (f".a~new~{live}~abcd", f".b~old~{live}~abcd", f".c~new~{dead}~abcd", f".d~old~{dead}~abcd"):
            (folder / name).mkdir()
            (folder / name / "checkpoint.json").write_text("{}")
        recover_folder(folder, state / "writers")
        assert sorted(p.name for p in folder.iterdir()) == [f".a~new~{live}~abcd", f".b~old~{live}~abcd", "d"]
        # A new store forgets the dead writer, never the live one.
        from mint_local.checkpoints import CheckpointStore

        store = CheckpointStore(state)
        assert sorted(p.stem for p in (state / "writers").iterdir()) == sorted([live, store.writer.id])
    finally:
        holder.kill()
        holder.wait()
    recover_folder(folder, state / "writers")  # the holder is gone: its overwrite is put back too
    assert sorted(p.name for p in folder.iterdir()) == ["b", "d"]
