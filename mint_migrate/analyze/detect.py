"""Which framework a set of inputs belongs to, decided by the primary file through the registry."""

from mint_migrate.analyze.evidence import Loc
from mint_migrate.analyze.inputs import InputFile, Project
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.registry import analyzers
from mint_migrate.analyze.shell import Command
from mint_migrate.errors import MintMigrateError
from mint_migrate.frameworks import framework_list

# A launch of a script that was not given still says TRL when it passes TRL's own flags.
_TRL_FLAGS = {"model_name_or_path", "per_device_train_batch_size", "num_generations", "max_completion_length",
              "dataset_name", "use_peft", "lora_r", "gradient_accumulation_steps", "num_train_epochs"}


def detect(project: Project) -> tuple[str, Loc]:
    primary = project.primary
    if primary.shell is not None:
        return _from_shell(project, primary)
    if primary.python is not None:
        found = framework_of_python(primary.python) or _from_companions(project)
        if found is None:
            raise MintMigrateError(
                f"{primary.label}:1: no training setup found: no {framework_list()} import, and no PyTorch "
                "training loop (optimizer + loss.backward()). Pass the script that trains."
            )
        return found
    return _from_yaml(project, primary)


def framework_of_python(src: PySource) -> tuple[str, Loc] | None:
    for analyzer in analyzers():
        loc = analyzer.python_signal(src)
        if loc is not None:
            return analyzer.name, loc
    return None


def _from_companions(project: Project) -> tuple[str, Loc] | None:
    """The primary file says nothing (a launcher module importing the project's own trainer): the
    other Python files given decide."""
    for f in project.pythons():
        found = framework_of_python(f.python)
        if found is not None:
            return found
    return None


def framework_of_command(command: Command, script: InputFile | None) -> str | None:
    for analyzer in analyzers():
        if analyzer.detect_command(command, script):
            return analyzer.name
    if script is not None and script.python is not None:
        found = framework_of_python(script.python)
        return found[0] if found else None
    return None


def _from_shell(project: Project, primary: InputFile) -> tuple[str, Loc]:
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
    if script is not None and _from_companions(project) is not None:
        return _from_companions(project)[0], command.loc
    if (command.script or command.module) and script is None:
        flags = {a.name for a in command.flags()}
        if flags & _TRL_FLAGS:
            return "trl", command.loc
        for y in project.yamls():  # the config it is handed says whose it is
            for analyzer in analyzers():
                if analyzer.detect_config(y.yaml.keys()):
                    return analyzer.name, command.loc
        if command.script:
            raise MintMigrateError(
                f"{command.loc}: the command runs {command.script}, which was not given and was not found next to "
                f"{primary.label}; pass it with --config {command.script}."
            )
    raise MintMigrateError(
        f"{command.loc}: {command.text} is not a {framework_list()} training entry point; pass the training "
        "script it runs with --config."
    )


def _from_yaml(project: Project, primary: InputFile) -> tuple[str, Loc]:
    """A config as the primary input: the script or launcher beside it decides when there is one
    (given as a companion, or found in the same folder); else the config's own keys."""
    for f in project.files:
        if f is primary:
            continue
        if f.shell is not None and project.launches:
            try:
                return _from_shell(project, f)
            except MintMigrateError:
                continue
        if f.python is not None:
            found = framework_of_python(f.python)
            if found is not None:
                return found
    keys = primary.yaml.keys()
    first = next(iter(primary.yaml.values.values())).loc if keys else Loc(primary.label, 1)
    if primary.is_infra_config:
        raise MintMigrateError(
            f"{primary.label}:1: this is an accelerate / DeepSpeed config (cluster settings, server-side on MinT), "
            "not a training config. Migrate the training script and pass this file with --config."
        )
    for analyzer in analyzers():
        if analyzer.detect_config(keys):
            return analyzer.name, first
    raise MintMigrateError(
        f"{primary.label}:{first.line}: unrecognised config: its keys match no {framework_list()} config, and no "
        "training script was found next to it. Pass the training or launch script, with this file as --config."
    )
