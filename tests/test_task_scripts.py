"""The task parts of a generated train.py, run for real: the data step and source formats, the LR
schedule against transformers' own schedulers, --parity-dump against mint-local, and a broken
reward reported by the smoke verdict."""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mint_migrate.render import (
    DataOptions,
    RewardOptions,
    ScaffoldOptions,
    render_prepare_data,
    render_scaffold,
    write_scripts,
)

TEST_ROWS = [{"q": f"What is {a} plus 2?", "a": str(a + 2), "meta": {"gold": str(a + 2)}} for a in range(6)]


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINT_", "TINKER_"))}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MINT_BASE_URL="http://127.0.0.1:9")
    return env


def run(script: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], cwd=script.parent, env=env or offline_env(),
                          capture_output=True, text=True, timeout=300)


_loaded = 0


def run_main(script: Path, argv: list[str], capsys, monkeypatch) -> tuple[int, str]:
    """train.py's main(argv) in this process, offline (no credentials, hub offline): (exit code, stdout + stderr)."""
    global _loaded
    _loaded += 1
    for name in ("MINT_API_KEY", "MINT_BASE_URL", "TINKER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    module = load_module(script, f"task_script_{_loaded}")
    capsys.readouterr()
    code = 0
    try:
        module.main(argv)
    except SystemExit as exc:
        code, message = (exc.code, "") if isinstance(exc.code, int) else (1, str(exc.code))
        print(message, file=sys.stderr)
    captured = capsys.readouterr()
    return code or 0, captured.out + captured.err


@pytest.fixture(scope="module")
def tiny_tokenizer_dir() -> str:
    from mint_local.tiny_model import ensure_tiny_model

    return str(ensure_tiny_model("tiny"))


# --- the data step and the source formats ----------------------------------------------------------


def write_sources(folder: Path) -> dict[str, Path]:
    import pyarrow
    import pyarrow.parquet

    files = {"parquet": folder / "rows.parquet", "jsonl": folder / "rows.jsonl", "json": folder / "rows.json",
             "csv": folder / "rows.csv"}
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(TEST_ROWS), files["parquet"])
    files["jsonl"].write_text("".join(json.dumps(r) + "\n" for r in TEST_ROWS))
    files["json"].write_text(json.dumps(TEST_ROWS))
    files["csv"].write_text("q,a\n" + "".join(f"\"{r['q']}\",{r['a']}\n" for r in TEST_ROWS))
    return files


def grpo_options(**data) -> ScaffoldOptions:
    fields = {"prompt": "q", "answer": "meta.gold"}
    return ScaffoldOptions(kind="grpo", data=DataOptions(**{"source": "rows.parquet", "fields": fields, **data}))


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "json", "csv"])
def test_the_data_step_converts_each_file_format_with_the_sources_mapping(fmt, tmp_path):
    files = write_sources(tmp_path)
    options = grpo_options(chat_template=True, system_prompt="Be brief.", max_samples=4,
                           fields={"prompt": "q", "answer": "a"} if fmt == "csv" else {"prompt": "q", "answer": "meta.gold"})
    script = tmp_path / "prepare_data.py"
    write_scripts(script.parent, render_prepare_data(options), script.name)
    done = run(script, "--source", str(files[fmt]))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert len(rows) == 4  # max_samples: the first rows, as OpenRLHF's --max_samples takes them
    assert rows[0]["prompt"] == [{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "What is 0 plus 2?"}]
    assert [r["answer"] for r in rows] == ["2", "3", "4", "5"]
    assert f"DATA rows=4 source={files[fmt]}" in done.stdout


