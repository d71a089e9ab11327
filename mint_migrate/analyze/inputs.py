"""The input files of one migration: the primary file, its companions, and how they link.

A launch script names the Python script it runs and the config file it passes; those are read
too when they were given with --config or sit where the command says. Paths in reported sources
are relative to the primary file's folder.
"""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from mint_migrate.analyze.algorithm_names import algorithm_in_name
from mint_migrate.analyze.evidence import Level, Value
from mint_migrate.analyze.hydra import compose, hydra_main
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.shell import Command, ShellScript
from mint_migrate.analyze.usage import usage_commands
from mint_migrate.analyze.yamlconf import YamlConfig
from mint_migrate.errors import MintMigrateError
from mint_migrate.pyindex import dotted_name
from mint_migrate.workspace import read_text_checked

Kind = Literal["python", "shell", "yaml"]
_SUFFIXES: dict[str, Kind] = {".py": "python", ".sh": "shell", ".bash": "shell", ".zsh": "shell",
                              ".slurm": "shell", ".sbatch": "shell",  # batch jobs are shell scripts
                              ".yaml": "yaml", ".yml": "yaml", ".json": "yaml"}
# Flags that point a training script at its config file.
CONFIG_FLAGS = {"config", "config_file", "config_path", "config_name", "cfg", "recipe"}
# Config files that configure the launcher or the cluster, not the training run.
_INFRA_KEYS = {"distributed_type", "compute_environment", "zero_optimization", "deepspeed_config",
               "fsdp_config.fsdp_sharding_strategy", "train_micro_batch_size_per_gpu", "zero_stage"}


@dataclass
class InputFile:
    path: Path
    label: str
    kind: Kind
    primary: bool
    python: PySource | None = None
    shell: ShellScript | None = None
    yaml: YamlConfig | None = None
    auto: bool = False  # found from the inputs (named by a command or script, or the app beside a config)
    launched_by: Command | None = None  # the launch command that runs this script
    example: Command | None = None  # else: the usage command quoted in its docstring, if any
    text: str = ""  # the file as read, for the lines a reader is pointed to

    @property
    def is_infra_config(self) -> bool:
        """An accelerate / DeepSpeed config: cluster settings, not training settings."""
        return self.yaml is not None and any(
            k.split(".")[0] in _INFRA_KEYS or k in _INFRA_KEYS for k in self.yaml.keys()  # noqa: SIM118 - YamlConfig, not a dict
        )


@dataclass
class Project:
    primary: InputFile
    files: list[InputFile] = field(default_factory=list)
    launches: list[tuple[Command, InputFile | None]] = field(default_factory=list)
    guessed: str | None = None  # set by detect.py: the framework is a guess, and why
    # a hydra primary config composed with a launch's choices when the script it configures is missing
    hydra: YamlConfig | None = None

    def hydra_configs(self) -> list[YamlConfig]:
        """Every composed hydra config: the scripts' own, and the one composed for a missing script."""
        composed = [f.python.hydra for f in self.pythons() if f.python.hydra is not None]
        return composed + ([self.hydra] if self.hydra is not None else [])

    @property
    def base_dir(self) -> Path:
        return self.primary.path.parent

    def pythons(self) -> list[InputFile]:
        return [f for f in self.files if f.python is not None]

    def yamls(self, *, training: bool = True) -> list[InputFile]:
        return [f for f in self.files if f.yaml is not None and (not training or not f.is_infra_config)]

    def infra_configs(self) -> list[InputFile]:
        return [f for f in self.files if f.yaml is not None and f.is_infra_config]

    def commands(self) -> list[Command]:
        return [c for c, _ in self.launches]

    def main_command(self) -> Command | None:
        return self.launches[0][0] if self.launches else None

    def find(self, written: str, relative_to: Path | None = None) -> InputFile | None:
        """The loaded file a command refers to by path (or, failing that, by file name)."""
        base = relative_to or self.base_dir
        wanted = (base / os.path.expanduser(written)).resolve()
        for f in self.files:
            if f.path.resolve() == wanted:
                return f
        name = Path(written).name
        matches = [f for f in self.files if f.path.name == name]
        return matches[0] if len(matches) == 1 else None

    def label_for(self, path: Path) -> str:
        if path.resolve() == self.primary.path.resolve():
            return path.name
        return Path(os.path.relpath(path.resolve(), self.base_dir.resolve())).as_posix()


