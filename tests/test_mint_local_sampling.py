"""mint-local sampling through the real SDK."""

from __future__ import annotations

import math

import mint
import pytest
import torch

from mint_local.testing import TEST_API_KEY, TEXT, ce_datum, logprobs_of


@pytest.fixture(scope="module")
def sc(mint_local_server):
    return mint.ServiceClient(base_url=mint_local_server.base_url, api_key=TEST_API_KEY)


@pytest.fixture(scope="module")
def trained(sc, mint_local_server):
    """A training client moved away from the base weights, and its tokenizer."""
    tc = sc.create_lora_training_client(base_model=mint_local_server.model_name, rank=4, seed=0)
    tok = tc.get_tokenizer()
    data = [ce_datum(tok.encode(TEXT))]
    for _ in range(3):
        tc.forward_backward(data, "cross_entropy")
        tc.optim_step(mint.AdamParams(learning_rate=1e-2))
    tc.forward(data, "cross_entropy").result()
    return tc, tok


def params(**kwargs):
    return mint.SamplingParams(**{"max_tokens": 12, "seed": 0, **kwargs})


def test_sampler_logprobs_equal_training_logprobs(trained):
    tc, tok = trained
    prompt = tok.encode("The answer is")
    sampler = tc.save_weights_and_get_sampling_client()
    result = sampler.sample(
        prompt=mint.ModelInput.from_ints(prompt), num_samples=3, sampling_params=params(max_tokens=10)
    ).result()
    assert len(result.sequences) == 3
    for seq in result.sequences:
        full = prompt + seq.tokens
        out = tc.forward([ce_datum(full)], "cross_entropy").result()
        trained_lp = logprobs_of(out)[len(prompt) - 1 :]
        assert torch.allclose(torch.tensor(seq.logprobs, dtype=torch.float64), trained_lp, atol=1e-4)
    # compute_logprobs (prompt logprobs) agree with forward too; the first position has none.
    full = prompt + result.sequences[0].tokens
    lps = sampler.compute_logprobs(mint.ModelInput.from_ints(full)).result()
    assert lps[0] is None
    forward_lp = logprobs_of(tc.forward([ce_datum(full)], "cross_entropy").result())
    assert torch.allclose(torch.tensor(lps[1:], dtype=torch.float64), forward_lp, atol=1e-4)


def test_seed_reproducible_and_num_samples(trained):
    tc, tok = trained
    sampler = tc.save_weights_and_get_sampling_client()
    prompt = mint.ModelInput.from_ints(tok.encode("Hello"))
    a = sampler.sample(prompt=prompt, num_samples=4, sampling_params=params(seed=123)).result()
    b = sampler.sample(prompt=prompt, num_samples=4, sampling_params=params(seed=123)).result()
    c = sampler.sample(prompt=prompt, num_samples=4, sampling_params=params(seed=124)).result()
    assert [s.tokens for s in a.sequences] == [s.tokens for s in b.sequences]
    assert [s.tokens for s in a.sequences] != [s.tokens for s in c.sequences]
    assert len(a.sequences) == 4 and len({tuple(s.tokens) for s in a.sequences}) > 1
    assert all(len(s.tokens) == 12 and s.stop_reason == "length" for s in a.sequences)


def test_temperature_top_k_top_p(trained):
    tc, tok = trained
    sampler = tc.save_weights_and_get_sampling_client()
    prompt = mint.ModelInput.from_ints(tok.encode("Hello"))
    greedy = sampler.sample(prompt=prompt, num_samples=2, sampling_params=params(temperature=0.0, seed=1)).result()
    top1 = sampler.sample(prompt=prompt, num_samples=2, sampling_params=params(top_k=1, seed=2)).result()
    tiny_p = sampler.sample(prompt=prompt, num_samples=2, sampling_params=params(top_p=1e-6, seed=3)).result()
    tokens = {tuple(s.tokens) for r in (greedy, top1, tiny_p) for s in r.sequences}
    assert len(tokens) == 1  # all three collapse to the argmax path
    # Logprobs follow the temperature-scaled distribution: at T=0.5 the argmax token is likelier.
    hot = sampler.sample(prompt=prompt, num_samples=1, sampling_params=params(temperature=0.5, top_k=1)).result()
    assert hot.sequences[0].tokens == greedy.sequences[0].tokens
    assert all(h >= g - 1e-6 for h, g in zip(hot.sequences[0].logprobs, greedy.sequences[0].logprobs, strict=True))


