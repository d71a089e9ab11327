"""mint-local's HTTP surface: auth handshake, errors, ordering, REST, MinT extensions, CLI."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import tarfile
import threading
import time

import httpx
import mint
import mint.mint as mintx
import numpy as np
import pytest
import torch

from mint_local.launcher import LocalServer, LocalServerError
from mint_local.testing import TEST_API_KEY, ce_datum, checkpoint_dir, logprobs_of, reference_model


def new_client(sc, server, rank=4, seed=0, **kwargs):
    return sc.create_lora_training_client(base_model=server.model_name, rank=rank, seed=seed, **kwargs)


def result_of(http, submitted: dict) -> dict:
    return http.post("/api/v1/retrieve_future", json={"request_id": submitted["request_id"]}).json()


def test_client_config_advertises_jwt_for_sk_keys(http):
    config = http.post("/api/v1/client/config", json={"sdk_version": "0.22.0"}).json()
    assert config["pjwt_auth_enabled"] is True
    jwt = http.post("/api/v1/auth/token", json={}).json()["jwt"]
    assert jwt.startswith("eyJ")
    payload = json.loads(base64.urlsafe_b64decode(jwt.split(".")[1] + "=="))
    assert payload["exp"] > time.time() + 3600
    assert http.get("/api/v1/healthz").json() == {"status": "ok"}


@pytest.mark.slow
def test_plain_import_mint_script_runs_unchanged(mint_env, tmp_path):
    """SFT, GRPO with each built-in loss, DPO via forward_backward_custom, save/resume, sampling."""
    script = tmp_path / "train.py"
    script.write_text(
        f"""
import os, mint, torch
sc = mint.ServiceClient()
tc = sc.create_lora_training_client(base_model={mint_env.model_name!r}, rank=4)
tok = tc.get_tokenizer()
def chat(messages, **kw):
    return tok.encode(tok.apply_chat_template(messages, tokenize=False, **kw))
ids = chat([{{"role": "user", "content": "2+2?"}}, {{"role": "assistant", "content": "#### 4"}}])
sft = mint.Datum(model_input=mint.ModelInput.from_ints(ids[:-1]), loss_fn_inputs={{"target_tokens": ids[1:], "weights": [1.0] * (len(ids) - 1)}})
for step in range(2):
    fb = tc.forward_backward([sft], "cross_entropy"); tc.optim_step(mint.AdamParams(learning_rate=1e-3))
    print("METRIC step=%d loss=%.4f" % (step, fb.result().metrics["loss:sum"]))
sampler = tc.save_weights_and_get_sampling_client()
prompt = mint.ModelInput.from_ints(chat([{{"role": "user", "content": "2+2?"}}], add_generation_prompt=True))
seqs = sampler.sample(prompt=prompt, num_samples=4, sampling_params=mint.SamplingParams(max_tokens=6, stop=[tok.eos_token_id])).result().sequences
for loss in ["importance_sampling", "ppo", "cispo", "dro"]:
    data = []
    for i, s in enumerate(seqs):
        ob = prompt.length - 1
        data.append(mint.Datum(model_input=prompt.append(mint.EncodedTextChunk(tokens=s.tokens[:-1])),
            loss_fn_inputs={{"target_tokens": [0] * ob + s.tokens, "logprobs": [0.0] * ob + s.logprobs,
                            "advantages": [0.0] * ob + [i - 1.5] * len(s.tokens)}}))
    out = tc.forward_backward(data, loss).result(); tc.optim_step(mint.AdamParams(learning_rate=1e-3)).result()
    print("GRPO", loss, out.metrics["loss:sum"])
def dpo(data, lps):
    return -torch.nn.functional.logsigmoid(lps[0].sum() - lps[1].sum()), {{}}
