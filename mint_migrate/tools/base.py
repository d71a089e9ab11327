"""What a tool is, once for both front ends.

A tool module declares one pydantic request model (from which server.py builds the MCP input
schema and cli.py the `mint-migrate` flags, and which validates both), the engine call, the
agent-sized result and the CLI's text. The front ends only parse, call and format.

A field's command-line form is declared beside it with `Cli(...)` in its `Annotated` metadata;
`MCP_ONLY` and `CLI_ONLY` keep a field to one front end (pydantic ignores both markers).
"""

import functools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

Front = Literal["mcp", "cli"]
Detail = Literal["summary", "full"]

# An agent's default result: what a call costs its context, at most (the JSON text it reads).
RESULT_BUDGET = 8000
DETAIL_DESCRIPTION = (
    "summary (default): a result sized for an agent's context, with what was left out named in "
    "`omitted`; full: every text and list in full."
)
FULL_HINT = "call again with detail='full' for everything"


@dataclass(frozen=True)
class Cli:
    """A request field on the command line: a positional (flag None) or `flag`; `repeat` for a
    list given one value per flag, `split` for a list given as one shell-quoted string, `invert`
    for a bool the flag turns off (`--no-report` for update_report)."""

    flag: str | None = None
    metavar: str | None = None
    help: str | None = None
    repeat: bool = False
    split: bool = False
    invert: bool = False
    required: bool = False  # a positional the command line needs although the MCP argument is optional


class _Only:
    def __init__(self, front: Front) -> None:
        self.front = front


MCP_ONLY = _Only("mcp")  # an MCP argument with no command-line flag
CLI_ONLY = _Only("cli")  # a command-line flag that is no MCP argument
HIDDEN = _Only("none")  # a field of the engine's model that neither front end offers


def _marker(info: FieldInfo, kind: type) -> Any:
    return next((m for m in info.metadata if isinstance(m, kind)), None)


def cli_form(info: FieldInfo) -> Cli | None:
    """The field's command-line form, or None when it has none."""
    only = _marker(info, _Only)
    if only is not None and only.front != "cli":
        return None
    return _marker(info, Cli) or _DEFAULT_CLI


# A field with no Cli(...) of its own: a positional when required, else `--dashed-name`.
_DEFAULT_CLI = Cli()


def cli_flag(name: str, info: FieldInfo) -> str | None:
    """The field's flag, or None for a positional."""
    form = cli_form(info)
    if form is _DEFAULT_CLI and not info.is_required():
        return "--" + name.replace("_", "-")
    return form.flag if form is not None else None


def schema_metadata(info: FieldInfo) -> list:
    """The field's metadata that shapes its JSON schema (bounds, ...), without the front-end markers."""
    return [m for m in info.metadata if not isinstance(m, (Cli, _Only))]


def on_mcp(info: FieldInfo) -> bool:
    only = _marker(info, _Only)
    return only is None or only.front == "mcp"


class Stopped(Exception):
    """The run was stopped (Ctrl-C, SIGTERM): the CLI prints `result` and exits with `code`."""

    def __init__(self, result: BaseModel, code: int) -> None:
        super().__init__(f"stopped ({code})")
        self.result, self.code = result, code


def problems(exc: ValidationError, request: type[BaseModel]) -> str:
    """A ValidationError as one line the same on both front ends: each argument by its MCP name
    and its flag, what is wrong with it."""
    parts = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else ""
        inner = "".join(f".{part}" for part in error["loc"][1:])  # a field of a JSON object: reward.functions
        info = request.model_fields.get(name)
        flag = cli_flag(name, info) if info is not None and cli_form(info) is not None else None
        label = f"{name}{inner} ({flag}{inner})" if flag else f"{name}{inner}"
        message = error["msg"]
        if error["type"] == "value_error":  # a validator's own sentence, without pydantic's prefix
            message = message.removeprefix("Value error, ")
        parts.append(f"{label}: {message}" if label else message)
    return f"bad arguments: {'; '.join(parts)}"


@dataclass
class Env:
    """What a front end lends the engine call: where paths may be read and written, progress, cancel.

    The MCP server fences reads and runs to the workspace and the client's roots and writes to the
    workspace; the CLI, run by a person, goes wherever they say.
    """

    front: Front
    workspace: Path
    read: Callable[[str], Path]
    read_bytes: Callable[[str], tuple[Path, bytes]]
    fence: Callable[[], AbstractContextManager] = nullcontext  # reads the engine makes on its own
    progress: Callable[[int, float | None, str], None] = lambda step, total, message: None
    cancel: threading.Event | None = None

    def optional(self, path: str | None) -> Path | None:
        return self.read(path) if path else None