def test_stop_token_ids_and_strings(trained):
    tc, tok = trained
    sampler = tc.save_weights_and_get_sampling_client()
    prompt = mint.ModelInput.from_ints(tok.encode("Hello"))
    free = (
        sampler.sample(prompt=prompt, num_samples=1, sampling_params=params(max_tokens=20, seed=5))
        .result()
        .sequences[0]
    )
    stop_id = free.tokens[6]
    stopped = (
        sampler.sample(prompt=prompt, num_samples=1, sampling_params=params(max_tokens=20, seed=5, stop=[stop_id]))
        .result()
        .sequences[0]
    )
    assert stopped.stop_reason == "stop"
    assert stopped.tokens == free.tokens[: free.tokens.index(stop_id) + 1]
    text = tok.decode(free.tokens[:9])
    stop_text = text[-2:]
    by_string = (
        sampler.sample(prompt=prompt, num_samples=1, sampling_params=params(max_tokens=20, seed=5, stop=[stop_text]))
        .result()
        .sequences[0]
    )
    assert by_string.stop_reason == "stop"
    assert by_string.tokens == free.tokens[: len(by_string.tokens)] and len(by_string.tokens) <= 9
    assert stop_text in tok.decode(by_string.tokens)
    assert stop_text not in tok.decode(by_string.tokens[:-1])


def test_prompt_logprobs_and_topk(trained):
    tc, tok = trained
    sampler = tc.save_weights_and_get_sampling_client()
    ids = tok.encode("one two three")
    result = sampler.sample(
        prompt=mint.ModelInput.from_ints(ids),
        num_samples=1,
        sampling_params=params(max_tokens=1),
        include_prompt_logprobs=True,
        topk_prompt_logprobs=3,
    ).result()
    assert result.prompt_logprobs[0] is None and len(result.prompt_logprobs) == len(ids)
    top = result.topk_prompt_logprobs
    assert top[0] is None and all(len(t) == 3 for t in top[1:])
    for pos in range(1, len(ids)):
        values = [lp for _, lp in top[pos]]
        assert values == sorted(values, reverse=True)
        assert result.prompt_logprobs[pos] <= values[0] + 1e-6


def test_sampling_from_saved_path_and_base_model(sc, trained, mint_local_server):
    tc, tok = trained
    path = tc.save_weights_for_sampler("sampler-a").result().path
    assert path.startswith("tinker://") and "/sampler_weights/sampler-a" in path
    prompt = mint.ModelInput.from_ints(tok.encode("Hello there"))
    from_path = sc.create_sampling_client(model_path=path)
    ephemeral = tc.save_weights_and_get_sampling_client()
    base = sc.create_sampling_client(base_model=mint_local_server.model_name)
    a = from_path.compute_logprobs(prompt).result()
    b = ephemeral.compute_logprobs(prompt).result()
    c = base.compute_logprobs(prompt).result()
    assert a == pytest.approx(b, abs=1e-6)
    assert a[1:] != pytest.approx(c[1:], abs=1e-4)  # trained weights differ from the base model
    # Every client's tokenizer loads offline.
    assert base.get_tokenizer().encode("#### 42") == tok.encode("#### 42")
    assert from_path.get_base_model()


def test_async_sampling_many_in_flight(trained):
    import asyncio

    tc, tok = trained
    sampler = tc.save_weights_and_get_sampling_client()
    prompt = mint.ModelInput.from_ints(tok.encode("Hi"))

    async def run():
        return await asyncio.gather(
            *[sampler.sample_async(prompt=prompt, num_samples=2, sampling_params=params(seed=i)) for i in range(8)]
        )

    results = asyncio.run(run())
    assert [len(r.sequences) for r in results] == [2] * 8
    assert all(math.isfinite(lp) for r in results for s in r.sequences for lp in s.logprobs)


def test_multi_turn_history_is_served_from_the_prefix_cache_exactly(sc, trained, mint_local_server):
    """A conversation re-sending its growing history (first prompt ~200 tokens) through the
    SDK: the server, whose prefix cache reuses each earlier prompt, returns exactly the tokens
    and logprobs of a server started with the cache off (`--prefix-cache-mb 0`)."""
    from mint_local.launcher import LocalServer

    tc, tok = trained
    path = tc.save_weights_for_sampler("multi-turn").result().path
    with LocalServer.start(model="tiny", device="cpu", state_dir=mint_local_server.state_dir, prefix_cache_mb=0) as plain:
        other = mint.ServiceClient(base_url=plain.base_url, api_key=TEST_API_KEY)
        try:
            samplers = [sc.create_sampling_client(model_path=path), other.create_sampling_client(model_path=path)]
            histories = [tok.encode(" ".join([TEXT] * 8))] * 2
            assert len(histories[0]) > 150
            for turn in range(3):
                outs = [
                    s.sample(prompt=mint.ModelInput.from_ints(h), num_samples=2, sampling_params=params(max_tokens=16, seed=turn, stop=[])).result()
                    for s, h in zip(samplers, histories, strict=True)
                ]
                cached, uncached = ([(q.tokens, q.logprobs) for q in o.sequences] for o in outs)
                assert cached == uncached
                histories = [h + cached[0][0] + tok.encode(f" turn {turn}: go on") for h in histories]
        finally:
            other.holder.close()
