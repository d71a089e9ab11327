"""`mint-migrate`: the engine at a shell, for people and for CI gates.

`--json` prints exactly one JSON document on stdout. Exit codes: 0 ok, 1 findings or a failed
check, 2 bad usage or unreadable input. Heavy imports happen inside the subcommand that needs them.
"""

import argparse
import contextlib
import faulthandler
import io
import json
import os
import signal
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from mint_migrate import __version__, userfiles
from mint_migrate.errors import MintMigrateError
from mint_migrate.tools import TOOLS
from mint_migrate.tools.base import Env, Stopped, ToolSpec, cli_flag, cli_form, problems
from mint_migrate.workspace import ANYWHERE, user_path

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

# The workspace fence keeps an agent's reads, runs and writes inside the folder it was given; a
# person at a shell names the paths themselves, so the CLI goes wherever they say (and never over a
# file without --force).
_ANYWHERE = ANYWHERE


class _UsageError(Exception):
    """Bad arguments: main() reports them (as JSON too under --json) and exits 2."""

    def __init__(self, message: str, usage: str, prog: str) -> None:
        super().__init__(message)
        self.usage, self.prog = usage, prog


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # raised, not printed: only main() knows whether --json was asked
        raise _UsageError(message, self.format_usage(), self.prog)


def _plain(annotation: Any) -> Any:
    """`X | None` -> X."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('give a JSON object, e.g. \'{"clip_low_threshold": 0.8}\'')
    return value


def add_request_flags(parser: argparse.ArgumentParser, tool: ToolSpec) -> None:
    """The request model's command-line fields as arguments. Values reach the model as typed (strings
    for numbers and choices), so the model alone validates them, with the MCP tool's message."""
    for name, info in tool.cli_fields().items():
        form = cli_form(info)
        kind = _plain(info.annotation)
        options: dict[str, Any] = {"help": form.help or info.description, "default": None}
        if form.metavar:
            options["metavar"] = form.metavar
        if typing.get_origin(kind) is Literal:
            options.setdefault("metavar", "{" + ",".join(map(str, typing.get_args(kind))) + "}")
        elif typing.get_origin(kind) is dict or kind is dict or (isinstance(kind, type) and issubclass(kind, BaseModel)):
            options.update(type=_json_object, metavar="JSON")
        elif kind is bool:
            if info.annotation is bool:  # a switch: given means True (False for an inverted one)
                options.update(action="store_const", const=not form.invert)
                options.pop("metavar", None)
            else:
                options["action"] = argparse.BooleanOptionalAction
        elif typing.get_origin(kind) is list and form.repeat:
            options["action"] = "append"
        flag = cli_flag(name, info)
        if flag is None:
            if not (info.is_required() or form.required):
                options["nargs"] = "?"
            options.pop("default")
            parser.add_argument(name, **options)
        else:
            parser.add_argument(flag, dest=name, **options)


def request_from_flags(args: argparse.Namespace, tool: ToolSpec) -> BaseModel:
    """The request model from the given flags (a flag left out keeps the model's default); bad values
    are a usage error with the message the MCP tool gives."""
    values = {name: getattr(args, name) for name in tool.cli_fields() if getattr(args, name) is not None}
    try:
        return tool.request.model_validate(values)
    except ValidationError as exc:
        raise _UsageError(problems(exc, tool.request), args.parser.format_usage(), args.parser.prog) from None


def _progress(step: int, total: float | None, message: str) -> None:
    print(f"[{step}/{total}] {message}", file=sys.stderr, flush=True)


def _env() -> Env:
    def read_bytes(path: str) -> tuple[Path, bytes]:
        found = user_path(path)
        return found, userfiles.read_bytes(found)  # regular files only, bounded: a FIFO never blocks

    return Env(front="cli", workspace=_ANYWHERE, read=user_path, read_bytes=read_bytes, progress=_progress)


def _run_tool(tool: ToolSpec, args: argparse.Namespace) -> int:
    request = request_from_flags(args, tool)
    try:
        result = tool.run(request, _env())
        code = tool.exit_code(result)
    except Stopped as stop:  # Ctrl-C or SIGTERM: what ran is reported, the exit code says how it ended
        result, code = stop.result, stop.code
    if args.json and getattr(request, "format", None) != "sarif":
        print(result.model_dump_json(indent=2))
    else:
        print(tool.text(result, request))
    return code


# --- serve -------------------------------------------------------------------------------------


