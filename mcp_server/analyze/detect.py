"""Which framework a set of inputs belongs to, decided by the primary file."""

from mcp_server.analyze import openrlhf, pytorch, torchforge, trl, verl
from mcp_server.analyze.evidence import Loc
from mcp_server.analyze.inputs import InputFile, Project
from mcp_server.analyze.pysource import PySource
from mcp_server.analyze.shell import Command
from mcp_server.errors import MintMigrateError
from mcp_server.plan import Framework

# Specific frameworks first: a TRL or torchforge script imports torch too.
_IMPORTS: list[tuple[tuple[str, ...], Framework]] = [
    (("tinker", "tinker_cookbook", "mint"), "tinker"),
    (("forge", "monarch", "apps.grpo", "apps.sft"), "torchforge"),
    (("verl",), "verl"),
    (("openrlhf",), "openrlhf"),
    (("trl",), "trl"),
]
_TRL_FLAGS = {"model_name_or_path", "per_device_train_batch_size", "num_generations", "max_completion_length",
              "dataset_name", "use_peft", "lora_r", "gradient_accumulation_steps", "num_train_epochs"}


def detect(project: Project) -> tuple[Framework, Loc]:
    primary = project.primary
    if primary.shell is not None:
        return _from_shell(project, primary)
    if primary.python is not None:
        found = framework_of_python(primary.python)
        if found is None:
            raise MintMigrateError(
                f"{primary.label}:1: no training setup found: no trl / verl / openrlhf / torchforge / tinker import, "
                "and no PyTorch training loop (optimizer + loss.backward()). Pass the script that trains."
            )
        return found
    return _from_yaml(primary)


def framework_of_python(src: PySource) -> tuple[Framework, Loc] | None:
    for prefixes, framework in _IMPORTS:
        loc = src.imports_module(*prefixes)
        if loc is not None:
            return framework, loc
    if (src.imports_module("torch", "transformers", "peft") is not None and pytorch.is_training_script(src)) \
            or src.calls_named("Trainer", "Seq2SeqTrainer"):
        return "pytorch", src.imports_module("torch", "transformers", "peft") or Loc(src.label, 1)
    return None


def framework_of_command(command: Command, script: InputFile | None) -> Framework | None:
    target = command.module or command.script or ""
    if verl.is_verl_command(command):
        return "verl"
    if openrlhf.is_openrlhf_command(command):
        return "openrlhf"
    if target.startswith(("apps.grpo", "apps.sft", "forge.")) or "/apps/grpo/" in target:
        return "torchforge"
    if target.startswith("tinker_cookbook"):
        return "tinker"
    if command.program == "trl":
        return "trl"
    if script is not None and script.python is not None:
        found = framework_of_python(script.python)
        return found[0] if found else None
    return None


def _from_shell(project: Project, primary: InputFile) -> tuple[Framework, Loc]:
    if not project.launches:
        raise MintMigrateError(
            f"{primary.label}:1: no training command found: no python / torchrun / deepspeed / accelerate launch / "
            "ray job submit / trl command line. Pass the script that launches training, or the training script."
        )
    for command, script in project.launches:
        framework = framework_of_command(command, script)
        if framework is not None:
            return framework, command.loc
    command, script = project.launches[0]
    if command.script and script is None:
        flags = {a.name for a in command.flags()}
        if flags & _TRL_FLAGS:
            return "trl", command.loc
        raise MintMigrateError(
            f"{command.loc}: the command runs {command.script}, which was not given and was not found next to "
            f"{primary.label}; pass it with --config {command.script}."
        )
    raise MintMigrateError(
        f"{command.loc}: {command.text} is not a TRL / verl / OpenRLHF / torchforge / Tinker / PyTorch training "
        "entry point; pass the training script it runs with --config."
    )


def _from_yaml(primary: InputFile) -> tuple[Framework, Loc]:
    keys = primary.yaml.keys()
    first = next(iter(primary.yaml.values.values())).loc if keys else Loc(primary.label, 1)
    if primary.is_infra_config:
        raise MintMigrateError(
            f"{primary.label}:1: this is an accelerate / DeepSpeed config (cluster settings, server-side on MinT), "
            "not a training config. Migrate the training script and pass this file with --config."
        )
    if verl.looks_like_config(keys):
        return "verl", first
    if torchforge.looks_like_config(keys):
        return "torchforge", first
    if trl.looks_like_recipe(keys):
        return "trl", first
    raise MintMigrateError(
        f"{primary.label}:{first.line}: unrecognised config: its keys match no TRL recipe, verl hydra config or "
        "torchforge config. Pass the training or launch script instead, with this file as --config."
    )