def test_train_py_reads_the_source_file_directly_and_a_converted_file_unchanged(
    tmp_path, tiny_tokenizer_dir, capsys, monkeypatch
):
    files = write_sources(tmp_path)
    options = grpo_options(chat_template=True, answer_after="plus")
    train, prepare = tmp_path / "train.py", tmp_path / "prepare_data.py"
    write_scripts(train.parent, render_scaffold(options), train.name)
    write_scripts(prepare.parent, render_prepare_data(options), prepare.name)
    assert run(prepare, "--source", str(files["parquet"])).returncode == 0
    for data in (files["parquet"], tmp_path / "train.jsonl"):
        code, out = run_main(train, ["--dry-run", "--data", str(data), "--tokenizer", tiny_tokenizer_dir], capsys,
                             monkeypatch)
        assert code == 0, out
        assert "DRYRUN ok kind=grpo rows=6" in out
        prompt = json.loads(out.split("PROMPT ", 1)[1].splitlines()[0])
        assert prompt.startswith("<|im_start|>user\nWhat is 0 plus 2?") and prompt.endswith("assistant\n")


def test_a_hub_dataset_offline_says_what_to_run(tmp_path, capsys, monkeypatch):
    script = tmp_path / "prepare_data.py"
    options = ScaffoldOptions(kind="sft", data=DataOptions(source="nobody/no-such-set"))
    write_scripts(script.parent, render_prepare_data(options), script.name)
    done = run(script)
    assert done.returncode != 0 and not (tmp_path / "train.jsonl").exists()
    assert "Could not load nobody/no-such-set from the Hub" in done.stderr
    assert "run `python prepare_data.py` where the Hub is reachable" in done.stderr and "--source FILE" in done.stderr
    train = tmp_path / "train.py"
    options = ScaffoldOptions(kind="sft", data=DataOptions(source="nobody/no-such-set", file="train.jsonl"))
    write_scripts(train.parent, render_scaffold(options), train.name)
    code, out = run_main(train, ["--steps", "1"], capsys, monkeypatch)
    assert code != 0
    assert "No training data: run `python prepare_data.py` (nobody/no-such-set -> train.jsonl)" in out


def dry_run_rows(tmp_path: Path, kind: str, rows: list[dict], tokenizer: str, capsys, monkeypatch, **data) -> str:
    source = tmp_path / "source.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = tmp_path / f"train_{kind}.py"
    write_scripts(tmp_path, render_scaffold(ScaffoldOptions(kind=kind, data=DataOptions(**data))), script.name)
    code, out = run_main(script, ["--dry-run", "--data", str(source), "--tokenizer", tokenizer], capsys, monkeypatch)
    assert code == 0, out
    return out


def test_trl_preference_formats_become_pairs(tmp_path, tiny_tokenizer_dir, capsys, monkeypatch):
    user, good, bad = {"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Hello!"}, \
        {"role": "assistant", "content": "Go away."}
    implicit = [{"chosen": [user, good], "rejected": [user, bad]}] * 2  # the prompt is the shared prefix
    out = dry_run_rows(tmp_path, "dpo", implicit, tiny_tokenizer_dir, capsys, monkeypatch)
    assert "DRYRUN ok kind=dpo rows=2" in out and json.loads(out.split("CHOSEN ", 1)[1].splitlines()[0]) == \
        "Hello!<|im_end|>\n"
    unpaired = [{"prompt": "Say hi:", "completion": " hi", "label": True},
                {"prompt": "Say hi:", "completion": " no", "label": False},
                {"prompt": "Say yes:", "completion": " yes", "label": True}]
    out = dry_run_rows(tmp_path, "dpo", unpaired, tiny_tokenizer_dir, capsys, monkeypatch)
    assert "note: 3 unpaired rows -> 1 pairs (1 without a partner)" in out and "rows=1" in out


