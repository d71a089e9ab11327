"""mint-local's scheduler: batched sampling that stays exact, fairness between clients, and the
work of dead clients dropped."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace as NS  # noqa: N814 - short, the tests build many

import httpx
import mint
import pytest
import torch

from mint_local import checkpoints as ck
from mint_local import protocol as p
from mint_local.engine import BASE_WEIGHTS, AdapterSource, Engine
from mint_local.futures import Worker
from mint_local.inputs import prepare_batch
from mint_local.launcher import LocalServer
from mint_local.testing import TEST_API_KEY, TEXT, ce_datum

# --- the decoder, in-process: batched results equal each request served alone ---------------


def _train_adapter(engine: Engine, name: str, seed: int, folder: Path) -> AdapterSource:
    """A LoRA adapter moved away from zero by two real training steps, saved as a sampler checkpoint."""
    engine.create_model(name, engine.name, NS(rank=4, train_mlp=True, train_attn=True, train_unembed=True, seed=seed), "s", None)
    tokens = list(range(40 + seed, 80 + seed))
    datum = {
        "model_input": {"chunks": [{"type": "encoded_text", "tokens": tokens[:-1]}]},
        "loss_fn_inputs": {"target_tokens": {"data": tokens[1:], "dtype": "int64"}, "weights": {"data": [1.0] * 39, "dtype": "float32"}},
    }
    batch = prepare_batch(p.ForwardBackwardInput.model_validate({"data": [datum], "loss_fn": "cross_entropy"}), vocab_size=engine.vocab_size, max_length=engine.max_context)
    for _ in range(2):
        engine.forward(name, batch, backward=True)
        engine.optim_step(name, NS(learning_rate=5e-2, beta1=0.9, beta2=0.95, eps=1e-12, weight_decay=0.0, grad_clip_norm=0.0))
    out = engine.save_for_sampler(name, None, folder)
    return AdapterSource(out, json.loads((out / ck.META_FILE).read_text())["uid"])


def _params(**kw):
    return NS(**{"stop": [], "max_tokens": 10, "temperature": 1.0, "top_k": -1, "top_p": 1.0, "seed": 0, **kw})


def _run_joining(engine, decoder, requests, joined_at):
    """Step `decoder` until every request has reported, adding requests[i] before the steps
    `joined_at` names; the results by request, and whether two requests ever shared a cohort."""
    results: dict[int, dict] = {}
    step, shared = 0, False
    while step in joined_at or decoder.pending():
        for i in joined_at.get(step, []):
            decoder.add(engine.sample_request(*requests[i], report=lambda payload, i=i: results.__setitem__(i, payload)))
        decoder.step()
        shared |= any(len(c.requests) > 1 for c in decoder.cohorts)
        step += 1
    return results, shared


@pytest.fixture(scope="module", params=["tiny", "tiny-30m"])
def engine(request, tmp_path_factory):
    threads = torch.get_num_threads()
    root = tmp_path_factory.mktemp(f"decoder-{request.param}")
    # One thread: on a loaded 2-core machine two-thread torch stalls on its spinning OpenMP team.
    # bench/bench_scheduler.py checks the same exactness on the ~30M model with the server's threads.
    engine = Engine(request.param, device="cpu", state_dir=root / "state", threads=1)
    engine.adapters = [_train_adapter(engine, f"m{i}", i, root / f"a{i}") for i in (1, 2)]
    yield engine
    torch.set_num_threads(threads)  # the tiny engine runs torch on one thread


def test_batched_sampling_equals_each_request_alone_bit_for_bit(engine):
    """Requests joining at different steps, in cohorts and alone, on two adapters and the base
    model, with rows stopping early, per-request settings, prompt logprobs and a shared prefill:
    each gets exactly what it gets alone. The decoder decodes at most 5 rows per step, so cohorts also take turns."""
    a1, a2 = engine.adapters
    stops = list(range(3, 2048, 5))  # about one token in five ends a row
    requests = [  # (source, prompt, num_samples, params, prompt logprobs, top-k prompt logprobs)
        (a1, list(range(10, 17)), 1, _params(seed=1), False, 0),
        (BASE_WEIGHTS, list(range(30, 37)), 3, _params(seed=2, top_p=0.9, stop=stops, max_tokens=14), False, 0),
        (a2, list(range(50, 57)), 2, _params(seed=3, temperature=0.7, stop=stops), True, 2),
        (a2, list(range(5, 17)), 4, _params(seed=4, top_k=40, temperature=1.3), False, 0),
        (a1, list(range(60, 80)), 2, _params(seed=5, temperature=0.0), True, 3),
        (BASE_WEIGHTS, list(range(7, 30)), 1, _params(seed=6, max_tokens=1), True, 0),  # compute_logprobs' shape
        (a1, list(range(90, 97)), 2, _params(seed=7, max_tokens=0), True, 0),
        (a1, list(range(10, 17)), 2, _params(seed=8, temperature=0.9), False, 0),  # request 0's prompt: one shared prefill
    ]
    alone = [engine.sample(*r) for r in requests]
    assert any(len(set(len(s["tokens"]) for s in a["sequences"])) > 1 for a in alone), "some rows should stop early"

    decoder = engine.new_decoder(max_decode_rows=5, admit_window=0.0)
    joined_at = {0: [0, 1, 2, 7], 2: [3], 3: [4, 5, 6]}  # decoder step -> requests added before it
    results, shared_cohort = _run_joining(engine, decoder, requests, joined_at)
    assert shared_cohort == engine._merge_cohorts  # requests 0-2 (prompts of 7 tokens) shared a cohort
    assert [results[i] for i in range(len(requests))] == alone


# --- the prefix cache: reused keys and values give what a whole prefill gives -------------------


def _served(decoder, engine, *requests):
    """Add the requests to `decoder` in one step and run it dry: their results in order."""
    results: dict[int, dict] = {}
    for i, request in enumerate(requests):
        decoder.add(engine.sample_request(*request, report=lambda payload, i=i: results.__setitem__(i, payload)))
    while decoder.pending():
        decoder.step()
    return [results[i] for i in range(len(requests))]


def test_prefix_cache_sampling_equals_sampling_without_it_bit_for_bit(engine):
    """A conversation re-sending its growing history, prompts that share only a first block,
    the same tokens on other weights, prompt logprobs over a cached prefix, and cached and
    uncached prompts admitted in one step: with the prefix cache each request gets exactly what
    it gets alone with nothing cached (tokens, logprobs, prompt logprobs), and the cache did
    stand in for the prefills it claims."""
    a1, a2 = engine.adapters
    block = engine.lm.prefix_block
    decoder = engine.new_decoder(prefix_cache_bytes=64 << 20)
    history = [(7 * i) % 1900 + 20 for i in range(2 * block + 10)]
    expected_reuse, stored_blocks = 0, 0
    prompt = history
    for turn in range(3):
        request = (a1, prompt, 2, _params(seed=turn, max_tokens=12), False, 0)
        [got] = _served(decoder, engine, request)
        assert got == engine.sample(*request)
        # The complete blocks of the last turn's prompt, short of this prompt's last token.
        expected_reuse += min(stored_blocks, (len(prompt) - 1) // block) * block
        stored_blocks = len(prompt) // block
        assert decoder.prefix.reused_tokens == expected_reuse
        prompt = prompt + got["sequences"][0]["tokens"] + list(range(100, 100 + block // 2))
    assert expected_reuse >= 4 * block
    shares_first_block = history[:block] + list(range(300, 300 + block + 5))
    on_the_block_boundary = history[: 2 * block]
    batch = [
        (a1, shares_first_block, 1, _params(seed=9, temperature=0.8), False, 0),
        (a2, history, 2, _params(seed=10), False, 0),  # a1's blocks must not serve other weights
        (BASE_WEIGHTS, history, 1, _params(seed=11, top_k=50), False, 0),
        (a1, history + [5, 6, 7], 3, _params(seed=12, temperature=0.0), True, 2),  # prompt logprobs: prefilled whole
        (a1, on_the_block_boundary, 2, _params(seed=13), False, 0),
        (a1, list(range(600, 600 + block + 3)), 1, _params(seed=14), False, 0),  # nothing cached
    ]
    before = decoder.prefix.reused_tokens
    assert _served(decoder, engine, *batch) == [engine.sample(*r) for r in batch]
    # The first request reuses one block, the fifth one (its last block is left to prefill).
    assert decoder.prefix.reused_tokens - before == 2 * block
    # The other weights' prompts are cached now, under their own weights.
    again = [(a2, history + [1], 1, _params(seed=15), False, 0), (BASE_WEIGHTS, history + [1], 1, _params(seed=16), False, 0)]
    before = decoder.prefix.reused_tokens
    assert _served(decoder, engine, *again) == [engine.sample(*r) for r in again]
    assert decoder.prefix.reused_tokens - before == 2 * 2 * block


def test_prefix_cache_stays_within_its_bytes_and_evicts_least_recently_used(engine):
    """With room for five blocks: after prompts A, B (two blocks each), A again and C, the
    least recently used block (B's second) is gone and the cache holds at most five; A keeps
    both its blocks, B its first, and results stay exact throughout."""
    block = engine.lm.prefix_block
    probe = engine.new_decoder(prefix_cache_bytes=1 << 30)
    _served(probe, engine, (BASE_WEIGHTS, list(range(20, 21 + block)), 1, _params(max_tokens=1), False, 0))
    per_block = probe.prefix.bytes
    assert per_block > 0 and len(probe.prefix) == 1
    decoder = engine.new_decoder(prefix_cache_bytes=5 * per_block)
    prompts = {name: [start + i for i in range(2 * block + 1)] for name, start in (("A", 30), ("B", 400), ("C", 800))}

    def serve(name: str) -> int:
        before = decoder.prefix.reused_tokens
        request = (BASE_WEIGHTS, prompts[name], 1, _params(max_tokens=2), False, 0)
        assert _served(decoder, engine, request) == [engine.sample(*request)]
        assert decoder.prefix.bytes <= 5 * per_block
        return (decoder.prefix.reused_tokens - before) // block

    assert [serve("A"), serve("B"), serve("A"), serve("C")] == [0, 0, 2, 0]
    assert len(decoder.prefix) == 5
    # B finds its first block; storing its second again evicts A's second, now the oldest.
    assert [serve("B"), serve("C"), serve("A")] == [1, 2, 1]


@pytest.mark.parametrize("threads", [1, 2])
def test_cohorts_at_different_lengths_equal_each_request_alone_on_any_thread_count(engine, threads):
    """Cohorts whose caches hold different lengths (prompts of 5 to 131 tokens admitted at
    different steps, two of them joined into one cohort), on two adapters and the base weights,
    some with their prompt restored from the prefix cache, and torch on one and on two threads:
    each request gets exactly the tokens and logprobs it gets alone. (On two threads torch's CPU
    attention gives a row other floats at another place in the batch.)"""
    a1, a2 = engine.adapters
    block = engine.lm.prefix_block
    history = [(11 * i) % 1900 + 30 for i in range(2 * block + 2)]
    requests = [  # (source, prompt, num_samples, params, prompt logprobs, top-k prompt logprobs)
        (a1, history[: block - 4], 2, _params(seed=21, max_tokens=12), False, 0),
        (BASE_WEIGHTS, list(range(5, 10)), 1, _params(seed=22, temperature=0.8), False, 0),
        (a2, history[:17], 3, _params(seed=23, top_k=30), False, 0),
        (a1, history + [3], 1, _params(seed=24), False, 0),  # two blocks restored
        (a2, history[: block + 2], 2, _params(seed=25, temperature=0.0), False, 0),
        (BASE_WEIGHTS, history[: block - 1], 1, _params(seed=26, max_tokens=14), False, 0),
        (a1, history[: block + 1] + [9], 1, _params(seed=27, temperature=1.2), False, 0),  # one block restored
        (a1, list(range(200, 230)), 2, _params(seed=28, top_p=0.8), True, 2),
        (a2, list(range(300, 330)), 3, _params(seed=29), False, 0),  # request 7's length: one cohort
    ]
    joined_at = {0: [0, 1], 1: [2], 2: [3, 4], 4: [5, 6], 5: [7, 8]}  # decoder step -> requests added before it
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        alone = [engine.sample(*r) for r in requests]
        decoder = engine.new_decoder(prefix_cache_bytes=64 << 20, admit_window=0.0)
        assert _served(decoder, engine, (a1, history, 1, _params(max_tokens=1), False, 0))  # fills the prefix cache
        results, joined = _run_joining(engine, decoder, requests, joined_at)
    finally:
        torch.set_num_threads(saved)
    assert [results[i] for i in range(len(requests))] == alone
    assert decoder.prefix.reused_tokens == 3 * block
    assert joined == engine._merge_cohorts  # requests 7 and 8 decoded as one cohort


def test_rope_table_values_do_not_depend_on_how_far_it_has_grown():
    """The sampler's RoPE table grows with the longest position seen (past max_position_embeddings
    with --max-context): a position's values must be the same whether the table was built at once
    or grown a block at a time."""
    from mint_local import qwen3
    from mint_local.tiny_model import ensure_tiny_model

    grown = qwen3.load(ensure_tiny_model("tiny"), torch.device("cpu"), torch.float32)
    for positions in (10, 1500, 2100, 5000):
        grown._rope_table(torch.float32, positions)
    at_once = qwen3.load(ensure_tiny_model("tiny"), torch.device("cpu"), torch.float32)._rope_table(torch.float32, 5000)
    assert all(torch.equal(a, b) for a, b in zip(grown._rope_table(torch.float32, 5000), at_once, strict=True))
    assert at_once[0].shape[0] >= 5000


def test_sdk_concurrent_samples_equal_the_same_requests_alone(mint_local_server):
    """Through the SDK: seeded requests sent all at once, to two samplers and the base model,
    return exactly what each returns alone."""
    sc = mint.ServiceClient(base_url=mint_local_server.base_url, api_key=TEST_API_KEY)
    try:
        samplers = [sc.create_sampling_client(base_model=mint_local_server.model_name)]
        for seed in (11, 12):
            tc = sc.create_lora_training_client(base_model=mint_local_server.model_name, rank=4, seed=seed)
            tokens = tc.get_tokenizer().encode(TEXT)
            tc.forward_backward([ce_datum(tokens)], "cross_entropy")
            tc.optim_step(mint.AdamParams(learning_rate=2e-2)).result()
            samplers.append(tc.save_weights_and_get_sampling_client())
        prompts = [tokens[:6], tokens[:6], tokens[3:14], tokens[:6]]
        calls = [
            (samplers[i % 3], mint.ModelInput.from_ints(prompts[i % 4]), 1 + i % 3, mint.SamplingParams(max_tokens=24, seed=100 + i, temperature=0.6 + 0.1 * (i % 5), stop=[]))
            for i in range(12)
        ]
        alone = [s.sample(prompt=pr, num_samples=n, sampling_params=sp).result() for s, pr, n, sp in calls]

        async def together():
            return await asyncio.gather(*[s.sample_async(prompt=pr, num_samples=n, sampling_params=sp) for s, pr, n, sp in calls])

        batched = asyncio.run(together())
        for a, b in zip(alone, batched, strict=True):
            assert [(s.tokens, s.logprobs, s.stop_reason) for s in a.sequences] == [(s.tokens, s.logprobs, s.stop_reason) for s in b.sequences]
        # compute_logprobs from several clients at once: exactly the values each gets alone.
        sequences = [prompts[i % 4] + alone[i].sequences[0].tokens for i in range(8)]
        single = [samplers[i % 3].compute_logprobs(mint.ModelInput.from_ints(t)).result() for i, t in enumerate(sequences)]

        async def scores():
            return await asyncio.gather(*[samplers[i % 3].compute_logprobs_async(mint.ModelInput.from_ints(t)) for i, t in enumerate(sequences)])

        assert asyncio.run(scores()) == single
    finally:
        sc.holder.close()


# --- threads on a busy machine -------------------------------------------------------------------


def test_thread_count_follows_the_cpus_other_processes_leave_free(engine):
    """Beside two busy processes on two CPUs the governor that picks the default thread count
    settles on one thread (a parallel op waits for a thread that is not running); `--threads`
    wins over it: an engine given a count has no governor and keeps that count."""
    from mint_local.cpu_threads import RECOUNT_S, ThreadGovernor

    assert engine.thread_governor is None and torch.get_num_threads() == 1  # the fixture passes threads=1
    busy = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end:\n    pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", busy]) for _ in range(2)]
    chosen: list[int] = []
    try:
        governor = ThreadGovernor(chosen.append, ceiling=2, cpus=2)
        governor.threads = 2  # as if the machine had been quiet at launch
        time.sleep(RECOUNT_S + 0.5)
        governor.tick()
        assert chosen[-1] == 1 and governor.threads == 1
    finally:
        for proc in burners:
            proc.kill()
            proc.wait()
        torch.set_num_threads(1)


# --- clients in their own processes -------------------------------------------------------------

_SAMPLING_CLIENT = textwrap.dedent(
    """
    import sys
    import mint
    base_url, api_key, model, requests, samples, max_tokens = sys.argv[1:]
    sc = mint.ServiceClient(base_url=base_url, api_key=api_key)
    sampler = sc.create_sampling_client(base_model=model)
    prompt = mint.ModelInput.from_ints(list(range(20, 30)))
    params = [mint.SamplingParams(max_tokens=int(max_tokens), stop=[], seed=i) for i in range(int(requests))]
    futures = [sampler.sample(prompt, int(samples), p) for p in params]
    print(sc.holder._session_id, flush=True)
    for future in futures:
        future.result()
    print("done", flush=True)
    """
)


def _sampling_client(server: LocalServer, tmp_path: Path, requests: int, samples: int, max_tokens: int) -> tuple[subprocess.Popen, str]:
    """A client process that sends `requests` sampling requests, prints its session id, waits for
    every result and prints "done"."""
    script = tmp_path / "sampling_client.py"
    script.write_text(_SAMPLING_CLIENT)
    proc = subprocess.Popen(
        [sys.executable, str(script), server.base_url, TEST_API_KEY, server.model_name, str(requests), str(samples), str(max_tokens)],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, TINKER_TELEMETRY="0"),
    )
    session_id = proc.stdout.readline().strip()
    assert session_id.startswith("session-"), session_id
    time.sleep(3.0)  # its requests reach the server and are polled
    return proc, session_id


def _log_lines(server: LocalServer, text: str) -> list[str]:
    return [line for line in server.log_path.read_text().splitlines() if text in line]


def _wait_for_log(server: LocalServer, text: str) -> list[str]:
    deadline = time.monotonic() + 60
    while not _log_lines(server, text) and time.monotonic() < deadline:
        time.sleep(0.2)
    return _log_lines(server, text)


# --- fairness -----------------------------------------------------------------------------------


def test_a_long_sample_does_not_hold_up_another_clients_forward(mint_local_server, tmp_path):
    """Client A asks for 64 samples x 2000 tokens (stop=[]); client B's 6-token forward, sent
    after it, finishes first: when B has its result, A's request is still running, and killing
    A then leaves it to be dropped unfinished. (With requests served one after another, B's
    forward waited for all of A's request, so there was nothing left to drop.)"""
    proc, session_a = _sampling_client(mint_local_server, tmp_path, requests=1, samples=64, max_tokens=2000)
    b = mint.ServiceClient(base_url=mint_local_server.base_url, api_key=TEST_API_KEY)
    try:
        trainer = b.create_lora_training_client(base_model=mint_local_server.model_name, rank=2)
        short = trainer.forward([ce_datum(list(range(100, 107)))], "cross_entropy").result(timeout=300)
        assert len(short.loss_fn_outputs[0]["logprobs"].data) == 6
    finally:
        b.holder.close()
        proc.kill()
        proc.wait(10)
    dropped = _wait_for_log(mint_local_server, f"of {session_a}:")
    assert dropped and "dropped 1 queued request(s)" in dropped[0]


def test_worker_takes_queued_jobs_round_robin_across_owners():
    """Five queued jobs of one owner do not delay another owner's single job by five turns."""
    worker = Worker()
    order: list[str] = []
    done = threading.Event()
    gate = threading.Event()
    try:
        worker.submit(lambda: gate.wait() and {}, lambda payload: None, owner="a")  # holds the worker until all is queued
        for i in range(5):
            worker.submit(lambda i=i: order.append(f"a{i}") or {}, lambda payload: None, owner="a")
        worker.submit(lambda: order.append("b") or {}, lambda payload: done.set(), owner="b")
        gate.set()
        assert done.wait(10)
        assert order.index("b") <= 1
    finally:
        gate.set()
        worker.stop()


# --- dead clients -------------------------------------------------------------------------------

def test_a_killed_clients_queued_work_is_dropped(mint_local_server, tmp_path):
    """A client process queues six long sampling requests and is killed: the server drops them
    (the client's long polls closed and nothing more came from it), so the next client's
    request is not batched with minutes of dead work: it finishes, the dead ones never do."""
    proc, session_id = _sampling_client(mint_local_server, tmp_path, requests=6, samples=16, max_tokens=2000)
    proc.kill()
    proc.wait(10)
    sc = mint.ServiceClient(base_url=mint_local_server.base_url, api_key=TEST_API_KEY)
    try:
        sampler = sc.create_sampling_client(base_model=mint_local_server.model_name)
        dropped = _wait_for_log(mint_local_server, f"of {session_id}:")
        # All six were still queued or decoding (2000 tokens each) when they were dropped.
        assert dropped and "dropped 6 queued request(s)" in dropped[0] and "closed its connections" in dropped[0]
        out = sampler.sample(mint.ModelInput.from_ints(list(range(20, 30))), 16, mint.SamplingParams(max_tokens=50, stop=[], seed=0)).result()
        assert all(len(s.tokens) == 50 for s in out.sequences)
    finally:
        sc.holder.close()


def test_work_of_a_session_that_stops_heartbeating_is_dropped(tmp_path, monkeypatch):
    """A client that queued work and then went silent (no heartbeat, no poll) loses that work
    after the session timeout; the request's future reports why."""
    monkeypatch.setenv("MINT_LOCAL_SESSION_TIMEOUT_S", "2")
    with LocalServer.start(model="tiny", device="cpu", state_dir=tmp_path / "state") as server:
        with httpx.Client(base_url=server.base_url, headers={"X-API-Key": TEST_API_KEY}, timeout=60) as http:
            session = http.post("/api/v1/create_session", json={"tags": [], "sdk_version": "0.22.0"}).json()["session_id"]
            sampler = http.post(
                "/api/v1/create_sampling_session",
                json={"session_id": session, "sampling_session_seq_id": 0, "base_model": server.model_name},
            ).json()["sampling_session_id"]
            queued = http.post(
                "/api/v1/asample",
                json={
                    "sampling_session_id": sampler,
                    "prompt": {"chunks": [{"type": "encoded_text", "tokens": list(range(20, 30))}]},
                    "num_samples": 64,
                    "sampling_params": {"max_tokens": 2000, "stop": []},
                },
            ).json()
            _wait_for_log(server, f"of {session}:")
            result = http.post("/api/v1/retrieve_future", json={"request_id": queued["request_id"]}).json()
        assert result["category"] == "user" and "no heartbeat" in result["error"]
        assert "dropped 1 queued request(s)" in _log_lines(server, f"of {session}:")[0]
