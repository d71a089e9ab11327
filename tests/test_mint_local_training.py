"""mint-local training through the real SDK: losses, gradients, optimizer, custom loss, resume."""

from __future__ import annotations

import math

import mint
import pytest
import torch

from mint_local.testing import (
    TEST_API_KEY,
    TEXT,
    ce_datum,
    checkpoint_dir,
    elementwise_of,
    logprobs_of,
    reference_model,
    rl_datum,
    torch_target_logprobs,
)


@pytest.fixture(scope="module")
def sc(mint_local_server):
    return mint.ServiceClient(base_url=mint_local_server.base_url, api_key=TEST_API_KEY)


@pytest.fixture(scope="module")
def tokenizer(sc, mint_local_server):
    return sc.create_lora_training_client(base_model=mint_local_server.model_name, rank=2).get_tokenizer()


@pytest.fixture(scope="module")
def tokens(tokenizer):
    return tokenizer.encode(TEXT)


def new_client(sc, server, rank=4, seed=0, **kwargs):
    return sc.create_lora_training_client(base_model=server.model_name, rank=rank, seed=seed, **kwargs)


def grad_norm(tc) -> float:
    """Run an optim_step with lr=0 (weights unchanged) and read the gradient norm it saw."""
    return tc.optim_step(mint.AdamParams(learning_rate=0.0)).result().metrics["grad_norm:mean"]


def test_cross_entropy_matches_direct_torch_and_is_summed(sc, mint_local_server, tokens):
    tc = new_client(sc, mint_local_server)
    model_dir = tc.get_info().model_data.tokenizer_id
    weights = [0.0] * 5 + [0.5] * (len(tokens) - 6)
    out = tc.forward([ce_datum(tokens, weights)], "cross_entropy").result()

    lp = logprobs_of(out)
    # A fresh LoRA adapter starts at B=0, so the policy is exactly the base model.
    direct = torch_target_logprobs(model_dir, tokens)
    assert torch.allclose(lp, direct, atol=1e-4)
    w = torch.tensor(weights, dtype=torch.float64)
    assert out.metrics["loss:sum"] == pytest.approx(float(-(direct * w).sum()), rel=1e-5)
    assert torch.allclose(elementwise_of(out), -(lp * w), atol=1e-6)
    # Summed, never normalised: two copies of the datum give twice the loss.
    twice = tc.forward([ce_datum(tokens, weights)] * 2, "cross_entropy").result()
    assert twice.metrics["loss:sum"] == pytest.approx(2 * out.metrics["loss:sum"], rel=1e-6)


def test_weight_scales_gradient_linearly(sc, mint_local_server, tokens):
    norms = {}
    for weight in (1.0, 0.001):
        tc = new_client(sc, mint_local_server, seed=7)
        tc.forward_backward([ce_datum(tokens, [weight] * (len(tokens) - 1))], "cross_entropy").result()
        norms[weight] = grad_norm(tc)
    assert norms[1.0] > 0
    assert norms[0.001] == pytest.approx(0.001 * norms[1.0], rel=1e-3)


def test_gradients_accumulate_until_optim_step(sc, mint_local_server, tokens):
    a, b = ce_datum(tokens[:20]), ce_datum(tokens[10:])
    together = new_client(sc, mint_local_server, seed=3)
    together.forward_backward([a, b], "cross_entropy").result()
    split = new_client(sc, mint_local_server, seed=3)
    split.forward_backward([a], "cross_entropy").result()
    split.forward_backward([b], "cross_entropy").result()
    assert grad_norm(split) == pytest.approx(grad_norm(together), rel=1e-5)
    # optim_step consumed the gradients: the next step sees none.
    assert grad_norm(split) == 0.0


def _adapter(server, path):
    from safetensors.torch import load_file

    return load_file(str(checkpoint_dir(server.state_dir, path) / "adapter_model.safetensors"))


