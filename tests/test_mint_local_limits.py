"""mint-local under hostile or clumsy input: poison values, oversized requests, out-of-range ids.

Every case is refused with a 4xx that says what to change, at once, and leaves the server and
the model it touched as they were (checked by a forward pass after each attempt).
"""

from __future__ import annotations

import json
import math
import socket
import time
from urllib.parse import urlsplit

import httpx
import mint
import pytest
import torch

from mint_local.launcher import LocalServer
from mint_local.testing import TEST_API_KEY, ce_datum, checkpoint_dir, logprobs_of


def new_client(sc, server, **kwargs):
    return sc.create_lora_training_client(base_model=server.model_name, rank=4, seed=0, **kwargs)


def finite_logprobs(tc, tokens) -> torch.Tensor:
    lp = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
    assert torch.isfinite(lp).all(), lp
    return lp


def refused(call, *messages: str, errors=(mint.BadRequestError,)) -> None:
    started = time.monotonic()
    with pytest.raises(errors) as info:
        result = call()
        if hasattr(result, "result"):
            result.result()
    text = str(info.value)
    # A 4xx carries the server's "mint-local: ..." text; a request that failed while running is a
    # RequestFailedError with the reason.
    assert isinstance(info.value, mint.RequestFailedError) or "mint-local: " in text, text
    assert all(m in text for m in messages), text
    assert time.monotonic() - started < 20, text  # a 4xx, not a 5xx the SDK retries for minutes


# --- poison: non-finite values never reach a model's weights -----------------------------------


def raw_datum(tokens: list[int], **inputs: list[float]) -> dict:
    """A Datum in wire JSON, next-token targets plus the given float inputs."""
    wire = {"target_tokens": {"data": tokens[1:], "dtype": "int64"}}
    wire.update({k: {"data": v, "dtype": "float32"} for k, v in inputs.items()})
    return {"model_input": {"chunks": [{"type": "encoded_text", "tokens": tokens[:-1]}]}, "loss_fn_inputs": wire}


def post_raw(http, path: str, body: dict) -> httpx.Response:
    # json.dumps writes NaN / Infinity / 1e39 as a hostile client would (the SDK refuses them itself).
    return http.post(path, content=json.dumps(body), headers={"Content-Type": "application/json"})


def test_poison_values_are_refused_and_never_corrupt_the_weights(sc, mint_local_server, http, tokens):
    tc = new_client(sc, mint_local_server)
    n = len(tokens) - 1
    adam = mint.AdamParams(learning_rate=1e-2)
    tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
    tc.optim_step(adam).result()
    before = finite_logprobs(tc, tokens)
    rl = {"logprobs": [-1.0] * n, "advantages": [1.0] * n}

    def fb(datum: dict, loss_fn: str, config: dict | None = None) -> httpx.Response:
        body = {"model_id": tc.model_id, "forward_backward_input": {"data": [datum], "loss_fn": loss_fn, "loss_fn_config": config}}
        return post_raw(http, "/api/v1/forward_backward", body)

    # 1e39 is finite in float64 (the JSON value) and inf in the float32 the loss runs in.
    attempts = [
        (fb(raw_datum(tokens, weights=[1e39] * n), "cross_entropy"), "float32"),
        (fb(raw_datum(tokens, weights=[math.nan] * n), "cross_entropy"), "NaN"),
        (fb(raw_datum(tokens, logprobs=[-1.0] * n, advantages=[1e39] * n), "ppo"), "advantages"),
        (fb(raw_datum(tokens, **rl), "dro", {"beta": math.nan}), "beta"),
    ]
    for bad in (math.nan, math.inf, -math.inf, 1e39):
        for key in ("clip_low_threshold", "clip_high_threshold"):
            attempts.append((fb(raw_datum(tokens, **rl), "ppo", {key: bad}), key))
    for response, message in attempts:
        assert response.status_code == 400 and message in response.text, response.text
        assert torch.equal(finite_logprobs(tc, tokens), before)

    # 1e38 passes as float32, but the summed loss overflows: the request fails with the reason and
    # its gradient is discarded, so the optim_step after it changes nothing.
    refused(
        lambda: tc.forward_backward([ce_datum(tokens, [1e38] * n)], "cross_entropy"),
        "the loss is inf",
        "discarded",
        errors=(mint.RequestFailedError,),
    )
    assert tc.optim_step(adam).result().metrics["grad_norm:mean"] == 0.0
    assert torch.equal(finite_logprobs(tc, tokens), before)

    # Finite gradient, absurd learning rate: the step would overflow the weights, so it is undone.
    tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
    refused(lambda: tc.optim_step(mint.AdamParams(learning_rate=1e38)), "undone", errors=(mint.RequestFailedError,))
    assert torch.equal(finite_logprobs(tc, tokens), before)

    # The model trains on normally afterwards: the refused gradients were cleared.
    tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
    tc.optim_step(adam).result()
    after = finite_logprobs(tc, tokens)
    assert after.sum() > before.sum()


