"""mint-local parts tested directly: loss formulas, the tiny model builder, input checks, ordering."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys

import pytest
import torch

from mint_local import losses
from mint_local import protocol as p
from mint_local.cli import is_loopback
from mint_local.errors import UserError
from mint_local.futures import SeqGate
from mint_local.inputs import prepare_batch


def _grad(fn, lp, inputs, config):
    lp = lp.clone().requires_grad_(True)
    fn(lp, inputs, config).sum().backward()
    return lp.grad


def test_loss_gradients_match_their_closed_forms():
    torch.manual_seed(0)
    lp = -torch.rand(50, dtype=torch.float64) * 3
    old = lp + torch.randn(50, dtype=torch.float64) * 0.5
    adv = torch.randn(50, dtype=torch.float64)
    inputs = {"logprobs": old, "advantages": adv}
    ratio = torch.exp(lp - old)

    assert torch.allclose(_grad(losses.importance_sampling, lp, inputs, {}), -ratio * adv)
    cfg = {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
    clipped = ((adv > 0) & (ratio > 1.2)) | ((adv < 0) & (ratio < 0.8))
    expected = torch.where(clipped, torch.zeros_like(lp), -ratio * adv)
    assert torch.allclose(_grad(losses.ppo, lp, inputs, cfg), expected)
    cfg = {"clip_low_threshold": 0.5, "clip_high_threshold": 1.5}
    assert torch.allclose(_grad(losses.cispo, lp, inputs, cfg), -ratio.clamp(0.5, 1.5) * adv)
    assert torch.allclose(_grad(losses.dro, lp, inputs, {"beta": 0.7}), -(adv - 0.7 * (lp - old)))
    w = torch.rand(50, dtype=torch.float64)
    assert torch.allclose(_grad(losses.cross_entropy, lp, {"weights": w}, {}), -w)
    # Per-token thresholds in loss_fn_inputs override the config.
    per_token = {
        **inputs,
        "clip_low_threshold": torch.full((50,), 0.0, dtype=torch.float64),
        "clip_high_threshold": torch.full((50,), 100.0, dtype=torch.float64),
    }
    assert torch.allclose(losses.ppo(lp, per_token, cfg), -(ratio * adv))


def test_resolve_config_defaults_and_rejections():
    assert losses.resolve_config("ppo", None) == {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
    assert losses.resolve_config("ppo", {"clip_high_threshold": 1.5})["clip_high_threshold"] == 1.5
    assert losses.resolve_config("dro", {"beta": 0.1}) == {"beta": 0.1}
    with pytest.raises(UserError, match="unknown loss_fn 'grpo'.*forward_backward_custom"):
        losses.resolve_config("grpo", None)
    with pytest.raises(UserError, match="not used by 'cross_entropy'"):
        losses.resolve_config("cross_entropy", {"beta": 0.1})


def test_reverse_kl_is_the_full_vocabulary_kl():
    torch.manual_seed(1)
    s, r = torch.randn(4, 11), torch.randn(4, 11)
    ps, pr = torch.softmax(s / 2, -1), torch.softmax(r / 2, -1)
    expected = (ps * (ps.log() - pr.log())).sum(-1)
    assert torch.allclose(losses.reverse_kl(s, r, 2.0), expected, atol=1e-6)
    assert torch.allclose(losses.reverse_kl(s, s, 1.0), torch.zeros(4), atol=1e-6)


def _datum(tokens, **inputs):
    return {"model_input": {"chunks": [{"type": "encoded_text", "tokens": tokens}]}, "loss_fn_inputs": inputs}


def test_prepare_batch_decodes_sparse_two_dim_targets():
    targets = torch.tensor([[1, 0], [0, 3], [4, 5]])
    weights = torch.tensor([[0.5, 0.0], [0.0, 1.0], [0.25, 0.25]])
    csr_t, csr_w = targets.to_sparse_csr(), weights.to_sparse_csr()
    fbi = p.ForwardBackwardInput.model_validate(
        {
            "loss_fn": "cross_entropy",
            "data": [
                _datum(
                    [7, 8, 9],
                    target_tokens={
                        "data": csr_t.values().tolist(),
                        "dtype": "int64",
                        "shape": [3, 2],
                        "sparse_crow_indices": csr_t.crow_indices().tolist(),
                        "sparse_col_indices": csr_t.col_indices().tolist(),
                    },
                    weights={
                        "data": csr_w.values().tolist(),
                        "dtype": "float32",
                        "shape": [3, 2],
                        "sparse_crow_indices": csr_w.crow_indices().tolist(),
                        "sparse_col_indices": csr_w.col_indices().tolist(),
                    },
                )
            ],
        }
    )
    batch = prepare_batch(fbi, vocab_size=16, max_length=32)
    assert torch.equal(batch.data[0].targets, targets)
    assert torch.equal(batch.data[0].inputs["weights"], weights)


@pytest.mark.parametrize(
    "datum, message",
    [
        (
            _datum([], target_tokens={"data": [], "dtype": "int64"}, weights={"data": [], "dtype": "float32"}),
            "model_input is empty",
        ),
        (
            _datum(
                [1, 2],
                target_tokens={"data": [1.5, 2], "dtype": "float32"},
                weights={"data": [1, 1], "dtype": "float32"},
            ),
            "integer token ids",
        ),
        (
            _datum(
                [1, 2],
                target_tokens={"data": [1, 2], "dtype": "int64"},
                weights={"data": [1, float("nan")], "dtype": "float32"},
            ),
            "NaN",
        ),
        (
            _datum(
                [1, 2],
                target_tokens={"data": [1, 2, 3, 4], "dtype": "int64", "shape": [3]},
                weights={"data": [1, 1], "dtype": "float32"},
            ),
            "does not match",
        ),
        (
            _datum(
                [1, 2], target_tokens={"data": [1, 99], "dtype": "int64"}, weights={"data": [1, 1], "dtype": "float32"}
            ),
            "outside the vocabulary",
        ),
        (
            _datum(
                [1, 2],
                target_tokens={"data": [1, 2], "dtype": "int64"},
                weights={
                    "data": [1.0, 1.0],
                    "dtype": "float32",
                    "shape": [2, 2],
                    "sparse_crow_indices": [0, 5, 2],
                    "sparse_col_indices": [0, 9],
                },
            ),
            "invalid sparse tensor",
        ),
    ],
)
def test_prepare_batch_rejects_bad_datums(datum, message):
    fbi = p.ForwardBackwardInput.model_validate({"loss_fn": "cross_entropy", "data": [datum]})
    with pytest.raises(UserError, match=message):
        prepare_batch(fbi, vocab_size=16, max_length=32)


def test_seq_gate_releases_in_order_and_skips_a_lost_seq_id():
    async def scenario():
        released = []
        gate = SeqGate(asyncio.get_running_loop(), lambda rid, job: released.append(rid))
        gate.arrive(3, ("c", lambda: {}))
        gate.arrive(2, ("b", lambda: {}))
        assert released == []
        gate.arrive(1, ("a", lambda: {}))
        assert released == ["a", "b", "c"]
        assert gate.duplicate(2) == "b"
        gate.arrive(4, None)  # rejected request: its seq_id is used up
        gate.arrive(5, ("e", lambda: {}))
        assert released == ["a", "b", "c", "e"]
        gate.arrive(7, ("g", lambda: {}))  # seq 6 never comes
        gate._skip_gap()
        assert released[-1] == "g"

    asyncio.run(scenario())


def test_loopback_detection():
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.4", "::", "example.com"))


def test_tokenizer_build_is_deterministic_across_processes():
    code = "import hashlib; from mint_local.tiny_model import build_tokenizer_json; print(hashlib.sha256(build_tokenizer_json(2048).encode()).hexdigest())"
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(digests) == 1


def test_tiny_model_tokenizer_offline(mint_local_server, monkeypatch):
    """The served tiny model folder: chat template, EOS, English and digits, loads offline."""
    import json

    from transformers import AutoTokenizer

    from mint_local.tiny_model import EOS_TOKEN, model_dir

    folder = model_dir("tiny")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tok = AutoTokenizer.from_pretrained(str(folder))
    assert tok.eos_token == EOS_TOKEN and tok.eos_token_id is not None
    text = "Natalia sold 48 clips in April. How many clips did she sell? #### 72"
    ids = tok.encode(text)
    assert tok.decode(ids) == text and len(ids) < len(text)
    assert [tok.decode([i]) for i in tok.encode("#### 42")][-2:] == ["4", "2"]
    rendered = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert rendered == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    build = json.loads((folder / "mint_local_build.json").read_text())
    assert build["spec"]["name"] == "tiny-qwen3"


@pytest.mark.slow
def test_tiny_model_weights_are_deterministic(mint_local_server, tmp_path, monkeypatch):
    """A fresh build in another cache folder is byte-identical to the one the server uses."""
    from mint_local import tiny_model

    served = tiny_model.model_dir("tiny")
    monkeypatch.setenv("MINT_LOCAL_CACHE", str(tmp_path))
    fresh = tiny_model.ensure_tiny_model("tiny")
    assert fresh != served
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (
            hashlib.sha256((fresh / name).read_bytes()).digest()
            == hashlib.sha256((served / name).read_bytes()).digest()
        ), name
