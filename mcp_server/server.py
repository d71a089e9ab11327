"""The MCP server: tool, prompt and resource declarations only; the engine does the work.

Every tool returns a pydantic model (its JSON schema is the tool's outputSchema) and turns the
engine's MintMigrateError into a ToolError, whose text the model sees and can act on.
"""

import inspect
import os
import threading
import warnings
from collections.abc import Callable
from functools import wraps
from inspect import Parameter
from pathlib import Path
from typing import Annotated, Literal, ParamSpec, TypeVar
from urllib.parse import urlsplit
from urllib.request import url2pathname

import anyio
import anyio.from_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import ClientCapabilities, RootsCapability, ToolAnnotations
from pydantic import Field

from mcp_server import __version__, concepts, worker
from mcp_server.bundled import bundled_text
from mcp_server.errors import MintMigrateError
from mcp_server.frameworks import framework_list
from mcp_server.lint import LintReport
from mcp_server.migrate import MigrationResult
from mcp_server.params import SCAFFOLD_INTERNAL, tool_parameters, with_parameters
from mcp_server.parity.check import SmokeParityVerdict
from mcp_server.parity.records import ParityReport
from mcp_server.preflight import PreflightReport
from mcp_server.pyparse import serialise_stdlib_ast_parse
from mcp_server.render import ScaffoldOptions, ScaffoldResult
from mcp_server.smoke import SmokeProgress
from mcp_server.workspace import inside, read_fence

INSTRUCTIONS = f"""\
mint-migrate moves LLM post-training code ({framework_list("and")}) onto MinT (pip install
mindlab-toolkit; import mint; tinker==0.22.0 API).
Workflow: migrate_script on the user's script (or scaffold_train_py for a fresh one); map_concept
for what its plan did not cover; lint_script on the result; preflight_check(target="local") and
launch_smoke_run for a 2-step run against the offline mint-local backend (no key needed); port
the reward and data, then (with the user's consent) preflight and smoke-run with target="remote".
Paths are relative to the workspace root the server was started in."""

P = ParamSpec("P")
R = TypeVar("R")