def test_adam_steps_match_torch_adamw_with_every_param(sc, mint_local_server, tokens):
    """Two server steps vs peft + torch.optim.AdamW on the same start weights and data."""
    from peft import PeftModel

    adam = mint.AdamParams(learning_rate=3e-3, beta1=0.5, beta2=0.7, eps=1e-4, weight_decay=0.5, grad_clip_norm=0.05)
    weights = [0.0] * 4 + [1.0] * (len(tokens) - 5)
    data = [ce_datum(tokens, weights), ce_datum(tokens[5:30])]
    tc = new_client(sc, mint_local_server, rank=4, seed=13)
    start = tc.save_state("adam-start").result().path
    for _ in range(2):
        tc.forward_backward(data, "cross_entropy")
        tc.optim_step(adam)
    served = _adapter(mint_local_server, tc.save_state("adam-end").result().path)

    model_dir = tc.get_info().model_data.tokenizer_id
    base = reference_model.__wrapped__(model_dir)
    ref = PeftModel.from_pretrained(base, str(checkpoint_dir(mint_local_server.state_dir, start)), is_trainable=True)
    named = {n: p for n, p in ref.named_parameters() if p.requires_grad}
    opt = torch.optim.AdamW(
        named.values(),
        lr=adam.learning_rate,
        betas=(adam.beta1, adam.beta2),
        eps=adam.eps,
        weight_decay=adam.weight_decay,
    )
    for _ in range(2):
        loss = 0
        for d in data:
            inp = torch.tensor([d.model_input.to_ints()])
            tgt = torch.tensor(d.loss_fn_inputs["target_tokens"].data)
            w = torch.tensor(d.loss_fn_inputs["weights"].data)
            lp = torch.log_softmax(ref(input_ids=inp).logits[0], -1).gather(-1, tgt[:, None]).squeeze(-1)
            loss = loss - (lp * w).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(named.values()), adam.grad_clip_norm)
        opt.step()
        opt.zero_grad()
    assert len(served) == len(named) > 0
    for name, param in named.items():
        key = name.replace(".default.weight", ".weight")
        assert torch.allclose(served[key], param.detach(), rtol=1e-4, atol=1e-6), key


def test_rl_losses_follow_their_formulas(sc, mint_local_server, tokens):
    tc = new_client(sc, mint_local_server)
    n = len(tokens) - 1
    lp = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
    adv = torch.linspace(-1.0, 1.5, n, dtype=torch.float64)
    # Behaviour logprobs chosen so the ratio exp(lp - old) spans 0.5 .. 2.0.
    old = lp - torch.log(torch.linspace(0.5, 2.0, n, dtype=torch.float64))
    ratio = torch.exp(lp - old)

    def run(loss_fn, config=None, **extra):
        datum = rl_datum(tokens, old.tolist(), adv.tolist(), **extra)
        return elementwise_of(tc.forward([datum], loss_fn, config).result())

    assert torch.allclose(run("importance_sampling"), -(ratio * adv), atol=1e-4)
    for config in (None, {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}):
        lo, hi = (0.8, 1.2) if config is None else (0.9, 1.1)
        expected = -torch.minimum(ratio * adv, ratio.clamp(lo, hi) * adv)
        assert torch.allclose(run("ppo", config), expected, atol=1e-4), config
    expected = -(ratio.clamp(0.0, 1.5) * lp * adv)
    assert torch.allclose(run("cispo", {"clip_low_threshold": 0.0, "clip_high_threshold": 1.5}), expected, atol=1e-4)
    expected = -(lp * adv - 0.5 * 0.3 * (lp - old) ** 2)
    assert torch.allclose(run("dro", {"beta": 0.3}), expected, atol=1e-4)
    # Optional weights mask tokens out of an RL loss.
    mask = [0.0] * 10 + [1.0] * (n - 10)
    masked = run("importance_sampling", weights=mask)
    assert torch.allclose(masked, -(ratio * adv) * torch.tensor(mask, dtype=torch.float64), atol=1e-4)


def test_ppo_clipping_stops_the_gradient(sc, mint_local_server, tokens):
    """ratio 1.5 with positive advantages: clipped at 1.2 (no gradient), unclipped at 2.0."""
    n = len(tokens) - 1
    norms = {}
    for high in (1.2, 2.0):
        tc = new_client(sc, mint_local_server, seed=5)
        lp = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
        datum = rl_datum(tokens, (lp - math.log(1.5)).tolist(), [1.0] * n)
        config = {"clip_low_threshold": 0.8, "clip_high_threshold": high}
        out = tc.forward_backward([datum], "ppo", config).result()
        assert out.metrics["loss:sum"] == pytest.approx(-min(1.5, high) * n, rel=1e-4)
        norms[high] = grad_norm(tc)
    assert norms[1.2] == 0.0
    assert norms[2.0] > 0.0