# --- names and ids ------------------------------------------------------------------------------


def test_checkpoint_names_refuse_a_trailing_newline(sc, mint_local_server, tokens):
    tc = new_client(sc, mint_local_server)
    refused(lambda: tc.save_state("state\n"), "invalid save_state name")
    refused(lambda: tc.save_weights_for_sampler("sampler\n"), "invalid save_weights_for_sampler name")
    refused(lambda: tc.load_state(f"tinker://{tc.model_id}/weights/x\n"), "not a checkpoint path", errors=(mint.BadRequestError, ValueError))
    assert tc.save_state("state").result().path.endswith("/weights/state")


def test_seeds_and_seq_ids_out_of_range_are_refused_and_leave_no_run(sc, mint_local_server, http, tokens):
    rest = sc.create_rest_client()
    runs_before = rest.list_training_runs(limit=1000).result().cursor.total_count
    refused(
        lambda: sc.create_lora_training_client(base_model=mint_local_server.model_name, rank=2, seed=2**70),
        "lora_config.seed",
    )
    assert rest.list_training_runs(limit=1000).result().cursor.total_count == runs_before
    sampler = sc.create_sampling_client(base_model=mint_local_server.model_name)
    refused(
        lambda: sampler.sample(mint.ModelInput.from_ints(tokens[:5]), 1, mint.SamplingParams(max_tokens=2, seed=2**70)),
        "sampling_params.seed",
    )

    tc = new_client(sc, mint_local_server)
    datum = {
        "model_input": {"chunks": [{"type": "encoded_text", "tokens": tokens[:-1]}]},
        "loss_fn_inputs": {"target_tokens": {"data": tokens[1:], "dtype": "int64"}, "weights": {"data": [1.0] * (len(tokens) - 1), "dtype": "float32"}},
    }
    body = {"model_id": tc.model_id, "forward_input": {"data": [datum], "loss_fn": "cross_entropy"}}
    for seq_id, message in ((10**20, "seq_id"), (-1, "seq_id"), (10**6, "ahead of the highest")):
        started = time.monotonic()
        response = http.post("/api/v1/forward", json={**body, "seq_id": seq_id})
        assert response.status_code == 400 and message in response.text, response.text
        assert time.monotonic() - started < 5
    # The model's queue was not held: the SDK's next request runs at once.
    started = time.monotonic()
    finite_logprobs(tc, tokens)
    assert time.monotonic() - started < 5


# --- size limits: refused with a 4xx before the work (or the whole body) is taken on ------------


