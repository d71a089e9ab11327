"""The cheatsheet's and SKILL.md's code runs: every python block, in order, against mint-local.

test_docs_sdk_usage checks the docs statically against the SDK's signatures. This test executes
them over HTTP with the real `mint` SDK against the offline mint-local backend (tiny model), so
the data shapes, alignment, return values and the resume recipe are shown to work, not only to
type-check. Blocks share one namespace, as a reader would run them top to bottom. The only inputs
given are the names a block says the reader supplies (batches, a reward function, a prompt, ...).
"""

import asyncio
import os

import pytest

from mint_local.launcher import LocalServer
from mint_local.testing import TEST_API_KEY
from test_docs_sdk_usage import ROOT, markdown_blocks

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def docs_server():
    # Its own server, not conftest's session one: the docs name hosted models (Qwen/Qwen3-4B-...),
    # which only --serve-any-model answers.
    with LocalServer.start(model="tiny", device="cpu", serve_any_model=True) as srv:
        yield srv


@pytest.fixture
def docs_env(docs_server, monkeypatch):
    """MINT_* for the local server, copied to TINKER_* the way `import mint` does (mint.mint.sync_env)."""
    import mint.mint

    for name in ("MINT_BASE_URL", "MINT_API_KEY", "TINKER_BASE_URL", "TINKER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MINT_BASE_URL", docs_server.base_url)
    monkeypatch.setenv("MINT_API_KEY", TEST_API_KEY)
    monkeypatch.setenv("TINKER_BASE_URL", "unset")  # registered with monkeypatch so it is restored
    monkeypatch.setenv("TINKER_API_KEY", "unset")
    mint.mint.sync_env()
    assert os.environ["TINKER_BASE_URL"] == docs_server.base_url
    return docs_server


@pytest.fixture
def ns():
    """The globals the doc blocks run in. Every ServiceClient they open is closed afterwards, so its
    heartbeat thread does not outlive the module's server and complain at the end of the run."""
    namespace: dict = {}
    yield namespace
    import mint

    held = [v for value in namespace.values() for v in getattr(value, "__dict__", {}).values()]
    for value in [*namespace.values(), *held]:  # also the clients an object holds (section 9's holder)
        if isinstance(value, mint.ServiceClient):
            value.holder.close()


def _reader_inputs(ns: dict) -> None:
    """What the docs leave to the reader, built once a tokenizer and a training client exist."""
    from mint import types

    if "tokenizer" not in ns or "training_client" not in ns or "pairs" in ns:
        return
    tok = ns["tokenizer"]
    chosen = tok.encode("Q: 2+2? A: 4") + [tok.eos_token_id]
    rejected = tok.encode("Q: 2+2? A: 5") + [tok.eos_token_id]
    ns["full_token_lists"] = [chosen, rejected]
    ns["pairs"] = [
        types.Datum(
            model_input=types.ModelInput.from_ints(t[:-1]),
            loss_fn_inputs={"target_tokens": t[1:], "weights": [0.0] * 6 + [1.0] * (len(t) - 7)},
        )
        for t in (chosen, rejected)
    ]
    ns.update(tokens=chosen, weights=[0.0] * 7 + [1.0] * (len(chosen) - 7), batch=ns["pairs"])
    ns["prompt"] = types.ModelInput.from_ints(tok.encode("Q: 2+2? A:"))
    ns["teacher_path"] = ns["training_client"].save_weights_for_sampler("teacher").result().path
    ns.update(step=0, num_steps=1, state_path="tinker://local/weights/final", BASE_MODEL="Qwen/Qwen3-4B-Instruct-2507")
    ns.update(
        prompt_ids=tok.encode("Q: 2+2? A:"),
        completion_ids=tok.encode(" 4", add_special_tokens=False) + [tok.eos_token_id],
    )