def test_sft_source_formats(tmp_path, tiny_tokenizer_dir, capsys, monkeypatch):
    # verl's SFT parquet: prompt and response under extra_info, the prompt as a user message.
    nested = [{"extra_info": {"question": "2+2?", "answer": "4"}}]
    out = dry_run_rows(tmp_path, "sft", nested, tiny_tokenizer_dir, capsys, monkeypatch, chat_template=True,
                       fields={"prompt": "extra_info.question", "completion": "extra_info.answer"})
    assert json.loads(out.split("TARGET ", 1)[1].splitlines()[0]) == "4<|im_end|>\n"
    # OpenRLHF's --input_template on plain text, and TRL's conversational prompt-completion.
    templated = [{"input": "2+2?", "output": " 4"}]
    out = dry_run_rows(tmp_path, "sft", templated, tiny_tokenizer_dir, capsys, monkeypatch, prompt_template="User: {}\nAssistant:",
                       fields={"prompt": "input", "completion": "output"})
    assert json.loads(out.split("PROMPT ", 1)[1].splitlines()[0]) == "User: 2+2?\nAssistant:"
    # A template whose placeholder comes first (issue 22: it was dropped, every prompt "started with" "").
    boxed = "{} Put the answer in \\boxed{}."
    out = dry_run_rows(tmp_path, "sft", templated, tiny_tokenizer_dir, capsys, monkeypatch, prompt_template=boxed,
                       fields={"prompt": "input", "completion": "output"})
    assert json.loads(out.split("PROMPT ", 1)[1].splitlines()[0]) == "2+2? Put the answer in \\boxed{}."
    conversational = [{"prompt": [{"role": "user", "content": "2+2?"}],
                       "completion": [{"role": "assistant", "content": "4"}]}]
    out = dry_run_rows(tmp_path, "sft", conversational, tiny_tokenizer_dir, capsys, monkeypatch, fields={})
    assert json.loads(out.split("TARGET ", 1)[1].splitlines()[0]) == "4<|im_end|>\n"


# --- the learning-rate schedule --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "warmup", "factory"),
    [("linear", 3, "get_linear_schedule_with_warmup"), ("cosine", 4, "get_cosine_schedule_with_warmup"),
     ("constant", 2, "get_constant_schedule_with_warmup")],
)
def test_learning_rate_schedule_matches_transformers(kind, warmup, factory, tmp_path):
    import torch
    import transformers

    script = tmp_path / "train.py"
    options = ScaffoldOptions(kind="sft", lr_schedule=kind, warmup_steps=warmup)
    write_scripts(script.parent, render_scaffold(options), script.name)
    module = load_module(script, f"schedule_{kind}")
    total, base = 20, 2e-4
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base)
    args = (optimizer, warmup) if kind == "constant" else (optimizer, warmup, total)
    scheduler = getattr(transformers, factory)(*args)
    expected = []
    for _ in range(total):
        expected.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    from mint import types

    # As train.py calls it: its peak Adam settings and its LR_SCHEDULE constant, through mint_run.adam_at.
    peak = types.AdamParams(learning_rate=base)
    got = [module.adam_at(peak, step, total, module.LR_SCHEDULE).learning_rate for step in range(1, total + 1)]
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_loss_scales_turn_the_sum_into_the_sources_average(tmp_path):
    scales = {}
    for mode in ("sum", "token_mean", "sequence_mean", "constant"):
        script = tmp_path / f"train_{mode}.py"
        options = ScaffoldOptions(kind="grpo", loss_normalization=mode, max_tokens=10)
        write_scripts(script.parent, render_scaffold(options), script.name)
        module = load_module(script, f"scales_{mode}")
        scales[mode] = module.loss_scales([2, 6], module.LOSS_NORMALIZATION, module.MAX_TOKENS)
    assert scales["sum"] == [1.0, 1.0]
    assert scales["token_mean"] == [1 / 8, 1 / 8]  # every token of the batch weighs the same
    assert scales["sequence_mean"] == [1 / 4, 1 / 12]  # each sequence weighs the same
    assert scales["constant"] == [1 / 20, 1 / 20]  # Dr. GRPO: max tokens x sequences


# --- --parity-dump ---------------------------------------------------------------------------------


def server_env(server) -> dict[str, str]:
    from mint_local.testing import TEST_API_KEY

    env = offline_env()
    env.update(MINT_BASE_URL=server.base_url, MINT_API_KEY=TEST_API_KEY, PYTHONUNBUFFERED="1")
    return env


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "throughput"), [("sft", False), ("grpo", False), ("grpo", True), ("dpo", False),
                                                  ("distill", False)])