def kind_of(path: Path, text: str) -> Kind | None:
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind:
        return kind
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        if "python" in first:
            return "python"
        if any(sh in first for sh in ("bash", "/sh", "zsh", "env sh")):
            return "shell"
    return None


def _peek(path: Path) -> str:
    """A file the analyzer only looks into to choose inputs: '' when it cannot be read, or lies
    outside an MCP tool's read fence (a link to elsewhere)."""
    try:
        return read_text_checked(path, errors="replace")
    except (MintMigrateError, OSError):
        return ""


def _read(path: Path) -> str:
    try:
        return read_text_checked(path)  # an MCP tool's read fence, if any
    except FileNotFoundError as exc:
        raise MintMigrateError(f"cannot read {path}: no such file. Check the path (relative paths are taken "
                               "from the workspace root).") from exc
    except IsADirectoryError as exc:
        raise MintMigrateError(f"{path} is a directory; pass the training script, launch script or "
                               "config file inside it.") from exc
    except UnicodeDecodeError as exc:
        raise MintMigrateError(f"{path}:1: not a UTF-8 text file; pass a Python, shell or YAML file.") from exc


def _parse(f: InputFile, text: str) -> None:
    f.text = text
    if f.kind == "python":
        f.python = PySource(text, f.label)
    elif f.kind == "shell":
        f.shell = ShellScript(text, f.label)
    else:
        f.yaml = YamlConfig(text, f.label)


def load_project(source: Path, configs: list[Path], framework_modules: tuple[str, ...] = ()) -> Project:
    """The inputs, parsed and linked. `framework_modules`: the packages the frameworks ship
    (`verl`, `openrlhf`, ...): a `-m` launch of one is its entry point, never a project file to read."""
    source = Path(source)
    text = _read(source)
    kind = kind_of(source, text)
    if kind is None:
        raise MintMigrateError(
            f"{source}:1: unknown file type '{source.suffix or source.name}'; pass a Python script (.py), "
            "a shell launch script (.sh) or a config (.yaml/.yml/.json)."
        )
    primary = InputFile(source, source.name, kind, primary=True)
    project = Project(primary=primary, files=[primary])
    _parse(primary, text)
    for path in configs:
        path = Path(path)
        if path.resolve() == source.resolve():
            continue
        add_file(project, path, auto=False)
    if primary.yaml is not None and not any(f.python or f.shell for f in project.files):
        _find_app(project)
    _follow_sources(project)
    _link_launches(project, framework_modules)
    return project


_CONFIG_MODULES = {"config", "configs", "settings", "hparams", "hyperparams", "params", "arguments", "args"}


def _follow_own_modules(project: Project, entry: InputFile) -> None:
    """A script that hands its run to a trainer of the project's own (`from grpo import GRPO` ...
    `GRPO(...).train()`, `from om_rl.training.trainer import train` ... `train(config)`), or reads its
    settings from a config module of its own (`from config import Config`): that module, found beside
    the script or in a folder above, is read as if it had been given."""
    src = entry.python
    started = {(dotted_name(c.node.func) or "").rpartition(".")[0] for c in src.calls if c.name == "train"}
    for local, qualified in src.imports.items():
        module = qualified.rpartition(".")[0]
        calls = [c for c in src.calls if c.name == local and (dotted_name(c.node.func) or "") == local]
        config_module = module.rsplit(".", 1)[-1].lower() in _CONFIG_MODULES
        # `from config import LR, BATCH` is read, not called; `Trainer(loss=simple_grpo_loss)` is handed on
        if not module or not (calls or config_module or src.name_uses().get(local, 0) > 1):
            continue
        # `train(cfg)`, `from train.pipeline import main` ... `main(args)`, `GRPO(...)` ... `.train()`,
        # `from dpo import DPO`, and the config the run reads (`from config import Config`)
        if "train" in local.lower() or "train" in module.rsplit(".", 1)[-1].lower() \
                or module.split(".")[0] == "train" or any(c.assigned_to in started for c in calls) \
                or algorithm_in_name(local) is not None or config_module:
            written = module.replace(".", "/") + ".py"
            found = project.find(written, entry.path.parent) or python_on_disk(project, entry.path.parent, written)
            if found is None and local[:1].isupper():  # `from rlhf.algorithms import SFTTrainer`: a package's
                written = f"{module.replace('.', '/')}/{_snake(local)}.py"  # rlhf/algorithms/sft_trainer.py
                found = project.find(written, entry.path.parent) or python_on_disk(project, entry.path.parent, written)
            if found is not None and found.python is not None:
                found.python.imported_by(src, module)