def _run_blocks(path, ns, capsys):
    import tinker._client
    import tinker.lib.internal_client_holder as holder_module

    blocks = markdown_blocks(path.read_text(encoding="utf-8"), path.name)
    providers = (holder_module.ApiKeyAuthProvider, tinker._client.ApiKeyAuthProvider)
    ran = []
    try:
        for label, code in blocks:
            code = code.replace("max_tokens=512", "max_tokens=8").replace("max_tokens=256", "max_tokens=8")
            if "get_checkpoint_archive_url" in code:
                _run_archive_block(label, code, ns)
            else:
                try:
                    exec(compile(code, label, "exec"), ns)
                except Exception as exc:  # noqa: BLE001 - report which block failed and how
                    pytest.fail(f"{label} failed: {type(exc).__name__}: {exc}\n{code}")
            _reader_inputs(ns)
            ran.append(label)
    finally:
        # The cheatsheet's sk- key workaround patches tinker globally; undo it for the other tests.
        holder_module.ApiKeyAuthProvider, tinker._client.ApiKeyAuthProvider = providers
    return ran, capsys.readouterr().out


def _run_archive_block(label, code, ns):
    """The archive URL works when the server turns tinker's pyqwest transport off, and otherwise
    fails exactly as the cheatsheet's "Known issue" says. If this changes, update section 8."""
    pyqwest = ns["service_client"].holder.get_client_config().use_pyqwest_transport
    if not pyqwest:
        exec(compile(code, label, "exec"), ns)
        assert ns["archive"].url
        return
    with pytest.raises(TypeError, match="API Response types must subclass"):
        exec(compile(code, label, "exec"), ns)


def test_cheatsheet_blocks_run_against_mint_local(docs_env, capsys, ns):
    ns.update({
        "__name__": "cheatsheet",
        "batches": [[{"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]}]] * 2,
        "prompt_batches": [[{"prompt_text": "Say 4:", "answer": "4"}, {"prompt_text": "Count to 3:", "answer": "3"}]],
        "reward_fn": lambda text, answer: float(len(text) % 2),  # varies, so groups are not constant
    })
    ran, out = _run_blocks(ROOT / "mint_api_cheatsheet.md", ns, capsys)
    assert len(ran) >= 15
    # The SFT loop logged two steps, the RL loop one; resume loaded the saved state.
    assert out.count("METRIC step=0 loss=") >= 1 and "METRIC step=1 loss=" in out
    assert "METRIC step=0 reward=" in out
    assert ns["state"].path.startswith("tinker://") and "/weights/" in ns["state"].path
    # The async helpers it defines work when called.
    loss = asyncio.run(ns["train_step"](ns["training_client"], ns["pairs"], ns["adam"]))
    assert loss > 0
    groups = asyncio.run(ns["sample_groups"](ns["sampler"], [ns["prompt"]], ns["params"], 2))
    assert len(groups) == 1 and len(groups[0].sequences) == 2
    assert ns["preflight"](ns["service_client"])  # the preflight helper lists the served models
    # .future() gives the concurrent Future underneath a training call; both finished.
    assert not ns["pending"] and ns["fb"].result().metrics["loss:sum"] > 0
    # The session holder rebuilt its clients from the saved state and trained on the new ones.
    holder = ns["holder"]
    assert holder.state_path.startswith("tinker://") and ns["loss_sum"] > 0
    assert holder.training_client is not None and holder.sampler is not None


def test_skill_blocks_run_against_mint_local(docs_env, ns):
    import mint

    service_client = mint.ServiceClient()
    training_client = service_client.create_lora_training_client(base_model="Qwen/Qwen3-4B-Instruct-2507", rank=32)
    tokenizer = training_client.get_tokenizer()
    ns.update({
        "service_client": service_client,
        "training_client": training_client,
        "BASE_MODEL": "Qwen/Qwen3-4B-Instruct-2507",
        "prompt_ids": tokenizer.encode("Q: 2+2? A:"),
        "completion_ids": tokenizer.encode(" 4", add_special_tokens=False) + [tokenizer.eos_token_id],
    })
    code_blocks = markdown_blocks((ROOT / "SKILL.md").read_text(encoding="utf-8"), "SKILL.md")
    assert len(code_blocks) >= 3
    for label, code in code_blocks:
        exec(compile(code, label, "exec"), ns)
        if "datum" in ns and "batch" not in ns:
            ns["batch"] = [ns["datum"]]
    assert ns["result"].metrics["loss:sum"] > 0
    assert ns["state_path"].startswith("tinker://")