def test_parity_dump_writes_the_first_step_and_stops_before_optim_step(kind, throughput, tmp_path, mint_local_server):
    script = tmp_path / "train.py"
    write_scripts(script.parent, render_scaffold(ScaffoldOptions(kind=kind, throughput=throughput,
                                                      loss_normalization="token_mean" if kind != "dpo" and
                                                      kind != "distill" else None)), script.name)
    dump, log_dir = tmp_path / "dump.json", tmp_path / "log"
    done = run(script, "--smoke", "--base-model", mint_local_server.model_name, "--log-dir", str(log_dir),
               "--parity-dump", str(dump), env=server_env(mint_local_server))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    record = json.loads(dump.read_text())
    assert record["kind"] == kind and record["datums"] and record["rows"]
    # No training step and no checkpoint: the run stopped after the one forward_backward.
    assert "METRIC" not in done.stdout and not (log_dir / "checkpoints.jsonl").exists()
    assert f"PARITY path={dump}" in done.stdout
    for datum in record["datums"]:
        inputs = datum["loss_fn_inputs"]
        assert len(datum["model_input"]) == len(inputs["target_tokens"]) == len(inputs["weights" if "weights" in inputs
                                                                                 else "advantages"])
        assert datum["model_input"][1:] == inputs["target_tokens"][:-1]  # next-token shifted
    if kind == "sft":
        assert record["loss_fn"] == "cross_entropy" and math.isfinite(record["loss_sum"])
        # token_mean: the weights of the batch sum to 1, so loss:sum is the mean NLL per trained token.
        assert sum(sum(d["loss_fn_inputs"]["weights"]) for d in record["datums"]) == pytest.approx(1.0)
    if kind == "grpo":
        assert record["loss_fn"] == "importance_sampling" and "logprobs" in record["datums"][0]["loss_fn_inputs"]
        advantages = [a for d in record["datums"] for a in d["loss_fn_inputs"]["advantages"] if a]
        assert advantages and math.isfinite(record["loss_sum"])
    if kind == "dpo":
        assert record["loss_fn"] == "dpo" and len(record["datums"]) == 2 * len(record["rows"])
        assert all(math.isfinite(d["reference_logprob_sum"]) for d in record["datums"])
        assert "dpo_loss" in record["metrics"]
    if kind == "distill":
        assert record["loss_fn"] == "reverse_kl" and record["loss_fn_config"] == {"temperature": 1.0}


# --- a reward that is wrong ----------------------------------------------------------------------


def smoke_with_reward(tmp_path: Path, body: str):
    """A smoke verdict for a grpo train.py whose reward is `def score(completion, answer): <body>`."""
    from mint_migrate import smoke

    (tmp_path / "my_reward.py").write_text(f"def score(completion, answer):\n    {body}\n")
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"prompt": f"{i} + 1 =", "answer": str(i + 1)}) + "\n"
                                                 for i in range(4)))
    options = ScaffoldOptions(kind="grpo", data=DataOptions(source="data.jsonl", file="data.jsonl"),
                              reward=RewardOptions(style="plain", file="my_reward.py", functions=["score"]))
    script = tmp_path / "train.py"
    write_scripts(script.parent, render_scaffold(options), script.name)
    try:
        return smoke.run_smoke(script, steps=2, timeout_s=300)
    finally:
        smoke.stop_local_servers()


@pytest.mark.slow
def test_a_reward_of_the_wrong_type_is_reported_as_such(tmp_path):
    verdict = smoke_with_reward(tmp_path, "return 'yes' if answer else 'no'")
    assert not verdict.passed and verdict.ran == "your data (4 rows of data.jsonl), your reward (score from my_reward.py)"
    [error] = verdict.errors
    assert error.kind == "reward_function" and "reward score returned 'yes' (str), not a number" in error.message


@pytest.mark.slow
def test_a_reward_that_never_varies_is_reported_as_such(tmp_path):
    verdict = smoke_with_reward(tmp_path, "return 0.5")
    assert verdict.passed and (verdict.reward_calls, verdict.reward_distinct) == (16, 1)
    assert any("returned the same value (0.5) for all 16 answers" in note for note in verdict.notes)