def test_sampling_work_per_request_is_bounded(http, sc, mint_local_server, tokens):
    sampler = sc.create_sampling_client(base_model=mint_local_server.model_name)
    prompt = mint.ModelInput.from_ints(tokens[:5])
    refused(
        lambda: sampler.sample(prompt, 1024, mint.SamplingParams(max_tokens=2000, stop=[])),
        "num_samples x max_tokens is 1024 x 2000",
    )
    # max_tokens=None means "the rest of the context": counted as such.
    refused(lambda: sampler.sample(prompt, 64, mint.SamplingParams(stop=[])), "num_samples x max_tokens is 64 x")
    refused(lambda: sampler.sample(prompt, 1, mint.SamplingParams(max_tokens=2, stop=[f"s{i}" for i in range(200)])), "stop sequences")
    ok = sampler.sample(prompt, 4, mint.SamplingParams(max_tokens=3, stop=[])).result()
    assert [len(s.tokens) for s in ok.sequences] == [3, 3, 3, 3]


def test_metadata_and_string_fields_are_bounded(http, sc, mint_local_server):
    big = {f"k{i}": "v" * 1000 for i in range(20)}  # 20 kB as JSON
    refused(
        lambda: sc.create_lora_training_client(base_model=mint_local_server.model_name, rank=2, user_metadata=big),
        "user_metadata is",
        "the limit is 16,384",
    )
    for body, where in (
        ({"tags": ["x"] * 65}, "tags"),
        ({"tags": ["x" * 5000]}, "tags.0"),
        ({"sdk_version": "0.22.0" * 1000}, "sdk_version"),
        ({"user_metadata": {"blob": "x" * 20_000}}, "user_metadata is 20,"),
    ):
        response = http.post("/api/v1/create_session", json=body)
        assert response.status_code == 400 and where in response.text, response.text
    assert http.post("/api/v1/create_session", json={"tags": ["ok"], "user_metadata": {"a": "b"}}).status_code == 200


def _raw_request(base_url: str, head: str) -> socket.socket:
    url = urlsplit(base_url)
    sock = socket.create_connection((url.hostname, url.port), timeout=10)
    sock.sendall(head.encode())
    return sock


def _read_status(sock: socket.socket) -> tuple[int, str]:
    data = b""
    while b"\r\n\r\n" not in data or len(data) < 200:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    status_line, _, rest = data.decode(errors="replace").partition("\r\n")
    return int(status_line.split()[1]), rest