def _snake(name: str) -> str:
    """`SFTTrainer` -> `sft_trainer`, `GRPOTrainer` -> `grpo_trainer`: the module a class usually lives in."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


_SOURCES = re.compile(r"^\s*(source|\.)\s+\S|\.(sh|bash)\b", re.M)


def _follow_sources(project: Project) -> None:
    """Launchers that `source` a shared file of variables (`source scripts/base_args.sh`) or run
    another script (`bash scripts/train.sh`): read again with that file run in place (or as a child
    shell), when it is an input or lies beside the launcher or in a folder above it."""
    for f in list(project.files):
        if f.shell is None or not _SOURCES.search(f.text):
            continue

        def sourced(written: str, near: Path = f.path.parent) -> tuple[str, str] | None:
            found = project.find(written, near)
            if found is None and not written.startswith(("/", "~")):  # the project's files, never ~/.bashrc
                found = on_disk(project, near, written, (".sh", ".bash"))
            if found is None and written.startswith("/") and "/." not in written:
                # `bash /home/me/proj/scripts/grpo.sh`: another machine's checkout, found by its last
                # parts in this one (never the path itself: this machine's /etc is not the project's)
                found = on_disk(project, near, written, (".sh", ".bash"), as_written=False)
            return (found.text, found.label) if found is not None and found.shell is not None else None

        f.shell = ShellScript(f.text, f.label, sources=sourced)


def _find_app(project: Project) -> None:
    """A config given alone: the script in its folder that names it (`main.py` reading `--config
    qwen3_8b.yaml`, or any script that mentions the file), read as if it had been given."""
    primary = project.primary
    folder = primary.path.parent
    scripts = sorted(p for p in folder.glob("*.py") if p.is_file())
    named = [p for p in scripts if primary.path.name in _peek(p)]
    candidates = named or [p for p in scripts if p.name in {"main.py", "train.py"}]
    if len(candidates) == 1 or (candidates and candidates[0].name == "main.py"):
        add_file(project, candidates[0], auto=True)


def add_file(project: Project, path: Path, *, auto: bool) -> InputFile:
    text = _read(path)
    kind = kind_of(path, text)
    if kind is None:
        raise MintMigrateError(
            f"{path}:1: unknown file type '{path.suffix or path.name}'; companions must be Python, shell or YAML."
        )
    f = InputFile(path, project.label_for(path), kind, primary=False, auto=auto)
    _parse(f, text)
    project.files.append(f)
    return f


def _includes(project: Project, label: str) -> list[str]:
    """What the shell input `label` runs in itself (two files that run each other both launch)."""
    return next((f.shell.included for f in project.files if f.label == label and f.shell is not None), [])


def _link_launches(project: Project, framework_modules: tuple[str, ...]) -> None:
    """Connect each launch command to the script it runs, and hand that script its flags."""
    # A script another input runs (`bash scripts/train.sh` after its exports) launches there, with
    # what that input set; read alone, its variables would be the machine's.
    shells = [f for f in project.files if f.shell is not None]
    included = {label for f in shells for label in f.shell.included if f.label not in _includes(project, label)}
    for f in list(project.files):
        if f.shell is None or f.label in included:
            continue
        for command in f.shell.commands:
            script_file = None
            if command.script:
                script_file = project.find(command.script, f.path.parent) \
                    or python_on_disk(project, f.path.parent, command.script)
            elif command.module:  # `torchrun -m less.train.train`: the project's own module
                script_file = _own_module(project, f, command.module, framework_modules)
            for arg in [*command.launcher_args, *command.flags()]:
                if arg.name in CONFIG_FLAGS and arg.value is not None and isinstance(arg.value.value, str):
                    _follow_config(project, f, arg.value.value)
                elif arg.name in CONFIG_FLAGS and arg.value is None and _OWN_FOLDER.match(arg.raw or ""):
                    _follow_config(project, f, arg.raw)  # only the machine knows $0, but the file is beside it
            named = {a.name: a.value.value for a in command.flags() if a.value is not None}
            hydra_name = named.get("config_name")
            if isinstance(hydra_name, str) and not hydra_name.endswith((".yaml", ".yml")):
                # hydra's `--config-path=DIR --config-name=NAME`: DIR/NAME.yaml
                _follow_config(project, f, f"{named.get('config_path', '.')}/{hydra_name}.yaml")
            for arg in command.args:  # `run_sft.py recipes/m/sft/config.yaml`: a recipe given by position
                written = str(arg.value.value) if arg.value is not None else ""
                if arg.kind == "positional" and written.endswith((".yaml", ".yml")):
                    _follow_config(project, f, written)
            project.launches.append((command, script_file))
            if script_file is not None and script_file.python is not None and script_file.launched_by is None:
                script_file.launched_by = command
                script_file.python.use_command_line(command_flags(command))
    _compose_for_missing_script(project)
    for f in [g for g in project.pythons() if g.primary or g.launched_by is not None]:
        _follow_own_modules(project, f)
    for f in project.pythons():
        if f.launched_by is None:
            flags, f.example = example_flags(f.python)
            importer = _launched_importer(project, f) if not flags and f.example is None else None
            if importer is not None:  # `import trainers` in the launched train.py: one config, one command line
                flags = command_flags(importer.launched_by)
            f.python.use_command_line(flags)
            if f.example is not None:
                for arg in f.example.flags():
                    if arg.name in CONFIG_FLAGS and arg.value is not None and isinstance(arg.value.value, str):
                        if project.find(arg.value.value, f.path.parent) is None:
                            candidate = f.path.parent / arg.value.value
                            if candidate.is_file() and candidate.suffix.lower() in {".yaml", ".yml"}:
                                add_file(project, candidate, auto=True)
        if f.primary or f.launched_by is not None:
            _follow_default_config(project, f)
        f.python.use_configs([y.yaml for y in project.yamls()])
        hydra = hydra_main(f.python)
        if hydra is not None:
            config_dir, name = hydra
            composed = compose(f.path.parent / config_dir, name, f.python.cli, project.label_for)
            if composed is not None:
                f.python.use_hydra(composed)


def _follow_default_config(project: Project, f: InputFile) -> None:
    """The config a script reads when run as given: its `--config` option's value from the command
    line, else its default (`parser.add_argument("--config", default="configs/grpo.yaml")`), found
    beside the script or in a folder above it (scripts run from the project's root)."""
    for name in CONFIG_FLAGS & set(f.python.argparse):
        value = f.python.argparse_value(name)
        written = value.value if value is not None else None
        if isinstance(written, str) and written.endswith((".yaml", ".yml", ".json")) \
                and project.find(written, f.path.parent) is None:
            on_disk(project, f.path.parent, written, (".yaml", ".yml", ".json"))


def _compose_for_missing_script(project: Project) -> None:
    """A launch of a hydra app whose script was not given (`python src/train.py dataset=persona
    model=llama`) with its primary config given (a YAML with a `defaults:` list): the config it would
    receive, composed from the config's folder with the launch's group choices."""
    missing = [c for c, script in project.launches if c.script and script is None]
    roots = [y for y in project.yamls() if isinstance(getattr(y.yaml.get("defaults"), "value", None), list)]
    if not missing or not roots:
        return
    root = min(roots, key=lambda y: len(y.path.parts))  # the primary config sits above its groups
    project.hydra = compose(root.path.parent, root.path.name, command_flags(missing[0]), project.label_for)


# How far above an input the folder its paths are written from may be: `scripts/train.sh` run from
# the project's root, `examples/x/scripts/sft.sh` from `examples/x`.
_LAUNCH_DEPTH = 3


def python_on_disk(project: Project, near: Path, written: str) -> InputFile | None:
    """A Python file a path in the inputs names (a launched script, a reward module), found in `near`
    or a folder above it (launchers usually live in `scripts/` and run from the project's root), read
    as if it had been given."""
    return on_disk(project, near, written, (".py",))


def on_disk(project: Project, near: Path, written: str, suffixes: tuple[str, ...], *,
            as_written: bool = True) -> InputFile | None:
    """A file with one of `suffixes` that a path in the inputs names, found in `near` or a folder above it.
    A path from another machine's root (`/gpfs/work/me/proj/src/train.py`) is looked for by its last
    parts (`src/train.py`, then `train.py`) in the same folders: the project, checked out elsewhere;
    `as_written=False` looks only there, never at the absolute path itself."""
    names = [written] if as_written else []
    if written.startswith("/"):
        parts = PurePosixPath(written).parts[1:]
        names += ["/".join(parts[-k:]) for k in range(min(3, len(parts) - 1), 0, -1)]
    for name in names:
        folder = near.resolve()
        for _ in range(_LAUNCH_DEPTH + 1):
            candidate = folder / os.path.expanduser(name)
            if candidate.suffix in suffixes and candidate.is_file():
                try:
                    return add_file(project, candidate, auto=True)
                except MintMigrateError:  # outside an MCP tool's read fence, or unreadable: not ours to read
                    return None
            if folder.parent == folder:
                break
            folder = folder.parent
    return None


def _own_module(project: Project, launcher: InputFile, module: str,
                framework_modules: tuple[str, ...]) -> InputFile | None:
    """The file of a module the launcher runs with `-m`, given or on disk above the launcher, unless
    the module is a framework's own entry point (`verl.trainer.main_ppo`): that one is read by name,
    even where the project vendors the framework."""
    if any(module == name or module.startswith(name + ".") for name in framework_modules):
        return None
    written = module.replace(".", "/") + ".py"
    found = project.find(written, launcher.path.parent) or python_on_disk(project, launcher.path.parent, written) \
        or python_on_disk(project, launcher.path.parent, "src/" + written)  # the src layout, installed with pip -e
    return found if found is not None and found.python is not None else None


def _launched_importer(project: Project, f: InputFile) -> InputFile | None:
    """The one launched script that imports the helper module `f` (`import trainers`,
    `from src.trainers import ...`): the config it reads is the same object, with the same overrides."""
    stem = f.path.stem
    found = [g for g in project.pythons() if g.launched_by is not None and g is not f and any(
        module == stem or module.endswith("." + stem) for module, _line in g.python.index.imported)]
    return found[0] if len(found) == 1 else None


# `$(dirname "$0")/`, `$(cd "$(dirname "$0")" && pwd)/`, `${0%/*}/`: the launcher's own folder.
_OWN_FOLDER = re.compile(r'^(\$\(dirname "?\$0"?\)|\$\(cd "?\$\(dirname "?\$0"?\)"? && pwd\)|\$\{0%/\*\}|'
                         r'\$\{BASH_SOURCE\[0\]%/\*\})/')


def _follow_config(project: Project, shell_file: InputFile, written: str) -> None:
    """The config file a launch names, read as if it had been given: beside the launcher or in a
    folder above it (`bash scripts/train.sh` run from the project's root, `--config configs/x.yaml`)."""
    written = _OWN_FOLDER.sub("", written)
    if project.find(written, shell_file.path.parent) is not None:
        return
    candidate = shell_file.path.parent / os.path.expanduser(written)
    if candidate.is_file() and candidate.suffix.lower() in {".yaml", ".yml", ".json"}:
        add_file(project, candidate, auto=True)  # the path as written: outside an MCP tool's fence, say so
        return
    on_disk(project, shell_file.path.parent, written, (".yaml", ".yml", ".json"))


# Flags that name a model, a file or a folder: their value as written is worth showing unresolved.
_PATH_LIKE = re.compile(r"model|path|dir|file|data")


def command_flags(command: Command) -> dict[str, Value]:
    """A command's flags and overrides by normalised name (the last one wins, as in argparse)."""
    out: dict[str, Value] = {}
    for arg in command.args:
        if arg.kind in {"flag", "override"} and arg.value is not None:
            out[arg.name] = arg.value
        elif arg.kind in {"flag", "override"} and _PATH_LIKE.search(arg.name) \
                and (written := arg.setting_literal(Level.COMMAND)) is not None:
            # `--model_name "$MODEL_PATH"` that only the machine resolves: still not the script's default
            out[arg.name] = written
    return out


def example_flags(src: PySource) -> tuple[dict[str, Value], Command | None]:
    """The flags of the first launch command quoted in a script's docstring (usage examples)."""
    commands = usage_commands(src)
    if not commands:
        return {}, None
    return command_flags(commands[0]), commands[0]

