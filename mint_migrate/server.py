"""The MCP server: the registry's tools (mint_migrate/tools), the prompt and the resources; the
engine does the work.

Every tool validates its arguments with its request model (the CLI validates with the same one),
returns a pydantic model (its JSON schema is the tool's outputSchema) sized for an agent unless
detail='full' is asked for, and turns the engine's MintMigrateError into a ToolError, whose text
the model sees and can act on. Files a tool wrote are resources (mint://workspace/PATH).
"""

import os
import threading
import warnings
from collections.abc import Callable
from inspect import Parameter, Signature
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit
from urllib.request import url2pathname

import anyio
import anyio.from_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ClientCapabilities, RootsCapability, ToolAnnotations
from pydantic import ConfigDict, Field, ValidationError

from mint_migrate import __version__, concepts, worker
from mint_migrate.bundled import bundled_text
from mint_migrate.errors import MintMigrateError
from mint_migrate.frameworks import framework_list
from mint_migrate.pyparse import serialise_stdlib_ast_parse
from mint_migrate.sdk_facts import LORA_LR_FLOOR, LORA_LR_RULE, rate_text
from mint_migrate.tools import TOOLS
from mint_migrate.tools.base import Env, ToolSpec, problems, schema_metadata
from mint_migrate.workspace import inside, read_fence, read_text_inside

INSTRUCTIONS = f"""\
mint-migrate moves LLM post-training code ({framework_list("and")}) onto MinT (pip install
mindlab-toolkit; import mint; tinker==0.22.0 API).
Workflow: migrate_script on the user's script (or scaffold_train_py for a fresh one); map_concept
for what its plan did not cover; lint_script on the result; preflight_check(target="local") and
launch_smoke_run for a 2-step run against the offline mint-local backend (no key needed); port
the reward and data, then (with the user's consent) preflight and smoke-run with target="remote".
Paths are relative to the workspace root the server was started in."""


async def _client_roots(ctx: Context) -> list[Path]:
    """The folders the MCP client says the server may work in (file:// roots), if it says any."""
    try:
        if not ctx.session.check_client_capability(ClientCapabilities(roots=RootsCapability())):
            return []
        with warnings.catch_warnings():  # roots are deprecated in the newest protocol, still sent by clients
            warnings.simplefilter("ignore")
            result = await ctx.session.list_roots()
    except Exception:  # noqa: BLE001 - a client that cannot answer gives no roots
        return []
    found = []
    for root in result.roots:
        parts = urlsplit(str(root.uri))
        if parts.scheme == "file" and parts.path:
            found.append(Path(url2pathname(parts.path)))
    return found


def _arguments_as_sent() -> type[ArgModelBase]:
    """MCPServer validates a call's arguments before the tool runs, with its own wording; this model
    lets them through unchanged so the tool's request model validates them, as the CLI's does, and
    both front ends reject a bad argument with the same message (tools.base.problems)."""

    class Arguments(ArgModelBase):
        model_config = ConfigDict(extra="allow")

        def model_dump_one_level(self) -> dict:
            return dict(self.model_extra or {})

    return Arguments


def _mcp_parameters(tool: ToolSpec) -> list[Parameter]:
    """The request model's MCP fields as keyword parameters: MCPServer builds the input schema from them."""
    params = [Parameter("ctx", Parameter.KEYWORD_ONLY, annotation=Context)]
    for name, info in tool.mcp_fields().items():
        default = Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
        annotation = Annotated[(info.annotation, *schema_metadata(info), Field(description=info.description))]
        params.append(Parameter(name, Parameter.KEYWORD_ONLY, annotation=annotation, default=default))
    return params


