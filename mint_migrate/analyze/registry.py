"""The framework analyzer interface, and the analyzers of the frameworks in mint_migrate/frameworks.py.

An analyzer module `mint_migrate/analyze/<name>.py` defines `ANALYZER = Analyzer(...)`:
- detection: the module prefixes a Python file imports (`imports`), or a custom `detect_python`;
  `detect_command` for a launch command line; `detect_config` for the keys of a YAML config;
- `analyze(project, evidence)`: read the inputs, offer settings and algorithm votes;
- `read_task(project, ev, algorithm, kind, settings, task)`: the user's data, reward and schedule;
- `defaults(algorithm)`: the values the framework uses when the inputs say nothing;
- `reserved_names` (`reserved_in`, for one algorithm): setting-like names that mean something else
  in this framework;
- `optimizer_defaults(algorithm)`: its trainer's Adam settings when the inputs say nothing, by
  types.AdamParams name (beta1, beta2, eps, weight_decay, grad_clip_norm).
"""

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from mint_migrate.analyze.evidence import Evidence, Loc
from mint_migrate.analyze.inputs import InputFile, Project
from mint_migrate.analyze.pyvalues import PySource
from mint_migrate.analyze.shell import Command
from mint_migrate.frameworks import FRAMEWORK_NAMES
from mint_migrate.plan import Algorithm


def _never(*_: object) -> bool:
    return False


def _no_defaults(algorithm: Algorithm) -> dict[str, tuple[object, str]]:
    return {}


@dataclass(frozen=True)
class Analyzer:
    name: str
    signals: str  # what identifies it, for people (SKILL.md's table)
    analyze: Callable[[Project, Evidence], None]
    defaults: Callable[[Algorithm], dict[str, tuple[object, str]]] = _no_defaults
    optimizer_defaults: Callable[[Algorithm], dict[str, tuple[float, str]]] = _no_defaults
    # names that look like a canonical setting but mean something else in this framework: the
    # synonym table never fills a setting from them (the analyzer reads them itself); and the same
    # for one algorithm only (TRL's PPO loads only the tokenizer from model_name_or_path)
    reserved_names: tuple[str, ...] = ()
    reserved_in: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the training loop is the inputs' own code: it reads their YAML configs (a hand-written loop's
    # `yaml.safe_load`), so a key that code never names is never read, and its batch is whatever it
    # draws per step; a framework's trainer reads keys the inputs do not name
    own_config: bool = False
    # the framework has no global batch setting (TRL's trainers take only a per-device batch): a bare
    # `batch_size` handed to a wrapper of it is that per-device batch
    batch_is_per_device: bool = False
    # reads any hand-written loop (the last resort): a file that also imports a framework is that framework's
    generic: bool = False
    # the user's task: (project, ev, algorithm, kind, settings, task) -> None fills task.data, task.reward
    # and task.schedule (mint_migrate/analyze/task.py holds the shared readers and the Task it fills)
    read_task: Callable[..., None] | None = None
    imports: tuple[str, ...] = ()
    detect_python: Callable[[PySource], Loc | None] | None = None
    detect_command: Callable[[Command, InputFile | None], bool] = _never
    detect_config: Callable[[list[str]], bool] = _never

    def python_signal(self, src: PySource) -> Loc | None:
        """Where a Python file shows this framework (an import, a training loop), if it does."""
        if self.detect_python is not None:
            return self.detect_python(src)
        if not self.imports:
            return None
        return src.imports_module(*self.imports) or src.imports_wrapper_of(*self.imports)


@cache
def analyzers() -> tuple[Analyzer, ...]:
    """Every registered analyzer, in detection order."""
    out = []
    for name in FRAMEWORK_NAMES:
        analyzer = importlib.import_module(f"mint_migrate.analyze.{name}").ANALYZER
        if analyzer.name != name:
            raise RuntimeError(f"mint_migrate/analyze/{name}.py defines ANALYZER for '{analyzer.name}'")
        out.append(analyzer)
    return tuple(out)


def analyzer(name: str) -> Analyzer:
    return next(a for a in analyzers() if a.name == name)