def test_request_body_size_is_refused_before_it_is_read(mint_local_server, http):
    from mint_local.app import MAX_BODY_BYTES

    # A declared length over the limit: 413 at once, without sending a byte of the body.
    sock = _raw_request(
        mint_local_server.base_url,
        f"POST /api/v1/forward_backward HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n",
    )
    with sock:
        status, text = _read_status(sock)
    assert status == 413 and "larger than 32 MiB" in text

    # No declared length (chunked): the server counts while it reads and stops at the limit.
    sock = _raw_request(
        mint_local_server.base_url,
        "POST /api/v1/forward_backward HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    piece = b"x" * (1024 * 1024)
    sent = 0
    with sock:
        sock.settimeout(0.05)
        while sent < 2 * MAX_BODY_BYTES:
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    break  # the server answered
            except (TimeoutError, BlockingIOError):
                pass
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += len(piece)
        sock.settimeout(10)
        status, text = _read_status(sock)
    assert status == 413 and "larger than 32 MiB" in text
    assert sent <= MAX_BODY_BYTES + 8 * len(piece), sent  # it stopped reading near the limit
    assert http.get("/api/v1/healthz").status_code == 200


# --- context length and image chunks (issue 17) -------------------------------------------------


def test_context_beyond_2048_tokens_and_a_clear_400_past_the_limit(sc, mint_local_server, tokens):
    caps = sc.get_server_capabilities()
    limit = caps.supported_models[0].max_context_length
    assert limit == 32768
    tc = new_client(sc, mint_local_server)
    long = (tokens * (4200 // len(tokens) + 1))[:4200]
    out = tc.forward_backward([ce_datum(long)], "cross_entropy").result()
    assert out.metrics["num_tokens:sum"] == 4199 and math.isfinite(out.metrics["loss:sum"])
    sampler = tc.save_weights_and_get_sampling_client()
    got = sampler.sample(mint.ModelInput.from_ints(long[:3000]), 1, mint.SamplingParams(max_tokens=4, stop=[])).result()
    assert len(got.sequences[0].tokens) == 4
    # A recipe's default max_tokens=4096 on a ~2,500-token prompt passes validation (it would not
    # at 2,048); sampled with a stop so the test stays short.
    eos = tc.get_tokenizer().eos_token_id
    got = sampler.sample(
        mint.ModelInput.from_ints(long[:2500]), 1, mint.SamplingParams(max_tokens=4096, temperature=0.0, stop=[long[2500]])
    ).result()
    assert got.sequences[0].stop_reason in ("stop", "length") and eos is not None
    too_long = (tokens * (limit // len(tokens) + 2))[: limit + 2]
    refused(lambda: tc.forward([ce_datum(too_long)], "cross_entropy"), f"has {limit + 1} tokens; this model's context is {limit}")
    refused(
        lambda: sampler.sample(mint.ModelInput.from_ints(too_long[:limit]), 1, mint.SamplingParams(max_tokens=1)),
        f"this model's context is {limit}",
    )


@pytest.mark.slow
def test_max_context_flag(tmp_path, tokens):
    from mint_local.launcher import LocalServer

    with LocalServer.start(model="tiny", device="cpu", max_context=64, state_dir=tmp_path / "state") as server:
        sc = mint.ServiceClient(base_url=server.base_url, api_key=TEST_API_KEY)
        assert sc.get_server_capabilities().supported_models[0].max_context_length == 64
        tc = sc.create_lora_training_client(base_model=server.model_name, rank=2)
        long = (tokens * 5)[:66]
        tc.forward([ce_datum(long[:65])], "cross_entropy").result()
        refused(lambda: tc.forward([ce_datum(long)], "cross_entropy"), "has 65 tokens; this model's context is 64")


def test_max_context_of_a_model_folder_can_only_be_lowered(tmp_path):
    from mint_local.engine import _pick_max_context
    from mint_local.errors import UserError

    assert _pick_max_context(None, 2048, False, tmp_path) == 2048
    assert _pick_max_context(1024, 2048, False, tmp_path) == 1024
    assert _pick_max_context(100_000, 32768, True, tmp_path) == 100_000
    with pytest.raises(UserError, match="only the built-in tiny models"):
        _pick_max_context(4096, 2048, False, tmp_path)


def test_prefix_cache_is_opt_in_on_cuda_where_its_exactness_is_not_proven():
    import torch

    from mint_local.engine import _pick_prefix_cache_mb
    from mint_local.sampling import PREFIX_CACHE_MB

    assert _pick_prefix_cache_mb(None, torch.device("cpu")) == PREFIX_CACHE_MB
    assert _pick_prefix_cache_mb(None, torch.device("cuda")) == 0
    assert _pick_prefix_cache_mb(512, torch.device("cuda")) == 512
    assert _pick_prefix_cache_mb(-1, torch.device("cpu")) == 0


def test_cuda_sampling_attention_leaves_out_cudnn_and_the_cpu_keeps_torchs_choice():
    """On an H200 cuDNN's attention gave the same requests other floats from run to run
    (bench/gpu_exactness.py); the packed forward runs its attention without it on CUDA."""
    import torch

    from mint_local.qwen3 import _exact_attention

    before = (torch.backends.cuda.cudnn_sdp_enabled(), torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled())
    with _exact_attention(torch.device("cuda")):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled() and torch.backends.cuda.math_sdp_enabled()
    with _exact_attention(torch.device("cpu")):
        assert (torch.backends.cuda.cudnn_sdp_enabled(), torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled()) == before
    assert (torch.backends.cuda.cudnn_sdp_enabled(), torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled()) == before


def test_image_chunks_get_a_clear_400(sc, mint_local_server, tokens):
    image = mint.types.ImageChunk(data=b"\x89PNG fake", format="png")
    tc = new_client(sc, mint_local_server)
    datum = mint.Datum(
        model_input=mint.ModelInput(chunks=[mint.EncodedTextChunk(tokens=tokens[:3]), image]),
        loss_fn_inputs={"target_tokens": [1, 2, 3, 4], "weights": [1.0] * 4},
    )
    refused(lambda: tc.forward([datum], "cross_entropy"), "chunk type 'image' is not supported", "text-only")
    sampler = sc.create_sampling_client(base_model=mint_local_server.model_name)
    refused(
        lambda: sampler.sample(mint.ModelInput(chunks=[image]), 1, mint.SamplingParams(max_tokens=1)),
        "chunk type 'image' is not supported",
    )


def test_wire_limits_are_what_the_readme_says():
    """The README's "Limits" table quotes these numbers; a change must update it."""
    from pathlib import Path

    from mint_local import app, protocol, service

    readme = (Path(__file__).parent.parent / "mint_local" / "README.md").read_text(encoding="utf-8")
    for value in (
        f"{app.MAX_BODY_BYTES // (1024 * 1024)} MiB",
        f"{service.MAX_METADATA_BYTES // 1024} KiB",
        f"{protocol.MAX_STRING_CHARS:,} characters",
        f"{service.MAX_SAMPLED_TOKENS:,} tokens",
        f"{service.MAX_NUM_SAMPLES:,} samples",
        f"{service.MAX_SEQ_AHEAD:,}",
        f"{protocol.MAX_TAGS} tags",
        f"{service.MAX_STOP_SEQUENCES} stop sequences",
        f"at most {service.MAX_TOPK_PROMPT_ENTRIES:,} (token, logprob) pairs",
        f"{service.MAX_INTERPOLATE_SOURCES} source paths",
        f"at most {service.MAX_INTERPOLATE_RANK:,}",
        f"{service.MAX_METADATA_DEPTH} levels",
        f"at most {protocol.MAX_TENSOR_DIMS} sizes, each in [0, 2**31)",
        f"{service.SAMPLE_BUDGET_S:g} s from its arrival",
        f"(0, {service.MIN_TEMPERATURE:g})",
    ):
        assert value in readme, value
    assert json.dumps(protocol.SEED_BOUND) and "2**63" in readme


# --- issue 26: nothing a request sends poisons a model, hangs on, or answers with a traceback ---


def saved_state(state_dir, tc, name: str) -> tuple[bytes, dict]:
    """The adapter file and the optimizer state of a save_state, as written to disk."""
    folder = checkpoint_dir(state_dir, tc.save_state(name).result().path)
    return (folder / "adapter_model.safetensors").read_bytes(), torch.load(folder / "optimizer.pt", weights_only=True)


def seeded_sample(tc, tokens) -> tuple[list[list[int]], list[list[float]]]:
    out = tc.save_weights_and_get_sampling_client().sample(
        mint.ModelInput.from_ints(tokens[:8]), 3, mint.SamplingParams(max_tokens=6, seed=11, stop=[])
    ).result()
    return [s.tokens for s in out.sequences], [s.logprobs for s in out.sequences]


def test_a_finite_absurd_learning_rate_is_undone_and_the_model_stays_bit_identical(sc, mint_local_server, http, tokens):
    """lr 1e20 leaves every weight finite, but their products overflow float32: every forward and
    sample after it was NaN. The step is undone: weights, Adam moments and step counts are the
    bytes they were, and forward and sampling give what they gave before."""
    tc = new_client(sc, mint_local_server)
    tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
    tc.optim_step(mint.AdamParams(learning_rate=1e-2)).result()  # moments exist: they must survive too
    before_lp = finite_logprobs(tc, tokens)
    before_sample = seeded_sample(tc, tokens)
    before_state = saved_state(mint_local_server.state_dir, tc, "before-absurd-lr")
    for i, lr in enumerate((1e20, 1e30, 1e37)):
        tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
        refused(
            lambda lr=lr: tc.optim_step(mint.AdamParams(learning_rate=lr)),
            "undone", "exactly as before", "learning rate",
            errors=(mint.RequestFailedError,),
        )  # fmt: skip
        assert torch.equal(finite_logprobs(tc, tokens), before_lp), lr
        tokens_now, logprobs_now = seeded_sample(tc, tokens)
        assert (tokens_now, logprobs_now) == before_sample, lr
        assert all(math.isfinite(x) for seq in logprobs_now for x in seq)
        adapter, optimizer = saved_state(mint_local_server.state_dir, tc, f"after-absurd-lr-{i}")
        assert adapter == before_state[0], lr
        assert optimizer["steps"] == before_state[1]["steps"]
        for key in ("exp_avg", "exp_avg_sq"):
            for now, then in zip(optimizer["optimizer"][key], before_state[1]["optimizer"][key], strict=True):
                assert torch.equal(now, then), (lr, key)
    # inf and NaN never reach the step (the SDK cannot send them; raw JSON can).
    for bad in (math.inf, math.nan):
        response = post_raw(http, "/api/v1/optim_step", {"model_id": tc.model_id, "adam_params": {"learning_rate": bad}})
        assert response.status_code == 400 and "finite" in response.text, response.text
    assert torch.equal(finite_logprobs(tc, tokens), before_lp)
    # The refused gradients were cleared, and the model trains on normally.
    tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
    tc.optim_step(mint.AdamParams(learning_rate=1e-2)).result()
    assert finite_logprobs(tc, tokens).sum() > before_lp.sum()


def test_a_temperature_below_the_floor_is_refused_and_never_gives_nan(sc, mint_local_server):
    from mint_local.service import MIN_TEMPERATURE

    sampler = sc.create_sampling_client(base_model=mint_local_server.model_name)
    prompt = mint.ModelInput.from_ints([5, 6, 7, 8])
    for tiny in (1e-45, 1e-38, 1e-20, MIN_TEMPERATURE / 2):
        refused(
            lambda t=tiny: sampler.sample(prompt, 2, mint.SamplingParams(max_tokens=3, temperature=t)),
            f"floor of {MIN_TEMPERATURE:g}", "temperature=0 for greedy",
        )  # fmt: skip
    for ok in (0.0, MIN_TEMPERATURE, 0.7):
        out = sampler.sample(prompt, 2, mint.SamplingParams(max_tokens=3, temperature=ok, seed=1, stop=[])).result()
        assert all(math.isfinite(x) for s in out.sequences for x in s.logprobs), (ok, out)


def test_topk_prompt_logprobs_are_bounded_by_the_response_they_make(sc, mint_local_server, tokens):
    """8,000 prompt tokens x top-2,000 built a 398 MB response; the product is bounded up front."""
    from mint_local.service import MAX_TOPK_PROMPT_ENTRIES

    sampler = sc.create_sampling_client(base_model=mint_local_server.model_name)
    long_prompt = mint.ModelInput.from_ints([(7 * i) % 1000 + 10 for i in range(8000)])
    refused(
        lambda: sampler.sample(long_prompt, 1, mint.SamplingParams(max_tokens=1), include_prompt_logprobs=True, topk_prompt_logprobs=2000),
        f"at most {MAX_TOPK_PROMPT_ENTRIES:,}", "lower topk_prompt_logprobs (at most 32 for this prompt)",
    )  # fmt: skip
    out = sampler.sample(
        mint.ModelInput.from_ints(tokens[:25]), 1, mint.SamplingParams(max_tokens=1), include_prompt_logprobs=True, topk_prompt_logprobs=5
    ).result()
    assert out.topk_prompt_logprobs[0] is None and all(len(row) == 5 for row in out.topk_prompt_logprobs[1:])


def test_interpolate_is_bounded_in_sources_and_in_the_rank_it_writes(sc, mint_local_server):
    import mint.mint as mintx

    from mint_local.service import MAX_INTERPOLATE_RANK, MAX_INTERPOLATE_SOURCES

    tc = new_client(sc, mint_local_server)  # rank 4
    path = tc.save_weights_for_sampler("interp-bound").result().path
    runs = mint_local_server.state_dir / "runs"

    def written() -> list[str]:  # interpolations under their default name, interp-<date>-<time>
        return sorted(str(p) for p in runs.glob("*/sampler_weights/interp-2*"))

    written_before = written()
    # 4,000 sources in a 0.2 MB request wrote 255 MB.
    with pytest.raises(Exception, match=f"at most {MAX_INTERPOLATE_SOURCES} per call") as info:
        mintx.interpolate_checkpoints(sc, source_paths=[path] * 4000, coefficients=[1 / 4000] * 4000)
    assert "mint-local: " in str(info.value)
    wide = sc.create_lora_training_client(base_model=mint_local_server.model_name, rank=40, seed=0)
    wide_path = wide.save_weights_for_sampler("interp-wide").result().path
    n = MAX_INTERPOLATE_RANK // 40 + 1  # within the source count, past the rank
    with pytest.raises(Exception, match=f"rank {40 * n:,}"):
        mintx.interpolate_checkpoints(sc, source_paths=[wide_path] * n, coefficients=[1 / n] * n)
    assert written() == written_before  # refused before anything was written
    ok = mintx.interpolate_checkpoints(sc, source_paths=[path, path], coefficients=[0.5, 0.5], output_path="interp-ok")
    assert ok.path.endswith("/sampler_weights/interp-ok")


def server_log(server) -> str:
    return server.log_path.read_text(encoding="utf-8", errors="replace")


def test_bad_request_shapes_are_a_400_without_a_traceback(http, sc, mint_local_server, tokens):
    """Deep JSON and impossible tensor shapes reached json/torch and answered with a traceback on
    the server's stderr (the answer was a 400 "internal error")."""
    tracebacks_before = server_log(mint_local_server).count("Traceback")
    tc = new_client(sc, mint_local_server)
    n = len(tokens) - 1

    def forward_with(targets: dict) -> httpx.Response:
        datum = raw_datum(tokens, weights=[1.0] * n)
        datum["loss_fn_inputs"]["target_tokens"] = targets
        return post_raw(http, "/api/v1/forward", {"model_id": tc.model_id, "forward_input": {"data": [datum], "loss_fn": "cross_entropy"}})

    deep_metadata = {"tags": [], "user_metadata": json.loads("{\"a\":" * 200 + "1" + "}" * 200)}
    cases = [
        (http.post("/api/v1/create_session", content="[" * 100_000 + "]" * 100_000), "nested too deeply"),
        (http.post("/api/v1/create_session", content='{"tags": ' + "[" * 50_000 + "]" * 50_000 + "}"), "nested too deeply"),
        (post_raw(http, "/api/v1/create_session", deep_metadata), "nests more than 32 levels"),
        (forward_with({"data": tokens[1:3], "dtype": "int64", "shape": [-1, -2]}), "greater than or equal to 0"),
        (forward_with({"data": tokens[1:], "dtype": "int64", "shape": [-n]}), "greater than or equal to 0"),
        (forward_with({"data": [], "dtype": "int64", "shape": [2**40, 0]}), "less than or equal to"),
        (forward_with({"data": tokens[1:], "dtype": "int64", "shape": [n] + [1] * 20}), "at most 8"),
    ]
    for response, message in cases:
        assert response.status_code == 400 and message in response.text, response.text
        assert "internal error" not in response.text, response.text
    assert server_log(mint_local_server).count("Traceback") == tracebacks_before
    finite_logprobs(tc, tokens)  # and the server serves on


def sessionless_sample(http, server, num_samples: int = 64, max_tokens: int = 2000) -> str:
    """A sampling request with no session behind it (what raw HTTP clients send): its request_id."""
    body = {
        "base_model": server.model_name,
        "prompt": {"chunks": [{"type": "encoded_text", "tokens": list(range(20, 30))}]},
        "num_samples": num_samples,
        "sampling_params": {"max_tokens": max_tokens, "stop": []},
    }
    response = http.post("/api/v1/asample", json=body)
    assert response.status_code == 200, response.text
    return response.json()["request_id"]


def wait_for_log(server, text: str, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while text not in server_log(server) and time.monotonic() < deadline:
        time.sleep(0.2)
    return text in server_log(server)


def test_a_sessionless_sample_whose_client_went_away_is_dropped(http, mint_local_server):
    """A client sends a long sample without a session, polls once and goes away: there is no
    heartbeat to miss, so its closed poll is the sign; the request is stopped 2 s later (it ran
    to the end, 122 s in the issue's case, before)."""
    request_id = sessionless_sample(http, mint_local_server)
    with pytest.raises(httpx.ReadTimeout):  # the client gives up on its poll: the connection closes
        http.post("/api/v1/retrieve_future", json={"request_id": request_id}, timeout=1)
    assert wait_for_log(mint_local_server, f"stopped {request_id}: cancelled: nobody polls {request_id} any more")
    result = http.post("/api/v1/retrieve_future", json={"request_id": request_id}).json()
    assert result["category"] == "user" and "closed the connection" in result["error"], result


def test_a_sessionless_sample_nobody_polls_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("MINT_LOCAL_SESSION_TIMEOUT_S", "2")
    with LocalServer.start(model="tiny", device="cpu", state_dir=tmp_path / "state") as server:
        with httpx.Client(base_url=server.base_url, headers={"X-API-Key": TEST_API_KEY}, timeout=60) as http:
            request_id = sessionless_sample(http, server)
            assert wait_for_log(server, f"stopped {request_id}: cancelled: nobody polled {request_id} for 2 s")
            result = http.post("/api/v1/retrieve_future", json={"request_id": request_id}).json()
        assert result["category"] == "user" and "nobody polled" in result["error"], result


def test_a_sampling_request_stops_at_its_wall_clock_budget_and_says_so(tmp_path, monkeypatch):
    """max_tokens bounds the tokens; MINT_LOCAL_SAMPLE_BUDGET_S bounds the time (64 x 2,000 tokens
    takes minutes on a loaded CPU). The SDK sees a failed request that names the budget."""
    monkeypatch.setenv("MINT_LOCAL_SAMPLE_BUDGET_S", "3")
    with LocalServer.start(model="tiny", device="cpu", state_dir=tmp_path / "state") as server:
        sc = mint.ServiceClient(base_url=server.base_url, api_key=TEST_API_KEY)
        try:
            sampler = sc.create_sampling_client(base_model=server.model_name)
            prompt = mint.ModelInput.from_ints(list(range(20, 30)))
            refused(
                lambda: sampler.sample(prompt, 64, mint.SamplingParams(max_tokens=2000, stop=[])),
                "stopped after 3 s", "MINT_LOCAL_SAMPLE_BUDGET_S", "lower max_tokens or num_samples",
                errors=(mint.RequestFailedError,),
            )  # fmt: skip
            # A request that fits its budget is served as ever.
            out = sampler.sample(prompt, 2, mint.SamplingParams(max_tokens=5, stop=[], seed=0)).result()
            assert [len(s.tokens) for s in out.sequences] == [5, 5]
        finally:
            sc.holder.close()
