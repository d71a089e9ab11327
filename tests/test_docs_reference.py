"""mint_api_reference.txt is exactly what scripts/gen_api_reference.py makes from the installed SDK."""

import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_api_reference.py"
REFERENCE = ROOT / "mint_api_reference.txt"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_api_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(gen) -> str:
    return gen.generate()


def test_committed_reference_matches_the_installed_sdk(generated):
    committed = REFERENCE.read_text(encoding="utf-8")
    assert committed == generated, (
        "mint_api_reference.txt differs from the installed SDK; run: python scripts/gen_api_reference.py"
    )


def test_generation_is_deterministic(gen, generated):
    assert gen.generate() == generated
    assert " at 0x" not in generated


def test_every_public_name_is_documented(generated):
    import mint
    import mint.mint

    for name in mint.__all__:
        assert f"\n  {name}" in generated, f"mint.{name} missing"
    for name in mint.mint.__all__:
        assert f"{name}" in generated, f"mint.mint.{name} missing"
    for name in dir(mint.types):
        obj = getattr(mint.types, name)
        if name.startswith("_") or inspect.ismodule(obj) or name == "annotations":
            continue
        assert f"\n  {name}" in generated, f"mint.types.{name} missing"


def test_signatures_fields_and_return_types_are_there(generated):
    expected = [
        "create_lora_training_client(base_model: str, rank: int = 32, seed: int | None = None, "
        "train_mlp: bool = True, train_attn: bool = True, train_unembed: bool = True, "
        "user_metadata: dict[str, str] | None = None) -> TrainingClient",
        "forward_backward(data: List[types.Datum], loss_fn: types.LossFnType, "
        "loss_fn_config: Dict[str, float] | None = None) -> APIFuture[types.ForwardBackwardOutput]",
        "async forward_backward_async(",
        "sample(prompt: types.ModelInput, num_samples: int, sampling_params: types.SamplingParams, "
        "include_prompt_logprobs: bool = False, topk_prompt_logprobs: int = 0) -> ConcurrentFuture[types.SampleResponse]",
        "LossFnType = Literal['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro']",
        "    stop: Union[str, Sequence[str], Sequence[int], NoneType] = None",
        "    learning_rate: float = 0.0001",
        "  config: extra='ignore', frozen=True",  # SamplingParams drops unknown fields
        "def forward_backward_reverse_kl(training_client: tinker.TrainingClient, *, reference_model_path: str",
        "class RestClient(TelemetryProvider)",
        "get_checkpoint_archive_url_from_tinker_path(tinker_path: str)",
        "    metrics: Dict[str, float] = dict()",
    ]
    for text in expected:
        assert text in generated, text
    # The traps the docs warn about are visible in the reference too: no .loss, no lr=, no alpha=.
    fbo = generated.split("class mint.ForwardBackwardOutput", 1)[1].split("\n\n", 1)[0]
    assert "loss_fn_outputs" in fbo and "\n    loss:" not in fbo
    assert "alpha" not in generated.split("create_lora_training_client(", 1)[1].split("\n", 1)[0]


def test_check_mode_exits_1_on_a_difference_and_0_when_equal(tmp_path, gen, generated, capsys):
    # main() is what `python scripts/gen_api_reference.py` runs (sys.exit(main())); called in-process
    # because each new interpreter pays for importing the SDK again.
    stale = tmp_path / "ref.txt"
    stale.write_text(generated.replace("rank: int = 32", "rank: int = 16", 1), encoding="utf-8")
    assert gen.main(["--check", "--output", str(stale)]) == 1
    out, err = capsys.readouterr()
    assert "rank: int = 32" in out and "out of date" in err

    fresh = tmp_path / "fresh.txt"
    assert gen.main(["--output", str(fresh)]) == 0
    assert fresh.read_text(encoding="utf-8") == generated
    assert gen.main(["--check", "--output", str(fresh)]) == 0
    assert gen.main(["--check", "--output", str(tmp_path / "missing.txt")]) == 1


@pytest.mark.slow
def test_script_runs_as_a_command():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "matches the installed SDK" in done.stdout