def test_cispo_gradient_uses_the_clipped_ratio_as_a_constant(sc, mint_local_server, tokens):
    """d/dlp of -(sg(clip(r)) * lp * A) is -clip(r) * A: compare against cross_entropy with those weights."""
    n = len(tokens) - 1
    tc = new_client(sc, mint_local_server, seed=9)
    lp = logprobs_of(tc.forward([ce_datum(tokens)], "cross_entropy").result())
    old = lp - math.log(3.0)  # ratio 3.0, clipped to 2.0
    tc.forward_backward(
        [rl_datum(tokens, old.tolist(), [0.5] * n)], "cispo", {"clip_low_threshold": 0.0, "clip_high_threshold": 2.0}
    ).result()
    ref = new_client(sc, mint_local_server, seed=9)
    ref.forward_backward([ce_datum(tokens, [2.0 * 0.5] * n)], "cross_entropy").result()
    assert grad_norm(tc) == pytest.approx(grad_norm(ref), rel=1e-4)


def test_sft_loop_lowers_the_loss(sc, mint_local_server, tokenizer):
    tc = new_client(sc, mint_local_server, rank=8, seed=1)
    batch = [
        ce_datum(tokenizer.encode(f"Question: what is {a} plus {a}? Answer: #### {2 * a}")) for a in (3, 14, 25, 36)
    ]
    losses = []
    for _ in range(20):
        fb = tc.forward_backward(batch, "cross_entropy")
        tc.optim_step(mint.AdamParams(learning_rate=5e-3))
        losses.append(fb.result().metrics["loss:sum"])
    assert losses[-1] < 0.6 * losses[0]
    assert all(math.isfinite(x) for x in losses)


def test_forward_backward_custom_dpo_raises_chosen_logprobs(sc, mint_local_server, tokenizer):
    tc = new_client(sc, mint_local_server, rank=8, seed=2)
    prompt = tokenizer.encode("Q: is the sky blue? A:")
    chosen = prompt + tokenizer.encode(" yes, the sky is blue")
    rejected = prompt + tokenizer.encode(" no, it is green")

    def datum(seq):
        return ce_datum(seq, [0.0] * (len(prompt) - 1) + [1.0] * (len(seq) - len(prompt)))

    data = [datum(chosen), datum(rejected)]
    ref = tc.forward(data, "cross_entropy").result()
    ref_lp = [
        float((logprobs_of(ref, i) * torch.tensor(d.loss_fn_inputs["weights"].data)).sum()) for i, d in enumerate(data)
    ]

    def dpo_loss(batch, logprobs):
        w = [torch.tensor(d.loss_fn_inputs["weights"].data) for d in batch]
        chosen_lp, rejected_lp = (logprobs[0] * w[0]).sum(), (logprobs[1] * w[1]).sum()
        margin = 0.5 * ((chosen_lp - ref_lp[0]) - (rejected_lp - ref_lp[1]))
        return -torch.nn.functional.logsigmoid(margin), {"dpo_margin": float(margin.detach())}

    margins = []
    for _ in range(6):
        result = tc.forward_backward_custom(data, dpo_loss).result()
        margins.append(result.metrics["dpo_margin"])
        tc.optim_step(mint.AdamParams(learning_rate=1e-2)).result()
    after = tc.forward(data, "cross_entropy").result()
    chosen_after = float((logprobs_of(after, 0) * torch.tensor(data[0].loss_fn_inputs["weights"].data)).sum())
    assert chosen_after > ref_lp[0] + 0.5
    assert margins[-1] > margins[0]