tc.forward_backward_custom([sft, sft], dpo).result()
path = tc.save_state("final").result().path
tc2 = sc.create_lora_training_client(base_model={mint_env.model_name!r}, rank=4)
tc2.load_state_with_optimizer(path).result()
print("RESUMED", path)
"""
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("METRIC step=") == 2
    assert proc.stdout.count("GRPO ") == 4
    assert "RESUMED tinker://" in proc.stdout


# --- bad input: a 4xx the SDK raises at once, and the server keeps serving --------------------


def test_sdk_shows_clear_errors_for_bad_training_input(sc, mint_local_server, tokens):
    tc = new_client(sc, mint_local_server)
    n = len(tokens) - 1
    good = ce_datum(tokens)
    cases = [
        (lambda: tc.forward_backward([good], "dpo"), "unknown loss_fn 'dpo'"),
        (lambda: tc.forward_backward([good], "ppo", {"epsilon": 0.2}), "loss_fn_config keys \\['epsilon'\\]"),
        (
            lambda: tc.forward_backward(
                [mint.Datum(model_input=good.model_input, loss_fn_inputs={"target_tokens": tokens[1:]})],
                "cross_entropy",
            ),
            "missing \\['weights'\\]",
        ),
        (
            lambda: tc.forward_backward(
                [
                    mint.Datum(
                        model_input=good.model_input,
                        loss_fn_inputs={**good.loss_fn_inputs, "mask": np.ones(n, dtype=np.float32)},
                    )
                ],
                "cross_entropy",
            ),
            "\\['mask'\\] are not used",
        ),
        (
            lambda: tc.forward_backward([ce_datum(tokens, [1.0] * (n - 2))], "cross_entropy"),
            f"has shape \\[{n - 2}\\]",
        ),
        (
            lambda: tc.forward_backward(
                [
                    mint.Datum(
                        model_input=mint.ModelInput.from_ints([10**6]),
                        loss_fn_inputs={"target_tokens": [1], "weights": [1.0]},
                    )
                ],
                "cross_entropy",
            ),
            "outside the model's vocabulary",
        ),
        (lambda: tc.forward_backward([good], "importance_sampling"), "missing \\['logprobs', 'advantages'\\]"),
        (lambda: tc.optim_step(mint.AdamParams(learning_rate=-1.0)), "learning_rate must be >= 0"),
        (lambda: tc.save_state("bad/name"), "invalid save_state name"),
        (lambda: tc.load_state("tinker://run-missing/weights/x"), "does not exist"),
        (lambda: tc.load_state("gs://bucket/ckpt"), "not a checkpoint path"),
    ]
    for call, message in cases:
        started = time.monotonic()
        with pytest.raises((mint.BadRequestError, mint.NotFoundError), match="mint-local: .*" + message):
            call().result()
        assert time.monotonic() - started < 20, message  # at once: tinker would retry a 5xx for minutes
    # The training client still works after every rejection, at once: a rejected request's
    # seq_id is used up, so later requests do not wait for it.
    started = time.monotonic()
    out = tc.forward_backward([good], "cross_entropy").result()
    assert out.metrics["loss:sum"] > 0 and time.monotonic() - started < 20


def test_sampler_path_where_training_path_is_needed(sc, mint_local_server):
    tc = new_client(sc, mint_local_server)
    sampler_path = tc.save_weights_for_sampler("only-weights").result().path
    with pytest.raises(mint.BadRequestError, match="is a sampler checkpoint"):
        tc.load_state_with_optimizer(sampler_path).result()
    with pytest.raises(mint.BadRequestError, match="rank=2.*this training client has rank=4"):
        training_path = new_client(sc, mint_local_server, rank=2).save_state("rank-two").result().path
        tc.load_state(training_path).result()
    with pytest.raises(mint.BadRequestError, match="already exists"):
        tc.save_state("dup").result()
        tc.save_state("dup").result()
    assert tc.save_state("dup", overwrite=True).result().path.endswith("/weights/dup")


def test_unknown_base_model_lists_the_served_one(sc, mint_local_server):
    with pytest.raises(mint.BadRequestError, match=f"serves '{mint_local_server.model_name}'"):
        sc.create_lora_training_client(base_model="Qwen/Qwen3-8B", rank=4)
    with pytest.raises(mint.BadRequestError, match="not served here"):
        sc.create_sampling_client(base_model="meta-llama/Llama-3.1-8B").sample(
            prompt=mint.ModelInput.from_ints([1, 2]), num_samples=1, sampling_params=mint.SamplingParams(max_tokens=1)
        ).result()


def test_raw_http_errors_are_4xx_and_server_survives(http, mint_local_server, sc, tokens):
    model_id = new_client(sc, mint_local_server).model_id
    datum = json.loads(
        json.dumps(
            {
                "model_input": {"chunks": [{"type": "encoded_text", "tokens": tokens[:-1]}]},
                "loss_fn_inputs": {
                    "target_tokens": {"data": tokens[1:], "dtype": "int64"},
                    "weights": {"data": [1.0] * (len(tokens) - 1), "dtype": "float32"},
                },
            }
        )
    )
    fb = "/api/v1/forward_backward"
    cases = [
        (http.post(fb, content=b"{not json"), 400, "malformed JSON"),
        (http.post(fb, json=[1, 2]), 400, "expects a JSON object"),
        (http.post(fb, json={"model_id": model_id}), 400, "forward_backward_input"),
        (
            http.post(
                fb,
                json={"model_id": "run-nope", "forward_backward_input": {"data": [datum], "loss_fn": "cross_entropy"}},
            ),
            404,
            "unknown model_id",
        ),
        (
            http.post(
                fb, json={"model_id": model_id, "forward_backward_input": {"data": [], "loss_fn": "cross_entropy"}}
            ),
            400,
            "data is empty",
        ),
        (
            http.post(
                fb,
                json={
                    "model_id": model_id,
                    "forward_backward_input": {
                        "data": [
                            {**datum, "model_input": {"chunks": [{"type": "image", "data": "", "format": "png"}]}}
                        ],
                        "loss_fn": "cross_entropy",
                    },
                },
            ),
            400,
            "not supported",
        ),
        (http.post("/api/v1/retrieve_future", json={"request_id": "req-999999"}), 404, "unknown request_id"),
        (http.post("/api/v1/create_session", json={"tags": "x"}), 400, "tags"),
        (http.post("/api/v1/session_heartbeat", json={"session_id": "nope"}), 404, "unknown session"),
        (http.get("/api/v1/no_such_route"), 404, "not part of the API"),
        (http.get("/api/v1/training_runs/run-nope"), 404, "unknown training run"),
        (http.post("/api/v1/weights_info", json={"tinker_path": "tinker://run-nope/weights/x"}), 404, "does not exist"),
    ]
    for response, status, text in cases:
        assert response.status_code == status, (text, response.text)
        assert response.text.startswith("mint-local: ") and text in response.text
    assert http.get("/api/v1/healthz").status_code == 200
    ok = http.post(
        fb, json={"model_id": model_id, "forward_backward_input": {"data": [datum], "loss_fn": "cross_entropy"}}
    )
    assert "loss:sum" in result_of(http, ok.json())["metrics"]


def test_seq_id_order_is_honoured_and_retries_are_idempotent(http, mint_local_server, sc, tokens):
    model_id = new_client(sc, mint_local_server).model_id
    datum = {
        "model_input": {"chunks": [{"type": "encoded_text", "tokens": tokens[:-1]}]},
        "loss_fn_inputs": {
            "target_tokens": {"data": tokens[1:], "dtype": "int64"},
            "weights": {"data": [1.0] * (len(tokens) - 1), "dtype": "float32"},
        },
    }
    # optim_step (seq 2) arrives first; it must wait for forward_backward (seq 1) and see its gradients.
    step = http.post(
        "/api/v1/optim_step", json={"model_id": model_id, "seq_id": 2, "adam_params": {"learning_rate": 0.0}}
    ).json()
    fwd = {"model_id": model_id, "seq_id": 1, "forward_backward_input": {"data": [datum], "loss_fn": "cross_entropy"}}
    first = http.post("/api/v1/forward_backward", json=fwd).json()
    again = http.post("/api/v1/forward_backward", json=fwd).json()
    assert again["request_id"] == first["request_id"]
    assert result_of(http, step)["metrics"]["grad_norm:mean"] > 0
    assert "loss:sum" in result_of(http, first)["metrics"]


def test_failure_at_run_time_is_a_failed_future_with_the_reason(http, sc, mint_local_server, tokens):
    """A request that passed validation but cannot run (its model was unloaded before its turn)."""
    tc = new_client(sc, mint_local_server)
    tc.get_info()
    unload_seq = tc._request_id_counter + 1  # the training client's next seq_id (tinker numbers them from 1)
    datum = {
        "model_input": {"chunks": [{"type": "encoded_text", "tokens": tokens[:-1]}]},
        "loss_fn_inputs": {
            "target_tokens": {"data": tokens[1:], "dtype": "int64"},
            "weights": {"data": [1.0] * (len(tokens) - 1), "dtype": "float32"},
        },
    }
    # The forward arrives first, so it is validated while the model exists; its seq_id puts it
    # behind the unload, so it runs after the model is gone.
    late = http.post(
        "/api/v1/forward",
        json={"model_id": tc.model_id, "seq_id": unload_seq + 1, "forward_input": {"data": [datum], "loss_fn": "cross_entropy"}},
    ).json()
    unload = http.post("/api/v1/unload_model", json={"model_id": tc.model_id, "seq_id": unload_seq}).json()
    assert result_of(http, unload)["model_id"] == tc.model_id
    failed = result_of(http, late)
    assert failed["category"] == "user" and "not loaded" in failed["error"]


def test_unload_model(http, sc, mint_local_server):
    model_id = new_client(sc, mint_local_server).model_id
    done = result_of(http, http.post("/api/v1/unload_model", json={"model_id": model_id}).json())
    assert done["model_id"] == model_id
    response = http.post("/api/v1/get_info", json={"model_id": model_id})
    assert response.status_code == 404 and "not loaded" in response.text


# --- several clients at once ------------------------------------------------------------------


def test_concurrent_clients_do_not_interfere(mint_local_server, tokens):
    data = [ce_datum(tokens)]

    def train(seed: int, steps: int, out: dict) -> None:
        client = mint.ServiceClient(base_url=mint_local_server.base_url, api_key=TEST_API_KEY)
        tc = new_client(client, mint_local_server, seed=seed)
        for _ in range(steps):
            tc.forward_backward(data, "cross_entropy")
            tc.optim_step(mint.AdamParams(learning_rate=1e-2))
        out[seed] = logprobs_of(tc.forward(data, "cross_entropy").result())

    alone: dict = {}
    train(31, 4, alone)
    together: dict = {}
    threads = [threading.Thread(target=train, args=(seed, 4, together)) for seed in (31, 32, 33)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert set(together) == {31, 32, 33}
    assert torch.equal(together[31], alone[31])
    assert not torch.equal(together[31], together[32])


# --- REST: runs, checkpoints, sessions ---------------------------------------------------------


def test_rest_client_runs_checkpoints_and_archive(sc, mint_local_server, tokens, tmp_path):
    tc = new_client(sc, mint_local_server, rank=3, train_mlp=False)
    tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
    tc.optim_step(mint.AdamParams(learning_rate=5e-2)).result()
    state = tc.save_state("rest-state").result().path
    sampler = tc.save_weights_for_sampler("rest-sampler").result().path
    rest = sc.create_rest_client()
    run = rest.get_training_run(tc.model_id).result()
    assert run.base_model == mint_local_server.model_name and run.lora_rank == 3 and run.is_lora
    assert run.last_checkpoint.tinker_path == state and run.last_sampler_checkpoint.tinker_path == sampler
    assert tc.model_id in [r.training_run_id for r in rest.list_training_runs(limit=100).result().training_runs]
    listed = rest.list_checkpoints(tc.model_id).result().checkpoints
    assert {c.tinker_path for c in listed} == {state, sampler}
    assert {c.checkpoint_type for c in listed} == {"training", "sampler"}
    assert state in {c.tinker_path for c in rest.list_user_checkpoints(limit=1000).result().checkpoints}
    info = rest.get_weights_info_by_tinker_path(state).result()
    assert (info.base_model, info.lora_rank, info.train_mlp, info.train_attn) == (
        mint_local_server.model_name,
        3,
        False,
        True,
    )

    # The SDK's own archive call: mint-local answers 302 and tells the SDK (client config) to
    # use httpx's transport, which hands the redirect back instead of following it.
    archive = rest.get_checkpoint_archive_url_from_tinker_path(state).result()
    assert archive.url.endswith(".tar.gz") and archive.expires is not None
    download = httpx.get(archive.url, timeout=30)
    assert download.status_code == 200 and download.headers["content-type"] == "application/gzip"
    with tarfile.open(fileobj=io.BytesIO(download.content), mode="r:gz") as tar:
        names = set(tar.getnames())
        tar.extractall(tmp_path / "adapter", filter="data")
    assert {"adapter_model.safetensors", "adapter_config.json", "optimizer.pt"} <= names
    # Unpacked, it is a PEFT adapter folder: peft loads it onto the base model and scores the
    # text as the server does.
    from peft import PeftModel

    info = tc.get_info()
    model = PeftModel.from_pretrained(reference_model.__wrapped__(info.model_data.tokenizer_id), str(tmp_path / "adapter"))
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([tokens[:-1]])).logits[0].double()
    peft_logprobs = torch.log_softmax(logits, -1).gather(-1, torch.tensor(tokens[1:])[:, None]).squeeze(-1)
    served = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
    assert torch.allclose(peft_logprobs, served, atol=1e-5)

    rest.delete_checkpoint_from_tinker_path(sampler).result()
    assert [c.tinker_path for c in rest.list_checkpoints(tc.model_id).result().checkpoints] == [state]
    session_id = sc.holder.get_session_id()
    assert session_id in rest.list_sessions(limit=1000).result().sessions
    assert tc.model_id in rest.get_session(session_id).result().training_run_ids


# --- MinT extensions ---------------------------------------------------------------------------


def _student_logits(server, model_dir: str, path: str, tokens: list[int]) -> torch.Tensor:
    from peft import PeftModel

    base = reference_model.__wrapped__(model_dir)
    model = PeftModel.from_pretrained(base, str(checkpoint_dir(server.state_dir, path)))
    with torch.no_grad():
        return model(input_ids=torch.tensor([tokens])).logits[0].double()


def test_forward_backward_reverse_kl_matches_direct_kl(sc, mint_local_server, tokens):
    tc = new_client(sc, mint_local_server, rank=4, seed=3)
    for _ in range(3):
        tc.forward_backward([ce_datum(tokens)], "cross_entropy")
        tc.optim_step(mint.AdamParams(learning_rate=2e-2))
    student_path = tc.save_state("kl-student").result().path
    model_dir = tc.get_info().model_data.tokenizer_id
    student_tokens, n = tokens[:20], 20
    prefix = tokens[30:34]
    datum = mintx.ReverseKLDatum(
        student_input=mint.ModelInput.from_ints(student_tokens),
        reference_input=mint.ModelInput.from_ints(prefix + student_tokens),  # longer: right-aligned
        target_tokens=mint.TensorData(data=tokens[1:21], dtype="int64", shape=[n]),
        weights=mint.TensorData(data=[0.0] * 5 + [1.0] * 15, dtype="float32", shape=[n]),
    )
    out = mintx.forward_backward_reverse_kl(
        tc, reference_model_path=mint_local_server.model_name, data=[datum], temperature=1.5
    )

    student = torch.log_softmax(_student_logits(mint_local_server, model_dir, student_path, student_tokens) / 1.5, -1)
    base = reference_model(model_dir)
    with torch.no_grad():
        ref_logits = base(input_ids=torch.tensor([prefix + student_tokens])).logits[0].double()[len(prefix) :]
    reference = torch.log_softmax(ref_logits / 1.5, -1)
    kl = (student.exp() * (student - reference)).sum(-1) * torch.tensor([0.0] * 5 + [1.0] * 15, dtype=torch.float64)
    assert torch.allclose(torch.tensor(out.outputs[0].loss.data, dtype=torch.float64), kl, atol=1e-5)
    assert out.metrics["loss:sum"] == pytest.approx(float(kl.sum()), rel=1e-4)

    # Against a snapshot of its own weights the KL is zero; steps toward the base model shrink it.
    own = tc.save_weights_for_sampler("kl-self").result().path
    tc.optim_step(mint.AdamParams(learning_rate=0.0)).result()  # drop the gradients of the call above
    self_datum = datum.model_copy(update={"reference_input": datum.student_input})
    same = mintx.forward_backward_reverse_kl(tc, reference_model_path=own, data=[self_datum])
    assert same.metrics["loss:sum"] == pytest.approx(0.0, abs=1e-5)
    losses = []
    for _ in range(5):
        r = mintx.forward_backward_reverse_kl(tc, reference_model_path=mint_local_server.model_name, data=[datum])
        losses.append(r.metrics["loss:sum"])
        tc.optim_step(mint.AdamParams(learning_rate=2e-2)).result()
    assert losses[-1] < losses[0]


def test_interpolate_checkpoints(sc, mint_local_server, tokens):
    tc = new_client(sc, mint_local_server, rank=2, seed=8)
    a = tc.save_weights_for_sampler("interp-a").result().path
    for _ in range(3):
        tc.forward_backward([ce_datum(tokens)], "cross_entropy")
        tc.optim_step(mint.AdamParams(learning_rate=3e-2))
    b = tc.save_weights_for_sampler("interp-b").result().path
    prompt = mint.ModelInput.from_ints(tokens[:25])

    def lps(path):
        return torch.tensor(sc.create_sampling_client(model_path=path).compute_logprobs(prompt).result()[1:])

    only_a = mintx.interpolate_checkpoints(sc, source_paths=[a, b], coefficients=[1.0, 0.0], output_path="only-a")
    assert only_a.path.endswith("/sampler_weights/only-a") and only_a.coefficients == [1.0, 0.0]
    only_b = mintx.interpolate_checkpoints(sc, source_paths=[a, b], coefficients=[0.0, 1.0])
    mid = mintx.interpolate_checkpoints(sc, source_paths=[a, b], coefficients=[0.5, 0.5], output_path="mid")
    assert torch.allclose(lps(only_a.path), lps(a), atol=1e-5)
    assert torch.allclose(lps(only_b.path), lps(b), atol=1e-5)
    m = lps(mid.path)
    assert not torch.allclose(m, lps(a), atol=1e-4) and not torch.allclose(m, lps(b), atol=1e-4)
    with pytest.raises(Exception, match="2 source_paths but 1 coefficients"):
        mintx.interpolate_checkpoints(sc, source_paths=[a, b], coefficients=[1.0])


# --- restart, --serve-any-model, CLI ----------------------------------------------------------


@pytest.mark.slow
def test_checkpoints_survive_restart_and_serve_any_model(sc, mint_local_server, tokens):
    """A second server on the same state dir, loading the tiny model as a plain HF folder."""
    tc = new_client(sc, mint_local_server, rank=4, seed=5)
    tc.forward_backward([ce_datum(tokens)], "cross_entropy")
    tc.optim_step(mint.AdamParams(learning_rate=1e-2)).result()
    path = tc.save_state("survives").result().path
    expected = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
    model_dir = tc.get_info().model_data.tokenizer_id

    with LocalServer.start(
        model=model_dir, device="cpu", state_dir=mint_local_server.state_dir, serve_any_model=True
    ) as second:
        assert second.model_name == model_dir  # a local folder is served under its path
        other = mint.ServiceClient(base_url=second.base_url, api_key=TEST_API_KEY)
        rest = other.create_rest_client()
        assert path in {c.tinker_path for c in rest.list_checkpoints(tc.model_id).result().checkpoints}
        resumed = other.create_lora_training_client(base_model="Qwen/Qwen3-4B-Instruct-2507", rank=4)
        assert resumed.get_info().model_data.model_name == second.model_name
        resumed.load_state_with_optimizer(path).result()
        assert torch.equal(logprobs_of(resumed.forward([ce_datum(tokens)], "cross_entropy").result()), expected)
        log = second.log_path.read_text()
        other.holder.close()  # stop its heartbeat before this server goes away
    assert "--serve-any-model" in log and "Qwen/Qwen3-4B-Instruct-2507" in log


def test_cli_refuses_remote_bind_and_bad_model(tmp_path):
    remote = subprocess.run(
        [sys.executable, "-m", "mint_local", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert remote.returncode == 2 and "--allow-remote" in remote.stderr
    with pytest.raises(LocalServerError, match="neither a tiny variant"):
        LocalServer.start(model=str(tmp_path / "no-such-model"), timeout_s=60)


def test_the_sdks_calls_skip_starlettes_routing_and_run_on_the_fast_http_stack(mint_local_server, http):
    """Each sample is two HTTP requests (asample, retrieve_future): every parameterless route is
    answered through one dict lookup, paths with parameters and unknown ones still through
    Starlette, and the server runs on httptools and uvloop wherever they are installed."""
    import importlib.util

    from mint_local.app import ROUTES, create_app

    app = create_app(engine=None, worker=None)  # type: ignore[arg-type]  # nothing runs before the lifespan starts
    assert {("POST", "/api/v1/asample"), ("POST", "/api/v1/retrieve_future"), ("POST", "/api/v1/forward_backward")} <= set(app.exact)
    assert set(app.exact) == {(method, path) for method, path, _ in ROUTES if "{" not in path}
    # The same answers either way: a fast path's error, a parameterised path, an unknown one.
    bad = http.post(f"{mint_local_server.base_url}/api/v1/asample", content=b"{not json")
    assert bad.status_code == 400 and bad.text.startswith("mint-local: malformed JSON body for /api/v1/asample")
    assert http.get(f"{mint_local_server.base_url}/api/v1/training_runs/nope").status_code == 404
    unknown = http.post(f"{mint_local_server.base_url}/api/v1/nothing_here", json={})
    assert unknown.status_code == 404 and "is not part of the API mint-local serves" in unknown.text
    log = mint_local_server.log_path.read_text()
    parser = "httptools" if importlib.util.find_spec("httptools") else "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    assert f"HTTP: uvicorn's {parser} parser on {loop}'s event loop" in log
