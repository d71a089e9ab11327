"""Every API operation: validate the request, then answer it or queue it for the engine.

Validation happens here, before anything is queued, so bad input is a 4xx the SDK raises
immediately (BadRequestError / NotFoundError with the message below). The HTTP layer
(app.py) only parses JSON and maps exceptions to responses.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import math
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from pydantic import BaseModel

from . import checkpoints as ck
from . import protocol as p
from .engine import BASE_WEIGHTS, AdapterSource, Engine
from .errors import NotFound, UserError
from .futures import ClientGone, FutureStore, Job, SeqGate, Worker
from .inputs import model_input_tokens, prepare_batch, tensor_from_wire

MAX_NUM_SAMPLES = 1024
# Limits (mint_local/README.md, "Limits"): each is a 4xx that says what to change.
MAX_SAMPLED_TOKENS = 1 << 20  # num_samples x max_tokens of one sample request
MAX_STOP_SEQUENCES = 128
MAX_METADATA_BYTES = 16 * 1024  # user_metadata, as JSON
MAX_METADATA_DEPTH = 32  # nesting of user_metadata: deeper ones overflow the recursive JSON writers later
# Temperatures in (0, MIN_TEMPERATURE) are refused, not clamped: logits / temperature overflows
# float32 below about 1e-38 (NaN log-probs the SDK cannot even parse), and long before that
# every such temperature samples the argmax. Refusing says so; clamping would change the
# user's setting silently. 0 stays greedy decoding.
MIN_TEMPERATURE = 1e-6
# topk_prompt_logprobs x prompt tokens: each entry is a (token, logprob) pair in the response
# (~25 bytes of JSON, ~120 bytes as Python objects while it is built). 8,000 tokens x 2,000 made
# a 398 MB response and left the server holding 4.2 GB.
MAX_TOPK_PROMPT_ENTRIES = 1 << 18
# interpolate_checkpoints writes one adapter of rank sum(r_i): bounded like a training
# client's adapter, and in the number of sources read.
MAX_INTERPOLATE_SOURCES = 64
MAX_INTERPOLATE_RANK = 1024
# How far a training request's seq_id may run ahead of the highest one its model has seen: the
# SDK numbers requests 1, 2, 3 ... and only the chunks of one call travel concurrently.
MAX_SEQ_AHEAD = 4096
# A client is gone, and its queued work is dropped, when its session sends nothing (the SDK
# heartbeats every 10 s) for SESSION_TIMEOUT_S, or when its long polls close and nothing comes
# from it for CLIENT_GONE_GRACE_S (a live SDK client re-polls at once).
SESSION_TIMEOUT_S = float(os.environ.get("MINT_LOCAL_SESSION_TIMEOUT_S", "60"))
CLIENT_GONE_GRACE_S = 2.0
SWEEP_S = 5.0
# Wall-clock budget of one sampling request, queueing included: max_tokens bounds the tokens, this
# bounds the time (a long request on a loaded CPU). Past it the request fails and says so. Generous
# because it counts from arrival: an RL step's hundreds of requests share one decoding batch, and
# the cookbook's recipes run for half an hour on one core.
SAMPLE_BUDGET_S = float(os.environ.get("MINT_LOCAL_SAMPLE_BUDGET_S", "1800"))


@dataclass
class Session:
    session_id: str
    tags: list[str]
    user_metadata: dict[str, Any]
    created: float = field(default_factory=time.time)
    training_run_ids: list[str] = field(default_factory=list)
    sampler_ids: list[str] = field(default_factory=list)
    # Liveness, for dropping the work of a dead client (event-loop thread only).
    last_seen: float = field(default_factory=time.monotonic)
    open_polls: int = 0
    gone: bool = False

    def seen(self) -> None:
        self.last_seen = time.monotonic()
        self.gone = False


@dataclass
class LiveSample:
    """A sampling request not yet answered, and who still waits for it (event-loop thread only).
    A request without a session has no heartbeat: its own polls are the only sign of a client."""

    owner: str | None
    deadline: asyncio.TimerHandle | None = None
    last_polled: float = field(default_factory=time.monotonic)
    open_polls: int = 0


@dataclass
class Sampler:
    sampler_id: str
    session_id: str
    source: AdapterSource


def _parse(model: type[BaseModel], raw: dict[str, Any]) -> Any:
    return model.model_validate(raw)


def _depth(value: Any, limit: int) -> int:
    """How deeply value nests (1 for a scalar), counting up to limit + 1 and no further."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= limit:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _check_metadata(metadata: dict[str, Any] | None, what: str) -> dict[str, Any]:
    if _depth(metadata, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH:
        raise UserError(f"{what}: user_metadata nests more than {MAX_METADATA_DEPTH} levels deep; flatten it")
    size = len(json.dumps(metadata or {}, default=str).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise UserError(f"{what}: user_metadata is {size:,} bytes as JSON; the limit is {MAX_METADATA_BYTES:,}")
    return dict(metadata or {})


class Service:
    def __init__(self, engine: Engine, worker: Worker, loop: asyncio.AbstractEventLoop, *, hosted_parity: bool = False,
                 jwt_auth: bool = True) -> None:
        self.jwt_auth = jwt_auth
        self.engine = engine
        # A smoke run must fail where a hosted run would, even where tinker itself would work.
        self.hosted_parity = hosted_parity
        self.loop = loop
        self.futures = FutureStore()
        self.worker = worker
        self.sessions: dict[str, Session] = {}
        self.samplers: dict[str, Sampler] = {}
        self.gates: dict[str, SeqGate] = {}
        self._highest_seq: dict[str, int] = {}
        self._jwt_secret = os.urandom(32)
        self._owners: dict[str, str | None] = {}  # pending request_id -> the session it belongs to
        self.live_samples: dict[str, LiveSample] = {}
        # The decoder's SampleRequest of each live sampling request (worker thread only), so one
        # can be stopped alone: past its time budget, or when nobody polls it any more.
        self._decoding: dict[str, Any] = {}
        worker.attach(engine.decoder)
        self._sweep_s = min(SWEEP_S, SESSION_TIMEOUT_S / 2)
        self.loop.call_later(self._sweep_s, self._sweep)

    # --- plumbing -------------------------------------------------------------------------------

    def _new_request(self, owner: str | None) -> str:
        request_id = self.futures.create()
        self._owners[request_id] = owner
        if owner in self.sessions:
            self.sessions[owner].seen()
        return request_id

    def _report(self, request_id: str) -> Callable[[dict[str, Any]], None]:
        """The worker-thread callback that resolves request_id on the event loop."""
        return lambda payload: self.loop.call_soon_threadsafe(self._resolve, request_id, payload)

    def _resolve(self, request_id: str, payload: dict[str, Any]) -> None:
        self._owners.pop(request_id, None)
        live = self.live_samples.pop(request_id, None)
        if live is not None and live.deadline is not None:
            live.deadline.cancel()
        self.futures.resolve(request_id, payload)

    def _submit(self, job: Job, model_id: str | None = None, owner: str | None = None) -> dict[str, Any]:
        request_id = self._new_request(owner)
        self._release(request_id, job)
        return {"request_id": request_id, "model_id": model_id}

    def _release(self, request_id: str, job: Job) -> None:
        owner = self._owners.get(request_id)
        session = self.sessions.get(owner or "")
        if session is not None and session.gone:  # released by a SeqGate after its client died
            self._resolve(request_id, {"error": f"cancelled: {owner} stopped (its client is gone)", "category": "user"})
            return
        self.worker.submit(job, self._report(request_id), owner)

    def _ordered(self, raw: dict[str, Any], build: Callable[[], Job]) -> dict[str, Any]:
        """Queue a training-model job behind the client's earlier seq_ids."""
        model_id = raw.get("model_id")
        seq_id = raw.get("seq_id") if isinstance(raw.get("seq_id"), int) else None
        if seq_id is not None and not 0 <= seq_id < p.SEQ_ID_BOUND:
            raise UserError(f"seq_id must be an integer in [0, 2**63), got {seq_id}")
        gate = None
        if isinstance(model_id, str) and model_id in self.engine.models:
            if seq_id is not None:
                highest = self._highest_seq.get(model_id, 0)
                if seq_id > highest + MAX_SEQ_AHEAD:
                    raise UserError(
                        f"seq_id {seq_id} is more than {MAX_SEQ_AHEAD} ahead of the highest this model has seen "
                        f"({highest}); the SDK numbers a training client's requests 1, 2, 3, ..."
                    )
                self._highest_seq[model_id] = max(highest, seq_id)
            gate = self.gates.get(model_id) or self.gates.setdefault(model_id, SeqGate(self.loop, self._release))
            if (earlier := gate.duplicate(seq_id)) is not None:
                return {"request_id": earlier, "model_id": model_id}
        try:
            job = build()
        except UserError:
            if gate is not None:
                gate.arrive(seq_id, None)  # a rejected request still uses up its seq_id
            raise
        assert gate is not None  # build() checked that the model exists
        request_id = self._new_request(self.engine.models[model_id].session_id)
        gate.arrive(seq_id, (request_id, job))
        return {"request_id": request_id, "model_id": model_id}

    # --- dead clients ---------------------------------------------------------------------------

    def _drop(self, session: Session, why: str) -> None:
        """Cancel the queued and in-flight work of a session whose client is gone."""
        session.gone = True
        self.worker.cancel(session.session_id, f"cancelled: {session.session_id} stopped ({why})")

    def _client_disconnected(self, session: Session) -> None:
        lost = time.monotonic()

        def check() -> None:
            if not session.gone and session.open_polls == 0 and session.last_seen <= lost:
                self._drop(session, f"its client closed its connections and sent nothing for {CLIENT_GONE_GRACE_S:.0f} s")

        self.loop.call_later(CLIENT_GONE_GRACE_S, check)

    def _sweep(self) -> None:
        """Drop the pending work of sessions that stopped heartbeating, and the session-less
        sampling requests nobody polls."""
        now = time.monotonic()
        waiting = set(self._owners.values())
        for session in self.sessions.values():
            if not session.gone and session.session_id in waiting and now - session.last_seen > SESSION_TIMEOUT_S:
                self._drop(session, f"no heartbeat or request for {SESSION_TIMEOUT_S:g} s")
        for request_id, live in list(self.live_samples.items()):
            if live.owner is None and live.open_polls == 0 and now - live.last_polled > SESSION_TIMEOUT_S:
                self._stop_sample(request_id, f"cancelled: nobody polled {request_id} for {SESSION_TIMEOUT_S:g} s (its client is gone)")
        self.loop.call_later(self._sweep_s, self._sweep)

    def _stop_sample(self, request_id: str, message: str) -> None:
        """End one sampling request now: it fails with `message` and its rows leave the batch."""
        if request_id not in self.live_samples:
            return

        def stop() -> None:  # worker thread
            request = self._decoding.get(request_id)
            if request is None or self.worker.batcher is None:
                return  # it finished meanwhile
            # The decoder cancels by owner: this request alone gets an owner of its own.
            request.owner = request_id
            if self.worker.batcher.cancel(request_id, message):
                print(f"mint-local: stopped {request_id}: {message}", file=sys.stderr, flush=True)

        self.worker.soon(stop)

    def _poller_gone(self, request_id: str, live: LiveSample) -> None:
        lost = time.monotonic()

        def check() -> None:
            if request_id in self.live_samples and live.open_polls == 0 and live.last_polled <= lost:
                self._stop_sample(
                    request_id,
                    f"cancelled: nobody polls {request_id} any more (its client closed the connection and did not come "
                    f"back within {CLIENT_GONE_GRACE_S:.0f} s)",
                )

        self.loop.call_later(CLIENT_GONE_GRACE_S, check)

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise NotFound(
                f"unknown session {session_id!r}: this mint-local process did not create it (was the server "
                "restarted?); create a new ServiceClient"
            )
        return session

    # --- service --------------------------------------------------------------------------------

    def client_config(self, raw: dict[str, Any]) -> dict[str, Any]:
        # JWT auth advertised so the PyPI mindlab-toolkit 0.2.0 accepts sk- keys: tinker then
        # exchanges the key at /auth/token and never builds its tml-only ApiKeyAuthProvider.
        return {
            "pjwt_auth_enabled": self.jwt_auth,  # --no-jwt-auth: as a MinT endpoint without JWT auth
            "credential_default_source": "api_key",
            "parallel_fwdbwd_chunks": True,
            "proto_write_fwdbwd": False,
            "enable_grpc_retrieve_future": False,
            "sample_no_retries": False,
            # tinker 0.22.0's default pyqwest transport follows the archive endpoint's 302 itself and
            # the SDK then raises TypeError; httpx's transport hands the redirect back as the SDK
            # expects, so RestClient.get_checkpoint_archive_url* (and weights.download()) work.
            "use_pyqwest_transport": False,
        }

    def auth_token(self) -> dict[str, Any]:
        def b64(data: bytes) -> str:
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

        now = int(time.time())
        header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = b64(json.dumps({"iss": "mint-local", "sub": "local-user", "iat": now, "exp": now + 24 * 3600}).encode())
        signature = b64(hmac.new(self._jwt_secret, f"{header}.{payload}".encode(), hashlib.sha256).digest())
        return {"jwt": f"{header}.{payload}.{signature}"}

    def create_session(self, raw: dict[str, Any]) -> dict[str, Any]:
        req = _parse(p.CreateSessionRequest, raw)
        metadata = _check_metadata(req.user_metadata, "create_session")
        session_id = "session-" + uuid.uuid4().hex[:12]
        self.sessions[session_id] = Session(session_id, list(req.tags), metadata)
        return {
            "type": "create_session",
            "session_id": session_id,
            "info_message": None,
            "warning_message": None,
            "error_message": None,
        }

    def session_heartbeat(self, raw: dict[str, Any]) -> dict[str, Any]:
        self._session(_parse(p.SessionHeartbeatRequest, raw).session_id).seen()
        return {"type": "session_heartbeat"}

    def capabilities(self) -> dict[str, Any]:
        return self.engine.capabilities()

    async def retrieve_future(self, raw: dict[str, Any], disconnected: Callable[[], Awaitable[None]] | None = None) -> dict[str, Any]:
        """Long poll. `disconnected()` returns when the client closes the connection: a client
        whose polls all close and that then sends nothing is gone, and its work is dropped."""
        request_id = _parse(p.FutureRetrieveRequest, raw).request_id
        session = self.sessions.get(self._owners.get(request_id) or "")
        if session is None:
            live = self.live_samples.get(request_id)
            if live is not None:
                live.open_polls += 1
                live.last_polled = time.monotonic()
            try:
                return await self.futures.wait(request_id, disconnected=disconnected)
            except ClientGone:
                if live is not None:
                    self._poller_gone(request_id, live)
                return {"type": "try_again", "request_id": request_id, "queue_state": "active"}
            finally:
                if live is not None:
                    live.open_polls -= 1
        session.seen()
        session.open_polls += 1
        try:
            result = await self.futures.wait(request_id, disconnected=disconnected)
        except ClientGone:
            self._client_disconnected(session)
            return {"type": "try_again", "request_id": request_id, "queue_state": "active"}
        finally:
            session.open_polls -= 1
        session.seen()
        return result

    # --- training models ------------------------------------------------------------------------

    def create_model(self, raw: dict[str, Any]) -> dict[str, Any]:
        req = _parse(p.CreateModelRequest, raw)
        session = self._session(req.session_id)
        _check_metadata(req.user_metadata, "create_lora_training_client")
        base_model = self.engine.resolve_base_model(req.base_model, "create_lora_training_client")
        lora = req.lora_config
        if lora is None:
            raise UserError("create_model: mint-local trains LoRA adapters only; pass a lora_config (use create_lora_training_client)")
        if not 1 <= lora.rank <= 1024:
            raise UserError(f"create_lora_training_client: rank must be between 1 and 1024, got {lora.rank}")
        if not (lora.train_mlp or lora.train_attn or lora.train_unembed):
            raise UserError("create_lora_training_client: at least one of train_mlp, train_attn, train_unembed must be True")
        model_id = ck.new_run_id()
        session.training_run_ids.append(model_id)
        return self._submit(
            lambda: self.engine.create_model(model_id, base_model, lora, req.session_id, req.user_metadata), model_id, req.session_id
        )

    def get_info(self, raw: dict[str, Any]) -> dict[str, Any]:
        return self.engine.info(_parse(p.ModelIdRequest, raw).model_id)

    def unload_model(self, raw: dict[str, Any]) -> dict[str, Any]:
        model_id = _parse(p.ModelIdRequest, raw).model_id
        self.engine.get_model(model_id)
        return self._ordered(raw, lambda: lambda: self.engine.unload_model(model_id))

    def forward(self, raw: dict[str, Any], backward: bool) -> dict[str, Any]:
        def build() -> Job:
            if backward:
                req = _parse(p.ForwardBackwardRequest, raw)
                fbi, what = req.forward_backward_input, "forward_backward"
            else:
                req = _parse(p.ForwardRequest, raw)
                fbi, what = req.forward_input, "forward"
            self.engine.get_model(req.model_id)
            batch = prepare_batch(fbi, vocab_size=self.engine.vocab_size, max_length=self.engine.max_context, what=what)
            return self._finite_loss(req.model_id, what, backward, lambda: self.engine.forward(req.model_id, batch, backward))

        return self._ordered(raw, build)

    def _finite_loss(self, model_id: str, what: str, backward: bool, job: Job) -> Job:
        """A non-finite loss is a failed request, not a result: the SDK cannot parse NaN/Infinity
        (orjson), and its gradient would poison the next optim_step, so it is discarded here."""

        def run() -> dict[str, Any]:
            result = job()
            loss = result["metrics"]["loss:sum"]
            if not math.isfinite(loss):
                if backward:
                    self.engine.get_model(model_id).optimizer.zero_grad()
                raise UserError(
                    f"{what}: the loss is {loss} (check the weights, advantages and logprobs you sent, or the "
                    "temperature)" + ("; the gradient accumulated since the last optim_step was discarded, so the "
                    "weights stay as they are" if backward else "")
                )
            return result

        return run

    def optim_step(self, raw: dict[str, Any]) -> dict[str, Any]:
        def build() -> Job:
            req = _parse(p.OptimStepRequest, raw)
            self.engine.get_model(req.model_id)
            a = req.adam_params
            odd = {k: v for k, v in a.model_dump().items() if not math.isfinite(v)}
            if odd:
                raise UserError(f"optim_step: invalid AdamParams: values must be finite numbers, got {odd}")
            checks = [
                (a.learning_rate >= 0, "learning_rate must be >= 0"),
                (0 <= a.beta1 < 1 and 0 <= a.beta2 < 1, "beta1 and beta2 must be in [0, 1)"),
                (a.eps > 0, "eps must be > 0"),
                (a.weight_decay >= 0, "weight_decay must be >= 0"),
                (a.grad_clip_norm >= 0, "grad_clip_norm must be >= 0 (0 turns clipping off)"),
            ]
            for ok, message in checks:
                if not ok:
                    raise UserError(f"optim_step: invalid AdamParams: {message}")
            return lambda: self.engine.optim_step(req.model_id, a)

        return self._ordered(raw, build)

    # --- checkpoints ----------------------------------------------------------------------------

    def save_weights(self, raw: dict[str, Any]) -> dict[str, Any]:
        def build() -> Job:
            req = _parse(p.SaveWeightsRequest, raw)
            self.engine.get_model(req.model_id)
            name = ck.check_name(req.path or time.strftime("state-%Y%m%d-%H%M%S"), "save_state name")
            ref = ck.CheckpointRef(req.model_id, "training", name)
            if not req.overwrite and self.engine.store.exists(ref):
                raise UserError(f"save_state: {ref.tinker_path} already exists; pass overwrite=True or use another name")
            return lambda: self.engine.save_state(req.model_id, ref, req.overwrite)

        return self._ordered(raw, build)

    def save_weights_for_sampler(self, raw: dict[str, Any]) -> dict[str, Any]:
        def build() -> Job:
            req = _parse(p.SaveWeightsForSamplerRequest, raw)
            tm = self.engine.get_model(req.model_id)
            if req.path:
                ref = ck.CheckpointRef(req.model_id, "sampler", ck.check_name(req.path, "save_weights_for_sampler name"))

                def save_named() -> dict[str, Any]:
                    self.engine.save_for_sampler(req.model_id, ref, None)
                    return {"type": "save_weights_for_sampler", "path": ref.tinker_path, "sampling_session_id": None}

                return save_named
            if req.sampling_session_seq_id is None:
                raise UserError("save_weights_for_sampler: pass a name (path) for a durable checkpoint")
            session = tm.session_id
            sampler_id = f"sampler-{uuid.uuid4().hex[:12]}"

            def save_ephemeral() -> dict[str, Any]:
                folder = self.engine.save_for_sampler(req.model_id, None, self.engine.store.ephemeral_dir / sampler_id)
                meta = json.loads((folder / ck.META_FILE).read_text(encoding="utf-8"))
                source = AdapterSource(folder, meta["uid"], None)
                self.samplers[sampler_id] = Sampler(sampler_id, session, source)
                self.sessions[session].sampler_ids.append(sampler_id)
                return {"type": "save_weights_for_sampler", "path": None, "sampling_session_id": sampler_id}

            return save_ephemeral

        return self._ordered(raw, build)

    def load_weights(self, raw: dict[str, Any]) -> dict[str, Any]:
        def build() -> Job:
            req = _parse(p.LoadWeightsRequest, raw)
            tm = self.engine.get_model(req.model_id)
            source = self.engine.check_loadable(tm, req.path)
            return lambda: self.engine.load_state(req.model_id, source, req.optimizer)

        return self._ordered(raw, build)

    # --- sampling -------------------------------------------------------------------------------

    def create_sampling_session(self, raw: dict[str, Any]) -> dict[str, Any]:
        req = _parse(p.CreateSamplingSessionRequest, raw)
        self._session(req.session_id)
        sampler_id = f"sampler-{uuid.uuid4().hex[:12]}"
        self.samplers[sampler_id] = self._sampler_for(sampler_id, req.session_id, req.model_path, req.base_model)
        self.sessions[req.session_id].sampler_ids.append(sampler_id)
        return {"type": "create_sampling_session", "sampling_session_id": sampler_id}

    def _sampler_for(self, sampler_id: str, session_id: str, model_path: str | None, base_model: str | None) -> Sampler:
        if model_path:
            return Sampler(sampler_id, session_id, self.engine.sampler_source(model_path))
        if not base_model:
            raise UserError("create_sampling_client: pass model_path (a tinker:// checkpoint) or base_model")
        self.engine.resolve_base_model(base_model, "create_sampling_client")
        return Sampler(sampler_id, session_id, BASE_WEIGHTS)

    def sample(self, raw: dict[str, Any]) -> dict[str, Any]:
        req = _parse(p.SampleRequest, raw)
        if req.sampling_session_id:
            sampler = self.samplers.get(req.sampling_session_id)
            if sampler is None:
                raise NotFound(f"unknown sampling session {req.sampling_session_id!r}; create a new sampling client")
        else:
            sampler = self._sampler_for("direct", "", req.model_path, req.base_model)
        engine = self.engine
        prompt = model_input_tokens(req.prompt, "sample: prompt", engine.vocab_size)
        params = req.sampling_params
        if not prompt:
            raise UserError("sample: prompt is empty")
        if len(prompt) >= engine.max_context:
            raise UserError(f"sample: prompt has {len(prompt)} tokens; this model's context is {engine.max_context}")
        if not 1 <= req.num_samples <= MAX_NUM_SAMPLES:
            raise UserError(f"sample: num_samples must be between 1 and {MAX_NUM_SAMPLES}, got {req.num_samples}")
        if params.max_tokens is not None and params.max_tokens < 0:
            raise UserError("sample: max_tokens must be >= 0")
        room = engine.max_context - len(prompt)
        max_tokens = room if params.max_tokens is None else min(params.max_tokens, room)
        if req.num_samples * max_tokens > MAX_SAMPLED_TOKENS:
            raise UserError(
                f"sample: num_samples x max_tokens is {req.num_samples} x {max_tokens} = {req.num_samples * max_tokens:,} "
                f"tokens (max_tokens defaults to the context left after the prompt); one request may sample at most "
                f"{MAX_SAMPLED_TOKENS:,}: lower max_tokens or num_samples, or send several requests"
            )
        stops = [params.stop] if isinstance(params.stop, str) else list(params.stop or [])
        if len(stops) > MAX_STOP_SEQUENCES:
            raise UserError(f"sample: at most {MAX_STOP_SEQUENCES} stop sequences, got {len(stops)}")
        if not (math.isfinite(params.temperature) and params.temperature >= 0):
            raise UserError("sample: temperature must be >= 0 (0 = greedy)")
        if 0 < params.temperature < MIN_TEMPERATURE:
            raise UserError(
                f"sample: temperature {params.temperature:g} is below mint-local's floor of {MIN_TEMPERATURE:g}: so close "
                "to 0 the scaled logits overflow float32 (NaN log-probs) and every token drawn is the argmax anyway. "
                f"Use temperature=0 for greedy decoding, or at least {MIN_TEMPERATURE:g}"
            )
        if not 0 < params.top_p <= 1:
            raise UserError("sample: top_p must be in (0, 1]")
        if params.top_k == 0 or params.top_k < -1:
            raise UserError("sample: top_k must be -1 (no limit) or a positive integer")
        if req.topk_prompt_logprobs < 0:
            raise UserError("sample: topk_prompt_logprobs must be >= 0")
        k = min(req.topk_prompt_logprobs, engine.vocab_size)
        if k * (len(prompt) - 1) > MAX_TOPK_PROMPT_ENTRIES:
            raise UserError(
                f"sample: topk_prompt_logprobs x prompt tokens is {k} x {len(prompt) - 1} = {k * (len(prompt) - 1):,} "
                f"(token, logprob) pairs; one response may carry at most {MAX_TOPK_PROMPT_ENTRIES:,}: lower "
                f"topk_prompt_logprobs (at most {MAX_TOPK_PROMPT_ENTRIES // max(1, len(prompt) - 1):,} for this prompt) "
                "or score the prompt in shorter pieces"
            )
        owner = sampler.session_id or None
        request_id = self._new_request(owner)
        live = self.live_samples[request_id] = LiveSample(owner)
        live.deadline = self.loop.call_later(
            SAMPLE_BUDGET_S,
            self._stop_sample,
            request_id,
            f"sample: stopped after {SAMPLE_BUDGET_S:g} s, mint-local's wall-clock budget for one sampling request "
            f"(MINT_LOCAL_SAMPLE_BUDGET_S; {req.num_samples} samples x up to {max_tokens} tokens did not finish): lower "
            "max_tokens or num_samples, or send several smaller requests",
        )
        resolve = self._report(request_id)

        def report(payload: dict[str, Any]) -> None:  # worker thread
            self._decoding.pop(request_id, None)
            resolve(payload)

        def start() -> Any:  # worker thread
            request = engine.sample_request(
                sampler.source, prompt, req.num_samples, params, bool(req.prompt_logprobs), k, owner=owner, report=report
            )
            self._decoding[request_id] = request
            return request

        self.worker.submit_batched(start, report)
        return {"request_id": request_id, "model_id": None}

    def get_sampler(self, sampler_id: str) -> dict[str, Any]:
        sampler = self.samplers.get(sampler_id)
        if sampler is None:
            raise NotFound(f"unknown sampler {sampler_id!r}")
        # base_model is the local tokenizer folder: SamplingClient.get_tokenizer() loads
        # AutoTokenizer.from_pretrained(base_model), which must work offline.
        return {"sampler_id": sampler_id, "base_model": self.engine.tokenizer_id, "model_path": sampler.source.model_path}

    # --- REST: runs, checkpoints, sessions ------------------------------------------------------

    def list_training_runs(self, limit: int, offset: int) -> dict[str, Any]:
        ids = self.engine.store.list_run_ids()
        runs = [self.engine.store.training_run(r) for r in ids[offset : offset + limit]]
        return {"training_runs": runs, "cursor": {"offset": offset, "limit": limit, "total_count": len(ids)}}

    def training_run(self, run_id: str) -> dict[str, Any]:
        return self.engine.store.training_run(run_id)

    def list_checkpoints(self, run_id: str) -> dict[str, Any]:
        entries = self.engine.store.list_checkpoints(run_id)
        return {"checkpoints": entries, "cursor": {"offset": 0, "limit": len(entries), "total_count": len(entries)}}

    def list_user_checkpoints(self, limit: int, offset: int) -> dict[str, Any]:
        store = self.engine.store
        entries = [c for r in store.list_run_ids() for c in store.list_checkpoints(r)]
        entries.sort(key=lambda c: c["time"], reverse=True)
        return {"checkpoints": entries[offset : offset + limit], "cursor": {"offset": offset, "limit": limit, "total_count": len(entries)}}

    def checkpoint_ref(self, run_id: str, checkpoint_id: str) -> ck.CheckpointRef:
        return ck.parse_path(f"tinker://{run_id}/{checkpoint_id}")

    def delete_checkpoint(self, run_id: str, checkpoint_id: str) -> None:
        self.engine.store.delete(self.checkpoint_ref(run_id, checkpoint_id))

    def weights_info(self, raw: dict[str, Any]) -> dict[str, Any]:
        if self.hosted_parity:
            raise NotFound(
                "hosted MinT does not serve /api/v1/weights_info (mint-local runs with --hosted-parity), so "
                "create_training_client_from_state* cannot resume there. Resume with a fresh "
                "create_lora_training_client(base_model, rank=<same>) and then load_state_with_optimizer(path).result()"
            )
        ref, meta = self.engine.store.resolve(_parse(p.WeightsInfoRequest, raw).tinker_path)
        lora = meta["lora"]
        return {
            "base_model": meta["base_model"],
            "is_lora": True,
            "lora_rank": lora["rank"],
            "train_unembed": lora["train_unembed"],
            "train_mlp": lora["train_mlp"],
            "train_attn": lora["train_attn"],
        }

    def list_sessions(self, limit: int, offset: int) -> dict[str, Any]:
        return {"sessions": list(self.sessions)[offset : offset + limit]}

    def get_session(self, session_id: str) -> dict[str, Any]:
        s = self._session(session_id)
        return {"training_run_ids": list(s.training_run_ids), "sampler_ids": list(s.sampler_ids)}

    # --- MinT extensions ------------------------------------------------------------------------

    def forward_backward_reverse_kl(self, raw: dict[str, Any]) -> dict[str, Any]:
        req = _parse(p.ForwardBackwardReverseKLRequest, raw)
        engine = self.engine
        engine.get_model(req.model_id)
        if not req.data:
            raise UserError("forward_backward_reverse_kl: data is empty")
        if not (math.isfinite(req.temperature) and req.temperature >= MIN_TEMPERATURE):
            raise UserError(f"forward_backward_reverse_kl: temperature must be at least {MIN_TEMPERATURE:g}")
        reference = self._reference_source(req.reference_model_path)
        data = []
        for i, d in enumerate(req.data):
            where = f"forward_backward_reverse_kl: datum {i}"
            student = model_input_tokens(d.student_input, f"{where}: student_input", engine.vocab_size)
            ref_tokens = model_input_tokens(d.reference_input, f"{where}: reference_input", engine.vocab_size)
            targets = tensor_from_wire(d.target_tokens, f"{where}: target_tokens", integer=True).reshape(-1)
            weights = tensor_from_wire(d.weights, f"{where}: weights", integer=False).reshape(-1)
            n = len(student)
            if not student or not ref_tokens:
                raise UserError(f"{where}: student_input and reference_input must not be empty")
            if max(n, len(ref_tokens)) > engine.max_context:
                raise UserError(f"{where}: input longer than this model's context ({engine.max_context})")
            if targets.numel() != n or weights.numel() != n:
                raise UserError(
                    f"{where}: target_tokens ({targets.numel()}) and weights ({weights.numel()}) must have one entry "
                    f"per student_input token ({n})"
                )
            unpaired = n - len(ref_tokens)
            if unpaired > 0 and weights[:unpaired].abs().sum() > 0:
                raise UserError(
                    f"{where}: reference_input is {unpaired} tokens shorter than student_input, so the first "
                    f"{unpaired} positions have no reference distribution; give them weight 0"
                )
            data.append({"student": torch.tensor(student), "reference": torch.tensor(ref_tokens), "weights": weights})
        owner = engine.models[req.model_id].session_id
        job = lambda: engine.forward_backward_reverse_kl(req.model_id, reference, data, req.temperature)  # noqa: E731
        return self._submit(self._finite_loss(req.model_id, "forward_backward_reverse_kl", True, job), req.model_id, owner)

    def _reference_source(self, path: str) -> AdapterSource:
        if path.startswith(("tinker://", "mint://")):
            return self.engine.sampler_source(path)
        self.engine.resolve_base_model(path, "forward_backward_reverse_kl reference_model_path")
        return BASE_WEIGHTS

    def interpolate_checkpoints(self, raw: dict[str, Any]) -> dict[str, Any]:
        req = _parse(p.InterpolateCheckpointsRequest, raw)
        if not req.source_paths:
            raise UserError("interpolate_checkpoints: source_paths is empty")
        if len(req.source_paths) != len(req.coefficients):
            raise UserError(
                f"interpolate_checkpoints: {len(req.source_paths)} source_paths but {len(req.coefficients)} coefficients"
            )
        if not all(math.isfinite(c) for c in req.coefficients):
            raise UserError("interpolate_checkpoints: coefficients must be finite numbers")
        if len(req.source_paths) > MAX_INTERPOLATE_SOURCES:
            raise UserError(
                f"interpolate_checkpoints: {len(req.source_paths):,} source_paths; at most {MAX_INTERPOLATE_SOURCES} per "
                "call (the result is one adapter holding every source's factors): combine them in stages, since "
                "an interpolated checkpoint can be a source itself, and list each checkpoint once"
            )
        store = self.engine.store
        sources = []
        for path in req.source_paths:
            ref, meta = store.resolve(path)
            self.engine.check_same_base(meta, path)
            sources.append((ref, meta))
        rank = sum(int(meta["lora"]["rank"]) for _, meta in sources)
        if rank > MAX_INTERPOLATE_RANK:
            raise UserError(
                f"interpolate_checkpoints: the result would be a LoRA adapter of rank {rank:,} (the sum of the sources' "
                f"ranks); at most {MAX_INTERPOLATE_RANK}, the largest a training client may have: interpolate fewer "
                "checkpoints per call (list each checkpoint once)"
            )
        first = sources[0][0]
        out_path = req.output_path or time.strftime("interp-%Y%m%d-%H%M%S")
        if out_path.startswith(("tinker://", "mint://")):
            out = ck.parse_path(out_path)
            if out.kind != "sampler":
                raise UserError("interpolate_checkpoints: output_path must be a sampler path (tinker://RUN/sampler_weights/NAME) or a name")
            store.read_run(out.run_id)
        else:
            out = ck.CheckpointRef(first.run_id, "sampler", ck.check_name(out_path, "output_path"))
        return self._submit(lambda: self.engine.interpolate(sources, list(req.coefficients), out))