def _user_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Show engine errors to the model as tool errors with their full message."""

    @wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except (MintMigrateError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            raise ToolError(str(exc)) from exc

    # The docstring is the tool's description and MCPServer sends it as written: dedent it, or every
    # line after the first reaches the model with the source's indentation.
    wrapper.__doc__ = inspect.cleandoc(fn.__doc__ or "")
    return wrapper


async def run_in_worker(request: dict) -> dict:
    """Run one engine call in a worker process (mcp_server.worker) and return its result. The
    worker is killed when the deadline passes or this call is cancelled (the client went away), so
    its work really stops; a deadline or a failure becomes a ToolError with its message."""
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
    return reply["result"]


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


def create_server(workspace: Path | None = None) -> MCPServer:
    """An MCP server whose tools read and write relative to `workspace` (default: the cwd).

    Reads and runs stay inside the workspace and the client's roots, writes inside the workspace
    (mcp_server.workspace). Tools run in worker threads, so Python parsing is serialised
    process-wide (mcp_server.pyparse), and every process a tool starts ends with the server;
    migrate, lint and preflight run in a worker process with a deadline (run_in_worker).
    """
    root = (workspace or Path.cwd()).resolve()
    mcp = MCPServer("mint-migrate", version=__version__, instructions=INSTRUCTIONS)
    serialise_stdlib_ast_parse()

    async def fenced(ctx: Context) -> list[Path]:
        return [root, *await _client_roots(ctx)]

    async def in_worker(call: str, arguments: dict, ctx: Context) -> dict:
        """The engine's answer to `call` from a worker process (mcp_server.worker), under the fence."""
        request = {"call": call, "args": arguments, "root": str(root), "roots": [str(r) for r in await fenced(ctx)],
                   "environment": dict(os.environ), "server_pid": os.getpid()}
        return await run_in_worker(request)

    @mcp.tool(
        title="Map a framework concept to MinT",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    @_user_errors
    async def map_concept(
        framework: Annotated[
            str, Field(description=f"Source framework: {framework_list()}.")
        ],
        concept: Annotated[
            str | None,
            Field(description="A class, config key or CLI flag (e.g. 'GRPOConfig', 'rollout.n'); omit for the whole table."),
        ] = None,
    ) -> concepts.ConceptTable:
        """How a source-framework concept maps onto MinT: the equivalent call, why, a before/after
        example and the pitfalls. With no concept, the whole table for that framework."""
        return concepts.map_concept(framework, concept)

    async def scaffold_train_py(**arguments) -> ScaffoldResult:
        """Render a complete, runnable MinT train.py for a training kind, and mint_run.py, the
        plumbing it imports (the same file for every kind; it goes beside train.py). Both are checked
        to parse before they are returned (source, companion_source); they are written only when
        output_path is given, mint_run.py beside it. Every tuning argument only sets the default of
        the script's matching command-line flag."""
        from mcp_server.render import scaffold

        output_path, overwrite = arguments.pop("output_path"), arguments.pop("overwrite")
        options = ScaffoldOptions(**arguments)
        return await anyio.to_thread.run_sync(
            lambda: scaffold(options, output_path=output_path, workspace=root, overwrite=overwrite)
        )

    # The tool's arguments are ScaffoldOptions' fields (the CLI's flags come from the same model).
    with_parameters(
        scaffold_train_py,
        [
            *tool_parameters(ScaffoldOptions, exclude=SCAFFOLD_INTERNAL),
            Parameter(
                "output_path",
                Parameter.KEYWORD_ONLY,
                annotation=Annotated[
                    str | None,
                    Field(description="Write the script here and mint_run.py beside it (inside the workspace); "
                          "omit to only return them."),
                ],
                default=None,
            ),
            Parameter(
                "overwrite",
                Parameter.KEYWORD_ONLY,
                annotation=Annotated[bool, Field(description="Replace an existing file at output_path (and mint_run.py).")],
                default=False,
            ),
        ],
    )
    mcp.tool(
        title="Scaffold a MinT train.py",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )(_user_errors(scaffold_train_py))

    @mcp.tool(
        title="Migrate a training script to MinT",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    @_user_errors
    async def migrate_script(
        source_path: Annotated[
            str, Field(description="The script, launch script or config to migrate (python, shell or YAML).")
        ],
        ctx: Context,
        config_paths: Annotated[
            list[str], Field(description="Companion files: the YAML a script reads, a reward module, ...")
        ] = [],  # noqa: B006 - pydantic copies defaults
        output_dir: Annotated[
            str | None,
            Field(description="Write train.py, mint_run.py (the plumbing it imports) and MIGRATION.md here "
                  "(inside the workspace); omit to only plan."),
        ] = None,
        overwrite: Annotated[bool, Field(description="Replace existing files in output_dir.")] = False,
    ) -> MigrationResult:
        """Analyze a training setup (any framework mint-migrate reads: see map_concept) into a
        migration plan (every setting traced to file:line), a MinT train.py with mint_run.py (the plumbing
        it imports; in companions) and a MIGRATION.md report."""
        arguments = {"source_path": source_path, "config_paths": config_paths, "output_dir": output_dir,
                     "overwrite": overwrite}
        return MigrationResult.model_validate(await in_worker("migrate", arguments, ctx))

    @mcp.tool(
        title="Lint a MinT training script",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    @_user_errors
    async def lint_script(
        ctx: Context,
        path: Annotated[str | None, Field(description="Script to lint (relative to the workspace).")] = None,
        source: Annotated[str | None, Field(description="Python source to lint instead of a file.")] = None,
        fix: Annotated[
            bool, Field(description="Also return the source with the safe fixes applied (nothing is written).")
        ] = False,
    ) -> LintReport:
        """Find MinT pitfalls (pinned-SDK traps, training traps, setup traps) with rule ids
        MINT###, file:line:col, why it matters and the fix."""
        if (path is None) == (source is None):
            raise ToolError("Give exactly one of path or source.")
        # Read in the worker too: a FIFO or a device named here never blocks the server's loop.
        return LintReport.model_validate(await in_worker("lint", {"path": path, "source": source, "fix": fix}, ctx))

    @mcp.tool(
        title="Preflight check for a MinT run",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=True),
    )
    @_user_errors
    async def preflight_check(
        ctx: Context,
        script_path: Annotated[
            str | None, Field(description="The train.py to check (base model, tokenizer, lint); optional.")
        ] = None,
        target: Annotated[
            Literal["local", "remote"],
            Field(
                description="local: ready for a smoke run on mint-local (no key or endpoint needed); "
                "remote: ready for MinT (key, endpoint, served models)."
            ),
        ] = "remote",
    ) -> PreflightReport:
        """Check that a run can start on `target`. Both: Python, mindlab-toolkit / tinker versions and
        the script's lint summary. local adds mint-local's packages; remote adds the sk- key bug,
        MINT_BASE_URL and MINT_API_KEY, the endpoint, and the script's base model and tokenizer."""
        return PreflightReport.model_validate(
            await in_worker("preflight", {"script_path": script_path, "target": target}, ctx)
        )

    @mcp.tool(
        title="Smoke-run a train.py",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
        ),
    )
    @_user_errors
    async def launch_smoke_run(
        script_path: Annotated[str, Field(description="The train.py to run (relative to the workspace).")],
        ctx: Context,
        target: Annotated[
            Literal["local", "remote"],
            Field(description="local: an offline mint-local backend; remote: MINT_BASE_URL / MINT_API_KEY."),
        ] = "local",
        steps: Annotated[int, Field(ge=1, le=100, description="Training steps to run.")] = 2,
        timeout_s: Annotated[float, Field(gt=0, le=3600, description="Kill the run after this many seconds.")] = 600,
        model: Annotated[
            str | None,
            Field(description="local only: 'tiny' (default) or a local Hugging Face model directory to serve."),
        ] = None,
        device: Annotated[
            Literal["auto", "cpu", "cuda"] | None,
            Field(description="local only: where mint-local runs the model; auto uses CUDA when present."),
        ] = None,
        parity_source_path: Annotated[
            str | None,
            Field(description="Also run the parity check against this source script (see check_parity) once the "
                  "smoke run passes; the verdict fails if the objectives differ."),
        ] = None,
    ) -> SmokeParityVerdict:
        """Run the script for a few steps (--smoke --steps N) and return a verdict: passed, steps,
        losses, step time, a sampled text for RL, the checkpoint, classified errors and the log tail.
        Progress is reported once per training step. With parity_source_path, the parity check
        runs after a passing smoke run and its report is the verdict's `parity`."""
        from mcp_server.parity.check import smoke_with_parity

        roots = await fenced(ctx)
        script = inside(script_path, root, roots)
        source = inside(parity_source_path, root, roots) if parity_source_path else None

        def report(progress: SmokeProgress) -> None:
            anyio.from_thread.run(ctx.report_progress, progress.step, progress.total, progress.message)

        def run() -> SmokeParityVerdict:
            with read_fence(roots):  # parity migrates the source afresh when asked, reading what it names
                return smoke_with_parity(
                    script,
                    source,
                    target=target,
                    steps=steps,
                    timeout_s=timeout_s,
                    on_progress=report,
                    model=model,
                    device=device,
                    cancel=cancel,
                )

        # If the client goes away (or the server is stopped) mid-run, the await below is cancelled
        # at once and `cancel` makes the worker kill the script and everything it started.
        cancel = threading.Event()
        try:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        finally:
            cancel.set()

    @mcp.tool(
        title="Check a migration's objective against its source",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    @_user_errors
    async def check_parity(
        source_path: Annotated[str, Field(description="The source training script (.py) the migration came from.")],
        ctx: Context,
        train_path: Annotated[
            str | None, Field(description="The migrated train.py; omit to migrate the source afresh.")
        ] = None,
        config_paths: Annotated[
            list[str], Field(description="Companion files the migration read (YAML, reward module, ...).")
        ] = [],  # noqa: B006 - pydantic copies defaults
        rows: Annotated[int, Field(ge=1, le=64, description="Data rows in the compared step.")] = 8,
        data_path: Annotated[
            str | None, Field(description="A local copy of the source's data, when it reads a Hub dataset.")
        ] = None,
        mint_data_path: Annotated[
            str | None, Field(description="The rows train.py reads, when a separate data step converted them.")
        ] = None,
        model: Annotated[
            str | None, Field(description="A Hugging Face model folder both sides load (default: tiny Qwen3).")
        ] = None,
        script_args: Annotated[
            list[str], Field(description="Command-line arguments for the source script.")
        ] = [],  # noqa: B006 - pydantic copies defaults
        fresh: Annotated[bool, Field(description="Re-run the source side even if a cached record matches.")] = False,
        update_report: Annotated[
            bool, Field(description="Write the result as the Parity section of the MIGRATION.md beside train.py.")
        ] = True,
        timeout_s: Annotated[float, Field(gt=0, le=3600, description="Per side, in seconds.")] = 600,
    ) -> ParityReport:
        """Prove the migrated train.py optimises the source's objective: run the source with its own
        framework (TRL SFT/DPO, a plain PyTorch loop) and train.py on mint-local for one step, on the
        same data rows and the same tiny model, then compare token sequences, trained positions,
        per-token weights (up to one constant, with what it means for the learning rate) and the
        step-0 loss. Every difference comes with its row, position, both values, cause and fix.
        Needs the source framework installed (pip install 'mint-migrate[parity]')."""
        from mcp_server.parity.check import check_parity as run_check
        from mcp_server.parity.check import record_in_migration_md

        # Both sides run scripts and read data: only from inside the workspace and the client's roots.
        roots = await fenced(ctx)
        source = inside(source_path, root, roots)
        train = inside(train_path, root, roots) if train_path else None
        configs = [inside(p, root, roots) for p in config_paths]
        data = inside(data_path, root, roots) if data_path else None
        mint_data = inside(mint_data_path, root, roots) if mint_data_path else None
        model_dir = str(inside(model, root, roots)) if model and model != "tiny" else None

        def report(step: int, message: str) -> None:
            anyio.from_thread.run(ctx.report_progress, step, 3, message)

        def run() -> ParityReport:
            with read_fence(roots):
                result = run_check(
                    source,
                    train=train,
                    configs=configs,
                    rows=rows,
                    data=data,
                    mint_data=mint_data,
                    model=model_dir,
                    script_args=script_args,
                    timeout_s=timeout_s,
                    fresh=fresh,
                    on_progress=report,
                    cancel=cancel,
                )
            if cancel.is_set():
                return result  # the caller is gone: write nothing
            if train_path and update_report and (written := record_in_migration_md(result, root)):
                result.notes.append(f"wrote the Parity section of {written}")
            return result

        # As launch_smoke_run: a client that goes away stops both sides and what they started.
        cancel = threading.Event()
        try:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        finally:
            cancel.set()

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
6. Call launch_smoke_run(script_path=..., target='local') and confirm it passed.
7. Before done: port the user's reward and data into train.py, compare MIGRATION.md's settings and
   "What cannot move as-is" with train.py's constants, lint again (no MINT023 on the learning rate),
   smoke again. A run on MinT (target='remote') only with the user's consent.
8. Hand over: summarise MIGRATION.md, the smoke verdict and what the user must fill in
   (reward function, data path, MINT_API_KEY).

Pitfalls: build input=tokens[:-1], target=tokens[1:] with weights shifted too; a LoRA learning rate
is 20-100x a full fine-tune's; sync training calls return futures (.result()), *_async calls need
two awaits, sample() returns a concurrent Future; resume is a fresh create_lora_training_client
plus load_state_with_optimizer(path); SamplingParams(stop=...), never stop_token_ids."""