async def run_in_worker(request: dict) -> dict:
    """Run one tool call in a worker process (mint_migrate.worker) and return its answer. The worker is
    killed when the deadline passes or this call is cancelled (the client went away), so its work
    really stops; a deadline or a failure becomes a ToolError with its message."""
    limit = worker.deadline_s()
    reply = None
    process, answers = await anyio.to_thread.run_sync(worker.start, request)
    try:
        with anyio.move_on_after(limit) as scope:
            while not await anyio.to_thread.run_sync(answers.poll, 0.2, abandon_on_cancel=True):
                if not process.is_alive() and not answers.poll():
                    break  # it died without an answer
            else:
                reply = await anyio.to_thread.run_sync(answers.recv, abandon_on_cancel=True)
    finally:
        if process.is_alive():  # the deadline, a cancelled call, or an error here
            process.kill()
        answers.close()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(process.join, 10)
    if scope.cancelled_caught:
        raise ToolError(
            f"The {request['call']} call did not finish within {limit:.0f} s and was stopped; the input may be too "
            f"large or hostile. Narrow it (fewer files), or raise {worker.DEADLINE_ENV} where the server starts."
        )
    if reply is None:
        raise ToolError(f"The {request['call']} worker ended without an answer (exit code {process.exitcode}); "
                        "it may have run out of memory on this input.")
    if "error" in reply:
        raise ToolError(reply["error"])
    return reply


