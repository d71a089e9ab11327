"""mint-local's own model parts against the libraries they stand in for.

The built-in tiny models run on mint_local/qwen3.py, adapters on mint_local/lora.py and the
optimizer on mint_local/adam.py, so that a server reaches its first step without importing
transformers, peft or torch._dynamo. Each is checked here against transformers, peft and
torch.optim.AdamW; a GPT-2 folder (transformers' Conv1D layers) checks the transformers path
through the SDK.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import mint
import pytest
import torch

from mint_local import lora, qwen3
from mint_local.adam import AdamSettings, AdamW
from mint_local.launcher import LocalServer
from mint_local.sampling import Segment
from mint_local.testing import TEST_API_KEY, ce_datum, checkpoint_dir, logprobs_of
from mint_local.tiny_model import ensure_tiny_model


def _hf(folder, dtype=torch.float32):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype).eval()


@pytest.mark.parametrize("variant", ["tiny", "tiny-30m"])
def test_builtin_qwen3_equals_transformers(variant):
    folder = ensure_tiny_model(variant)
    ours, theirs = qwen3.load(folder, torch.device("cpu"), torch.float32), _hf(folder)
    ids = torch.randint(0, 2048, (3, 40), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = theirs(input_ids=ids, use_cache=False).logits
        assert torch.equal(ours.full_logits(ids), expected)
        # The sampler's packed forward with its caches: each row's prompt as its own segment (all
        # logits), then one token at a time for all rows, then a chunk of several per row.
        routing, rows = lora.routing(ours), ids.tolist()
        segments = [Segment([row[:30]], ours.new_cache(), [None], all_logits=True) for row in rows]
        prompt = torch.cat(ours.forward_packed(segments, 16, routing))
        assert torch.allclose(prompt, expected[:, :30], atol=1e-5)
        cohort = Segment([row[:30] for row in rows], qwen3.RowCache.join([s.cache for s in segments]), [None] * 3)
        steps = []
        for i in range(30, 35):
            cohort.tokens = [row[i : i + 1] for row in rows]
            steps.append(ours.forward_packed([cohort], 16, routing)[0])
        assert torch.allclose(torch.stack(steps, 1), expected[:, 30:35], atol=1e-5)
        cohort.tokens, cohort.all_logits = [row[35:40] for row in rows], True
        assert torch.allclose(ours.forward_packed([cohort], 16, routing)[0], expected[:, 35:40], atol=1e-5)
        expanded = cohort.cache.expand(2)
        assert expanded.length == 40 and expanded.layers[0].shape[0] == 6


def test_builtin_qwen3_bf16_and_tied_embeddings(tmp_path):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=1, head_dim=8, tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 500.0},
    )  # fmt: skip
    torch.manual_seed(1)
    Qwen3ForCausalLM(config).save_pretrained(tmp_path)
    ids = torch.randint(0, 300, (2, 17), generator=torch.Generator().manual_seed(1))
    for dtype, atol in ((torch.float32, 0.0), (torch.bfloat16, 2e-2)):
        ours = qwen3.load(tmp_path, torch.device("cpu"), dtype)
        assert ours.lm_head.weight is ours.model.embed_tokens.weight
        with torch.no_grad():
            got, want = ours.full_logits(ids).float(), _hf(tmp_path, dtype)(input_ids=ids, use_cache=False).logits.float()
        assert torch.allclose(got, want, atol=atol, rtol=0), (dtype, (got - want).abs().max())


def test_builtin_qwen3_refuses_configs_it_does_not_implement(tmp_path):
    shutil.copy(ensure_tiny_model("tiny") / "config.json", tmp_path / "config.json")
    raw = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(raw | {"use_sliding_window": True, "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4}}))
    with pytest.raises(qwen3.UnsupportedConfig, match="rope_type, use_sliding_window; load it with transformers"):
        qwen3.Qwen3Config.from_folder(tmp_path)


def test_lora_layers_match_peft_forward_and_gradients():
    from peft import LoraConfig, get_peft_model

    folder = ensure_tiny_model("tiny")
    targets = ["model.layers.0.self_attn.q_proj", "model.layers.1.mlp.down_proj", "lm_head"]
    ours = qwen3.load(folder, torch.device("cpu"), torch.float32)
    layers = dict(lora.inject(ours, targets, "a", rank=4, alpha=32))
    theirs = get_peft_model(_hf(folder), LoraConfig(r=4, lora_alpha=32, target_modules=targets, lora_dropout=0.0))
    peft_params = dict(theirs.named_parameters())
    gen = torch.Generator().manual_seed(2)
    for name, layer in layers.items():
        adapter = layer.adapters["a"]
        assert adapter.scale == 8.0 and not adapter.B.any()  # a new adapter changes nothing
        with torch.no_grad():
            adapter.B.normal_(generator=gen)
            peft_params[f"base_model.model.{name}.lora_A.default.weight"].copy_(adapter.A)
            peft_params[f"base_model.model.{name}.lora_B.default.weight"].copy_(adapter.B)
        layer.active = ("a",)
    ids = torch.randint(0, 2048, (2, 25), generator=gen)
    ours_lp = torch.log_softmax(ours.full_logits(ids), -1)[..., 7].sum()
    theirs_lp = torch.log_softmax(theirs(input_ids=ids).logits, -1)[..., 7].sum()
    assert torch.allclose(ours_lp, theirs_lp, rtol=1e-5)
    ours_lp.backward()
    theirs_lp.backward()
    for name, layer in layers.items():
        for part, mine in (("A", layer.adapters["a"].A), ("B", layer.adapters["a"].B)):
            ref = peft_params[f"base_model.model.{name}.lora_{part}.default.weight"].grad
            assert torch.allclose(mine.grad, ref, rtol=1e-4, atol=1e-6), (name, part)
    # Inactive adapters and removed ones leave the base model alone.
    with torch.no_grad():
        base = qwen3.load(folder, torch.device("cpu"), torch.float32).full_logits(ids)
        for layer in layers.values():
            layer.active = ()
        assert torch.equal(ours.full_logits(ids), base)
        for layer in layers.values():
            layer.remove("a")
        assert all(not layer.adapters for layer in layers.values())


def test_adamw_matches_torch_adamw_step_for_step():
    torch.manual_seed(3)
    start = [torch.randn(5, 3), torch.randn(7)]
    ours = [torch.nn.Parameter(t.clone()) for t in start]
    theirs = [torch.nn.Parameter(t.clone()) for t in start]
    opt = AdamW(ours)
    ref = torch.optim.AdamW(theirs, lr=1e-3, foreach=True)
    schedule = [
        AdamSettings(learning_rate=1e-2, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1),
        AdamSettings(learning_rate=3e-3, beta1=0.5, beta2=0.7, eps=1e-4, weight_decay=0.0),
        AdamSettings(learning_rate=1e-2, beta1=0.9, beta2=0.999, eps=1e-12, weight_decay=0.5),
    ] * 2
    for n, s in enumerate(schedule):
        grads = [torch.randn_like(t) for t in start]
        skip = 1 if n == 2 else None  # a parameter without a gradient keeps its step count
        for params in (ours, theirs):
            for i, (p, g) in enumerate(zip(params, grads, strict=True)):
                p.grad = None if i == skip else g.clone()
        for group in ref.param_groups:
            group.update(lr=s.learning_rate, betas=(s.beta1, s.beta2), eps=s.eps, weight_decay=s.weight_decay)
        opt.step(s)
        ref.step()
        for a, b in zip(ours, theirs, strict=True):
            assert torch.allclose(a, b, rtol=1e-6, atol=1e-7), n
    assert opt.steps == [6, 5]
    # Optimizer state written by torch (earlier mint-local checkpoints) continues identically.
    resumed = AdamW([torch.nn.Parameter(p.detach().clone()) for p in theirs])
    resumed.load_state_dict(ref.state_dict())
    grads = [torch.randn_like(t) for t in start]
    for params in (resumed.params, theirs):
        for p, g in zip(params, grads, strict=True):
            p.grad = g.clone()
    resumed.step(schedule[0])
    ref.param_groups[0].update(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    ref.step()
    assert all(torch.allclose(a, b, rtol=1e-6, atol=1e-7) for a, b in zip(resumed.params, theirs, strict=True))
    with pytest.raises(ValueError, match="holds 2 parameters, this adapter has 1"):
        AdamW([ours[0]]).load_state_dict(opt.state_dict())


def test_tiny_server_path_never_imports_transformers_peft_or_dynamo(tmp_path):
    """The reason these modules exist: the built-in model's first step must not pay ~4 s of imports."""
    script = textwrap.dedent(
        f"""
        import sys
        from types import SimpleNamespace as NS
        import torch
        from mint_local.engine import Engine, BASE_WEIGHTS
        from mint_local.inputs import prepare_batch
        from mint_local import protocol as p

        engine = Engine("tiny", device="cpu", state_dir={str(tmp_path)!r})
        engine.create_model("m", engine.name, NS(rank=4, train_mlp=True, train_attn=True, train_unembed=True, seed=0), "s", None)
        datum = {{"model_input": {{"chunks": [{{"type": "encoded_text", "tokens": list(range(5, 25))}}]}},
                  "loss_fn_inputs": {{"target_tokens": {{"data": list(range(6, 26)), "dtype": "int64", "shape": [20]}},
                                      "weights": {{"data": [1.0] * 20, "dtype": "float32", "shape": [20]}}}}}}
        fbi = p.ForwardBackwardInput.model_validate({{"data": [datum], "loss_fn": "cross_entropy"}})
        batch = prepare_batch(fbi, vocab_size=engine.vocab_size, max_length=engine.max_context)
        engine.forward("m", batch, backward=True)
        engine.optim_step("m", NS(learning_rate=1e-3, beta1=0.9, beta2=0.95, eps=1e-12, weight_decay=0.0, grad_clip_norm=1.0))
        params = NS(stop=["the"], max_tokens=8, temperature=1.0, top_k=-1, top_p=1.0, seed=0)
        engine.sample(BASE_WEIGHTS, list(range(5, 15)), 2, params, want_prompt_logprobs=True, topk_prompt=0)
        print(sorted(m for m in ("transformers", "peft", "torch._dynamo", "sympy") if m in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_transformers_model_folder_with_conv1d_layers_trains_and_saves_a_peft_adapter(tmp_path):
    """A GPT-2 folder runs on transformers, its Conv1D layers get LoRA, and the saved adapter
    gives peft the same logprobs the server computes."""
    from peft import PeftModel
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = tmp_path / "gpt2-tiny"
    torch.manual_seed(4)
    GPT2LMHeadModel(GPT2Config(vocab_size=2048, n_positions=128, n_embd=32, n_layer=2, n_head=2, bos_token_id=2045, eos_token_id=2045)).save_pretrained(folder)
    shutil.copy(ensure_tiny_model("tiny") / "tokenizer.json", folder / "tokenizer.json")
    tokens = list(range(100, 140))
    with LocalServer.start(model=str(folder), device="cpu", state_dir=tmp_path / "state") as server:
        sc = mint.ServiceClient(base_url=server.base_url, api_key=TEST_API_KEY)
        try:
            tc = sc.create_lora_training_client(base_model=server.model_name, rank=4, seed=1)
            assert tc.get_info().model_data.arch == "GPT2LMHeadModel"
            losses = []
            for _ in range(3):
                out = tc.forward_backward([ce_datum(tokens)], "cross_entropy").result()
                losses.append(out.metrics["loss:sum"])
                tc.optim_step(mint.AdamParams(learning_rate=1e-3)).result()
            assert losses[-1] < losses[0]
            served = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
            path = tc.save_state("gpt2").result().path
            sampler = tc.save_weights_and_get_sampling_client("gpt2-sampler")
            sample = sampler.sample(mint.ModelInput.from_ints(tokens[:5]), 2, mint.SamplingParams(max_tokens=6, seed=0)).result()
            assert len(sample.sequences) == 2 and all(len(s.tokens) <= 6 for s in sample.sequences)
        finally:
            sc.holder.close()
    config = json.loads((checkpoint_dir(server.state_dir, path) / "adapter_config.json").read_text())
    assert {t.rsplit(".", 1)[-1] for t in config["target_modules"]} == {"c_attn", "c_proj", "c_fc", "lm_head"}
    model = PeftModel.from_pretrained(_hf(folder), str(checkpoint_dir(server.state_dir, path)))
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([tokens[:-1]])).logits[0].double()
    direct = torch.log_softmax(logits, -1).gather(-1, torch.tensor(tokens[1:])[:, None]).squeeze(-1)
    assert torch.allclose(served, direct, atol=1e-4)


@pytest.mark.slow
def test_bf16_base_model_trains_with_float32_adapters(tmp_path):
    """The GPU path's precision (bf16 base weights; float32 LoRA, Adam state and loss), on the CPU."""
    from safetensors.torch import load_file

    from mint_local.testing import TEXT, torch_target_logprobs

    with LocalServer.start(model="tiny", device="cpu", dtype="bfloat16", state_dir=tmp_path / "state") as server:
        assert "on cpu bfloat16" in server.log_path.read_text()
        sc = mint.ServiceClient(base_url=server.base_url, api_key=TEST_API_KEY)
        try:
            tc = sc.create_lora_training_client(base_model=server.model_name, rank=4, seed=0)
            tokens = tc.get_tokenizer().encode(TEXT)
            first = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
            exact = torch_target_logprobs(tc.get_info().model_data.tokenizer_id, tokens)
            assert not torch.equal(first, exact) and torch.allclose(first, exact, atol=0.15)  # bf16 rounding, no more
            losses = []
            for _ in range(8):
                losses.append(tc.forward_backward([ce_datum(tokens)], "cross_entropy").result().metrics["loss:sum"])
                tc.optim_step(mint.AdamParams(learning_rate=1e-2)).result()
            assert losses[-1] < 0.9 * losses[0]
            path = tc.save_state("bf16").result().path
            saved = load_file(str(checkpoint_dir(server.state_dir, path) / "adapter_model.safetensors"))
            assert {t.dtype for t in saved.values()} == {torch.float32}
            trained = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
            resumed = sc.create_lora_training_client(base_model=server.model_name, rank=4, seed=1)
            resumed.load_state_with_optimizer(path).result()
            assert torch.equal(logprobs_of(resumed.forward([ce_datum(tokens)], "cross_entropy").result()), trained)
            sampler = tc.save_weights_and_get_sampling_client("bf16-sampler")
            out = sampler.sample(mint.ModelInput.from_ints(tokens[:8]), 3, mint.SamplingParams(max_tokens=10, seed=0)).result()
            assert len(out.sequences) == 3 and all(all(lp <= 0 for lp in s.logprobs) for s in out.sequences)
        finally:
            sc.holder.close()