def _cmd_serve(args: argparse.Namespace) -> int:
    from mint_local.process import stop_all
    from mint_migrate.server import create_server
    from mint_migrate.smoke.servers import stop_local_servers
    from mint_migrate.worker import kill_all as kill_workers

    workspace = user_path(args.workspace) if args.workspace else Path.cwd()
    if not workspace.is_dir():
        raise MintMigrateError(f"--workspace {workspace} is not a directory.")

    def terminated(signum: int, _frame) -> None:
        # Smoke runs and the mint-local servers they started end with the server, and so do their
        # temporary state folders and logs (a death by signal runs no atexit), and the tool workers.
        stop_all()
        stop_local_servers()
        kill_workers()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, terminated)
    try:
        create_server(workspace).run()  # returns when the client goes away (stdin closes)
    finally:
        stop_all()  # before interpreter shutdown, which would wait for a tool's worker thread
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mint-migrate",
        description="Move LLM post-training code onto MinT and prove it runs. "
        "Typical: mint-migrate migrate train_grpo.py --out out/ && mint-migrate smoke out/train.py",
    )
    parser.add_argument("--version", action="version", version=f"mint-migrate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    # One subcommand per tool of the registry, its flags built from the tool's request model.
    for tool in TOOLS:
        p = sub.add_parser(tool.command, help=tool.cli_help)
        add_request_flags(p, tool)
        p.add_argument("--json", action="store_true", help="print exactly one JSON document on stdout")
        p.set_defaults(run=lambda args, tool=tool: _run_tool(tool, args), parser=p)

    p = sub.add_parser("serve", help="run the MCP server over stdio")
    p.add_argument("--workspace", help="root for relative paths and the only place tools write (default: cwd)")
    p.set_defaults(run=_cmd_serve)
    return parser


def _flags_as_concepts(argv: list[str]) -> list[str]:
    """`mint-migrate map openrlhf --pretrain`: a concept may itself be a CLI flag of the source framework.

    argparse would take it for one of ours, so every dash-word after `map` that is not our own
    option is moved behind `--`.
    """
    if not argv or argv[0] != "map" or "--" in argv:
        return argv
    ours = {"--json", "-h", "--help"}
    options = [a for a in argv[1:] if a in ours]
    flags = [a for a in argv[1:] if a.startswith("-") and a not in ours]
    positionals = [a for a in argv[1:] if not a.startswith("-")]
    # argparse fills both positionals at once, so the flag must follow the framework directly.
    return ["map", *options, *positionals, "--", *flags] if flags else argv


def _json_anywhere(argv: list[str]) -> tuple[list[str], bool]:
    """`--json` wherever it is, even after `--` (`map openrlhf -- --pretrain --json`): ours, never a concept."""
    rest = [a for a in argv if a != "--json"]
    return rest, len(rest) != len(argv)


def main(argv: Sequence[str] | None = None) -> None:
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 <pid>` prints every thread's stack: what a stuck run is doing
        with contextlib.suppress(io.UnsupportedOperation, ValueError):  # stderr without a file (called in-process)
            faulthandler.register(signal.SIGUSR1, all_threads=True)
    argv, wants_json = _json_anywhere(list(sys.argv[1:] if argv is None else argv))
    try:
        args = build_parser().parse_args(_flags_as_concepts(argv))
        if wants_json and not hasattr(args, "json"):
            raise _UsageError(f"{args.command} has no --json output", "", f"mint-migrate {args.command}")
    except _UsageError as exc:
        sys.exit(_usage(exc, wants_json))
    if wants_json:
        args.json = True
    try:
        code = args.run(args)
    except _UsageError as exc:
        code = _usage(exc, getattr(args, "json", False))
    except MintMigrateError as exc:
        code = _fail(args, str(exc))
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        code = _fail(args, f"cannot read {exc.filename}: {exc.strerror}")
    except KeyboardInterrupt:  # Ctrl-C outside a smoke run: no traceback, the shell's exit code
        print("mint-migrate: interrupted", file=sys.stderr)
        code = 128 + signal.SIGINT
    except BrokenPipeError:
        # `mint-migrate map verl | head`: the reader left; exit quietly as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_FINDINGS
    sys.exit(code)


def _usage(exc: _UsageError, as_json: bool) -> int:
    """Bad arguments: usage and a hint on stderr, and with --json still one JSON document on stdout."""
    sys.stderr.write(exc.usage)
    print(f"{exc.prog}: error: {exc}\nRun '{exc.prog} --help' for the options.", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": f"{exc.prog}: {exc}", "usage": exc.usage.strip()}))
    return EXIT_USAGE


def _fail(args: argparse.Namespace, message: str) -> int:
    """Bad input: the message on stderr, and with --json still one JSON document on stdout."""
    print(f"mint-migrate: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"error": message}))
    return EXIT_USAGE