@dataclass(frozen=True)
class Hints:
    """MCP's tool annotations, promises a client relies on (server.py hands them over as they are;
    plain data here so the CLI never imports the MCP SDK)."""

    read_only: bool
    open_world: bool
    idempotent: bool = False
    destructive: bool | None = None  # meaningful only when read_only is False


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its MCP name and CLI subcommand, request and result models, engine call and texts.

    `run` calls the engine and returns its full result; `summary` makes the agent-sized one (the
    default MCP result: `fit` then holds it to RESULT_BUDGET); `text` is the CLI's human output and
    `exit_code` its status (0 ok, 1 findings or a failed check).
    """

    name: str
    command: str
    title: str
    blurb: str  # one line, for SKILL.md's tool table and plugin.json
    description: str  # what the model reads
    cli_help: str
    request: type[BaseModel]
    # The MCP output schema (the summary and the full result both fit it), or a function that
    # imports it: the CLI never needs it, and some engine models pull in slow imports.
    result: type[BaseModel] | Callable[[], type[BaseModel]]
    annotations: Hints
    run: Callable[[Any, Env], BaseModel]
    summary: Callable[[Any, Any, Env], BaseModel]
    full: Callable[[Any, Any, Env], BaseModel]
    text: Callable[[Any, Any], str]
    exit_code: Callable[[Any], int] = lambda result: 0
    cancellable: bool = False  # runs processes: a client that goes away stops them
    # reads and parses user input whose cost the input decides: over MCP it runs in a worker process
    # with a deadline, killed when the client goes away (mint_migrate/worker.py)
    isolated: bool = False
    # The files a call wrote (absolute paths): the MCP server serves their full texts as resources.
    files: Callable[[Any], list[str]] = field(default=lambda result: [])

    def result_model(self) -> type[BaseModel]:
        return self.result if isinstance(self.result, type) else self.result()

    def mcp_fields(self) -> dict[str, FieldInfo]:
        return {name: info for name, info in self.request.model_fields.items() if on_mcp(info)}

    def cli_fields(self) -> dict[str, FieldInfo]:
        return {name: info for name, info in self.request.model_fields.items() if cli_form(info) is not None}


@functools.cache
def with_omitted(model: type[BaseModel]) -> type[BaseModel]:
    """`model` with the `omitted` list every summary carries."""
    return create_model(model.__name__.removesuffix("Report") + "Result", __base__=model,
                        omitted=(list[str], Field(default_factory=list, description="What this summary leaves out.")))


# --- holding a result to the budget -----------------------------------------------------------


def size(data: Any) -> int:
    """The characters an agent reads: the result as the JSON text MCP mirrors it in (indent 2)."""
    return len(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _nodes(data: Any, path: str = "") -> Iterator[tuple[str, Any, Any, Any]]:
    """(path, parent, key, value) for every list and string below `data`."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        here = f"{path}.{key}" if path and isinstance(key, str) else f"{path}[{key}]" if path else str(key)
        if isinstance(value, (list, str)):
            yield here, data, key, value
        if isinstance(value, (dict, list)):
            yield from _nodes(value, here)


def fit(result: BaseModel, budget: int = RESULT_BUDGET, keep: tuple[str, ...] = ("omitted",),
        whole: tuple[str, ...] = ()) -> BaseModel:
    """`result` (a model with an `omitted: list[str]` field) cut down to `budget` characters: the
    `whole` fields (source code: half a script is worse than none) go first, entirely; then the
    largest list loses its second half, or the largest text its middle (a log tail keeps its end),
    until it fits. Every cut is named in `omitted`, so the agent knows to ask for detail='full'."""
    data = result.model_dump(mode="json")
    omitted: list[str] = list(data.get("omitted") or [])
    for name in whole:
        if size(data) + size(omitted) > budget and data.get(name):
            omitted.append(f"{name}: {len(data[name])} chars, left out whole")
            data[name] = None
    keep = (*keep, *whole)
    while size(data) + size(omitted) > budget:
        candidates = [n for n in _nodes(data) if n[0].split(".")[0].split("[")[0] not in keep]
        candidates = [n for n in candidates if (len(n[3]) > 1 if isinstance(n[3], list) else len(n[3]) > 120)]
        if not candidates:
            break
        path, parent, key, value = max(candidates, key=lambda n: size(n[3]))
        if isinstance(value, list):
            kept = len(value) // 2
            parent[key] = value[:kept]
            omitted.append(f"{path}: {len(value) - kept} of {len(value)} items")
        else:
            over = size(data) + size(omitted) - budget + 80
            kept = max(60, len(value) - max(over, len(value) // 2))
            cut = len(value) - kept
            if "tail" in path:
                parent[key] = f"[... {cut} chars cut]" + value[cut:]
            else:
                parent[key] = value[: kept // 2] + f" [... {cut} chars cut ...] " + value[len(value) - kept // 2:]
            omitted.append(f"{path}: {cut} of {len(value)} chars")
    if len(omitted) > len(result.model_dump().get("omitted") or []) and FULL_HINT not in omitted:
        omitted.append(FULL_HINT)
    data["omitted"] = omitted
    return type(result).model_validate(data)