def _as_mcp_tool(tool: ToolSpec, root: Path, fenced: Callable, written: set[Path]) -> Tool:
    """One registry entry as an MCP tool: validate with its request model, run the engine in a worker
    thread inside the fence, and return the summary (or, with detail='full', everything)."""

    async def call(ctx: Context, **arguments):
        try:
            request = tool.request.model_validate(arguments)
        except ValidationError as exc:
            raise ToolError(problems(exc, tool.request)) from None
        roots = await fenced(ctx)
        if tool.isolated:
            reply = await run_in_worker({
                "call": tool.name, "root": str(root), "roots": [str(r) for r in roots],
                "args": {"tool": tool.name, "arguments": request.model_dump(mode="json")},
                "environment": dict(os.environ), "server_pid": os.getpid(),
            })
            written.update(Path(p).resolve() for p in reply["files"])
            return tool.result_model().model_validate(reply["result"])
        cancel = threading.Event()

        def progress(step: int, total: float | None, message: str) -> None:
            anyio.from_thread.run(ctx.report_progress, step, total, message)

        env = Env(
            front="mcp",
            workspace=root,
            read=lambda path: inside(path, root, roots),
            read_bytes=lambda path: read_text_inside(path, root, roots),
            fence=lambda: read_fence(roots),
            progress=progress,
            cancel=cancel,
        )

        def work():
            result = tool.run(request, env)
            written.update(Path(p).resolve() for p in tool.files(result))
            return (tool.full if getattr(request, "detail", "summary") == "full" else tool.summary)(result, request, env)

        # A tool that runs processes: if the client goes away (or the server stops) mid-run, the await
        # is cancelled at once and `cancel` makes the worker kill the script and everything it started.
        try:
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=tool.cancellable)
        except (MintMigrateError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            raise ToolError(str(exc)) from exc
        finally:
            cancel.set()

    call.__name__ = tool.name
    call.__annotations__ = {"ctx": Context, "return": tool.result_model()}
    call.__signature__ = Signature(_mcp_parameters(tool), return_annotation=tool.result_model())
    hints = tool.annotations
    annotations = ToolAnnotations(read_only_hint=hints.read_only, destructive_hint=hints.destructive,
                                  idempotent_hint=hints.idempotent, open_world_hint=hints.open_world)
    registered = Tool.from_function(call, name=tool.name, title=tool.title, description=tool.description,
                                    annotations=annotations, structured_output=True)
    registered.fn_metadata.arg_model = _arguments_as_sent()
    return registered


def create_server(workspace: Path | None = None) -> MCPServer:
    """An MCP server whose tools read and write relative to `workspace` (default: the cwd).

    Reads and runs stay inside the workspace and the client's roots, writes inside the workspace
    (mint_migrate.workspace). Tools run in worker threads, so Python parsing is serialised
    process-wide (mint_migrate.pyparse), and every process a tool starts ends with the server.
    """
    root = (workspace or Path.cwd()).resolve()
    serialise_stdlib_ast_parse()

    async def fenced(ctx: Context) -> list[Path]:
        return [root, *await _client_roots(ctx)]

    written: set[Path] = set()  # what this server's tools wrote: the files served as resources
    mcp = MCPServer("mint-migrate", version=__version__, instructions=INSTRUCTIONS,
                    tools=[_as_mcp_tool(tool, root, fenced, written) for tool in TOOLS])

    @mcp.prompt(name="mint-migrate", title="Migrate training code to MinT")
    def mint_migrate_prompt(
        framework: Annotated[str, Field(description="Source framework, or a migration question.")],
    ) -> list[UserMessage]:
        """Walk through migrating FRAMEWORK training code to MinT with this server's tools."""
        return [UserMessage(migration_prompt(framework))]

    @mcp.resource("mint://docs/cheatsheet", title="MinT API cheatsheet", mime_type="text/markdown")
    def cheatsheet() -> str:
        """The 13-section MinT API cheatsheet, true for mindlab-toolkit 0.2.0 / tinker 0.22.0."""
        return bundled_text("mint_api_cheatsheet.md")

    @mcp.resource("mint://docs/reference", title="MinT API reference", mime_type="text/plain")
    def reference() -> str:
        """Every public signature of mint, mint.mint and mint.types, generated from the installed SDK."""
        return bundled_text("mint_api_reference.txt")

    @mcp.resource("mint://docs/skill", title="mint-migrate skill", mime_type="text/markdown")
    def skill() -> str:
        """The mint-migrate workflow (SKILL.md)."""
        return bundled_text("SKILL.md")

    @mcp.resource("mint://workspace/{+path}", title="A file a tool wrote", mime_type="text/plain")
    def workspace_file(path: str) -> str:
        """The full text of a file a tool of this server wrote in the workspace (train.py, mint_run.py,
        MIGRATION.md, ...); other files (a .env among them) are not served."""
        try:
            found, data = read_text_inside(path, root, [root])
        except (MintMigrateError, OSError) as exc:
            raise ResourceError(f"cannot read {path}: {exc}") from None
        if found.resolve() not in written:
            raise ResourceError(f"{path} was not written by a tool of this server; only those files are served "
                                "(migrate_script / scaffold_train_py name them with their URIs).")
        return data.decode("utf-8", errors="replace")

    @mcp.resource("mint://concepts/{framework}", title="Concept map", mime_type="application/json")
    def concept_table(framework: str) -> str:
        """The whole concept map for one source framework, as JSON."""
        return concepts.map_concept(framework).model_dump_json(indent=2)

    return mcp


def migration_prompt(framework: str) -> str:
    """The text of the `mint-migrate` prompt: the skill's workflow aimed at one framework."""
    try:
        known = concepts.resolve_framework(framework)
        subject = f"the user's {known} training code"
        first = f"The source framework is {known}; read its entry point and config for the algorithm."
        lookup = f"map_concept(framework='{known}', concept=...)"
    except MintMigrateError:
        subject = "the user's training code"
        first = (
            f"Treat '{framework}' as the user's question. Identify the source framework from the code "
            f"(one of {', '.join(concepts.frameworks())}); map_concept answers questions about its concepts."
        )
        lookup = "map_concept(framework=..., concept=...)"
    return f"""Migrate {subject} to MinT (mindlab-toolkit 0.2.0, tinker 0.22.0 API).

1. {first}
2. Find the training entry point (script, launch script or config) and call migrate_script on it,
   passing companion configs and reward modules in config_paths. Read the plan's warnings.
   For new code with no source, call scaffold_train_py(kind=...) instead.
3. Call {lookup} only for what the plan did not cover (a class, key or flag no setting,
   warning or MIGRATION.md row mentions).
4. Call lint_script on the generated train.py and fix every error.
5. Call preflight_check(script_path=..., target='local') and resolve each failed check (no key needed).
6. Call launch_smoke_run(script_path=..., target='local') and confirm it passed; for a TRL or plain
   PyTorch source, check_parity(source_path=..., train_path=...) proves train.py optimises its objective.
7. Before done: port the user's reward and data into train.py, compare MIGRATION.md's settings and
   "What cannot move as-is" with train.py's constants, lint again (no MINT023 on the learning rate),
   smoke again. A run on MinT (target='remote') only with the user's consent.
8. Hand over: summarise MIGRATION.md, the smoke verdict and what the user must fill in
   (reward function, data path, MINT_API_KEY).

Pitfalls: build input=tokens[:-1], target=tokens[1:] with weights shifted too; a LoRA learning rate
is {LORA_LR_RULE} (at least {rate_text(LORA_LR_FLOOR)}); sync training calls return futures (.result()), *_async calls need
two awaits, sample() returns a concurrent Future; resume is a fresh create_lora_training_client
plus load_state_with_optimizer(path); SamplingParams(stop=...), never stop_token_ids."""