def test_save_state_then_fresh_client_resumes_exactly(sc, mint_local_server, tokens):
    datum = ce_datum(tokens)
    adam = mint.AdamParams(learning_rate=5e-3)
    a = new_client(sc, mint_local_server, rank=4, seed=21)
    for _ in range(3):
        a.forward_backward([datum], "cross_entropy")
        a.optim_step(adam)
    before = logprobs_of(a.forward([datum], "cross_entropy").result())
    path = a.save_state("resume-check").result().path
    assert path.startswith("tinker://") and "/weights/resume-check" in path
    a.forward_backward([datum], "cross_entropy")
    a.optim_step(adam).result()
    a_next = logprobs_of(a.forward([datum], "cross_entropy").result())

    b = mint.ServiceClient(base_url=mint_local_server.base_url, api_key=TEST_API_KEY).create_lora_training_client(
        base_model=mint_local_server.model_name, rank=4
    )
    b.load_state_with_optimizer(path).result()
    assert torch.equal(logprobs_of(b.forward([datum], "cross_entropy").result()), before)
    b.forward_backward([datum], "cross_entropy")
    b.optim_step(adam).result()
    assert torch.equal(logprobs_of(b.forward([datum], "cross_entropy").result()), a_next)

    # load_state restores weights only: the optimizer restarts, so the next update differs.
    c = new_client(sc, mint_local_server, rank=4)
    c.load_state(path).result()
    assert torch.equal(logprobs_of(c.forward([datum], "cross_entropy").result()), before)
    c.forward_backward([datum], "cross_entropy")
    c.optim_step(adam).result()
    assert not torch.allclose(logprobs_of(c.forward([datum], "cross_entropy").result()), a_next, atol=1e-6)


def test_create_training_client_from_state_with_optimizer(sc, mint_local_server, tokens):
    a = new_client(sc, mint_local_server, rank=3, seed=4, train_unembed=False)
    a.forward_backward([ce_datum(tokens)], "cross_entropy")
    a.optim_step(mint.AdamParams(learning_rate=1e-2)).result()
    path = a.save_state("from-state").result().path
    expected = logprobs_of(a.forward([ce_datum(tokens)], "cross_entropy").result())
    b = sc.create_training_client_from_state_with_optimizer(path)
    assert b.get_info().lora_rank == 3
    assert torch.equal(logprobs_of(b.forward([ce_datum(tokens)], "cross_entropy").result()), expected)


def test_lora_flags_choose_the_trained_layers(sc, mint_local_server, tokens):
    expected_parts = {"train_attn": "self_attn", "train_mlp": "mlp", "train_unembed": "lm_head"}
    for flag, part in expected_parts.items():
        flags = {f: f == flag for f in expected_parts}
        tc = new_client(sc, mint_local_server, rank=2, seed=1, **flags)
        keys = _adapter(mint_local_server, tc.save_state(f"flags-{flag}").result().path)
        assert keys and all(part in k for k in keys), (flag, sorted(keys)[:3])
    tc = new_client(sc, mint_local_server, rank=2)
    keys = _adapter(mint_local_server, tc.save_state("flags-all").result().path)
    assert {part for part in expected_parts.values() if any(part in k for k in keys)} == set(expected_parts.values())


def test_two_dim_targets_for_top_k_distillation(sc, mint_local_server, tokens):
    """cross_entropy with [N, K] target_tokens/weights (sent sparse by the SDK) sums over K too."""
    tc = new_client(sc, mint_local_server)
    model_dir = tc.get_info().model_data.tokenizer_id
    n = len(tokens) - 1
    targets = torch.tensor([[t, (t + 7) % 100, (t + 8) % 100, 5] for t in tokens[1:]])
    weights = torch.zeros(n, 4)
    weights[::3, 0], weights[1::3, 3] = 0.75, 0.25  # mostly zeros: the SDK encodes this as CSR
    datum = mint.Datum(
        model_input=mint.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": targets, "weights": weights},
    )
    assert datum.loss_fn_inputs["weights"].sparse_crow_indices is not None
    out = tc.forward([datum], "cross_entropy").result()
    assert out.loss_fn_outputs[0]["logprobs"].shape == [n, 4]

    from mint_local.testing import reference_model

    with torch.no_grad():
        logits = reference_model(model_dir)(input_ids=torch.tensor([tokens[:-1]])).logits[0].double()
    lp = torch.log_softmax(logits, -1).gather(-1, targets)
    assert out.metrics["loss:sum"] == pytest.approx(float(-(lp * weights.double()).sum()), rel=1e-5)
