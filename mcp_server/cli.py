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
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

from mcp_server import __version__
from mcp_server.errors import MintMigrateError
from mcp_server.frameworks import framework_list
from mcp_server.params import SCAFFOLD_INTERNAL, add_flags, values_from_flags
from mcp_server.render import COMPANION, ScaffoldOptions
from mcp_server.workspace import ANYWHERE, user_path

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

# The workspace fence keeps an agent's reads, runs and writes inside the folder it was given; a
# person at a shell names the paths themselves, so the CLI goes wherever they say (and never over a
# file without --force).
_ANYWHERE = ANYWHERE



def _absolute(path: str | None) -> str | None:
    """A shell path is relative to the cwd, not to the workspace root; `~` is expanded."""
    return str(user_path(path).resolve()) if path else None


class _UsageError(Exception):
    """Bad arguments: main() reports them (as JSON too under --json) and exits 2."""

    def __init__(self, message: str, usage: str, prog: str) -> None:
        super().__init__(message)
        self.usage, self.prog = usage, prog


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # raised, not printed: only main() knows whether --json was asked
        raise _UsageError(message, self.format_usage(), self.prog)


def _emit(result: BaseModel, as_json: bool, human: Callable[[], str]) -> None:
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        print(human())


# --- map ---------------------------------------------------------------------------------------


def _cmd_map(args: argparse.Namespace) -> int:
    from mcp_server.concepts import map_concept

    table = map_concept(args.framework, args.concept)

    def human() -> str:
        lines = [f"{table.title}", table.summary.strip(), ""]
        for c in table.concepts:
            lines.append(f"* {c.source}  ->  {c.mint}")
            if args.concept:
                lines += ["", c.explanation.strip(), "", "Before:", _indent(c.before), "After:", _indent(c.after)]
                lines += ["Pitfalls:"] + [f"  - {p}" for p in c.pitfalls]
        if not args.concept:
            lines += ["", f"Details: mint-migrate map {table.framework} CONCEPT"]
        return "\n".join(lines)

    _emit(table, args.json, human)
    return EXIT_OK


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines())


# --- scaffold ----------------------------------------------------------------------------------

def _cmd_scaffold(args: argparse.Namespace) -> int:
    from mcp_server.render import scaffold

    try:
        options = ScaffoldOptions(**values_from_flags(args, ScaffoldOptions, exclude=SCAFFOLD_INTERNAL))
    except ValidationError as exc:
        problems = "; ".join(f"--{'.'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        raise MintMigrateError(f"bad scaffold option: {problems}") from None
    result = scaffold(options, output_path=_absolute(args.out), workspace=_ANYWHERE, overwrite=args.force)

    def human() -> str:
        if result.path:
            return (f"Wrote {result.path} and {result.companion_path} (the plumbing train.py imports: keep them "
                    f"together)\nNext: mint-migrate lint {result.path} && mint-migrate smoke {result.path}")
        return result.source

    if not result.path and not args.json:  # stdout is train.py alone, so it can be redirected into a file
        print(f"note: this train.py imports {COMPANION}, which is not printed; --out DIR/train.py writes both.",
              file=sys.stderr)
    _emit(result, args.json, human)
    return EXIT_OK


# --- migrate -----------------------------------------------------------------------------------


def _cmd_migrate(args: argparse.Namespace) -> int:
    from mcp_server.migrate import migrate

    result = migrate(
        user_path(args.source),
        [user_path(p) for p in args.config],
        output_dir=_absolute(args.out),
        workspace=_ANYWHERE,
        overwrite=args.force,
    )

    def human() -> str:
        plan = result.plan
        variant = f" ({plan.variant})" if plan.variant else ""
        lines = [f"framework: {plan.framework}   algorithm: {plan.algorithm}{variant}"]
        for key, setting in plan.settings:
            if setting is not None:
                value = setting.value.model_dump(exclude_none=True) if key == "lora" else setting.value
                lines.append(f"  {key:28} {value!r:40} {setting.source}")
        for w in plan.warnings:
            lines.append(f"warning {w.code}: {w.message}" + (f" ({w.source})" if w.source else ""))
        if plan.files_written:
            lines.append("wrote: " + ", ".join(plan.files_written))
        else:
            lines.append(f"Nothing written; add --out DIR for train.py, {COMPANION} and MIGRATION.md.")
        return "\n".join(lines)

    _emit(result, args.json, human)
    return EXIT_OK


# --- lint --------------------------------------------------------------------------------------


def _cmd_lint(args: argparse.Namespace) -> int:
    from mcp_server.lint import lint_path

    path = user_path(args.path)
    report = lint_path(path, fix=args.fix)
    if args.fix and report.fixed_source is not None and report.fixes_applied:
        path.write_text(report.fixed_source, encoding="utf-8")
    if args.format == "sarif":
        from mcp_server.lint.sarif import to_sarif

        print(json.dumps(to_sarif([report]), indent=2))
    else:

        def human() -> str:
            if report.parse_error:  # no rule ran, so there are no counts to report
                return f"{report.path}: not linted: cannot parse: {report.parse_error}"
            lines = [
                f"{f.path}:{f.line}:{f.col}: {f.id} [{f.severity}] {f.message}\n    fix: {f.fix}"
                for f in report.findings
            ]
            if report.fixes_applied:
                lines.append(f"fixed: {', '.join(report.fixes_applied)}")
            lines.append(f"{report.errors} error(s), {report.warnings} warning(s)")
            return "\n".join(lines)

        _emit(report, args.json or args.format == "json", human)
    if report.parse_error:
        return EXIT_USAGE
    return EXIT_FINDINGS if report.errors else EXIT_OK


# --- preflight ---------------------------------------------------------------------------------


def _cmd_preflight(args: argparse.Namespace) -> int:
    from mcp_server.preflight import run_preflight

    report = run_preflight(user_path(args.path) if args.path else None, target=args.target)

    def human() -> str:
        marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
        lines = []
        for c in report.checks:
            lines.append(f"[{marks[c.status]}] {c.name}: {c.message}")
            if c.fix and c.status != "ok":
                lines.append(f"       fix: {c.fix}")
        lines.append(f"preflight ({report.target}) " + ("passed" if report.ok else "FAILED"))
        return "\n".join(lines)

    _emit(report, args.json, human)
    return EXIT_OK if report.ok else EXIT_FINDINGS


# --- smoke -------------------------------------------------------------------------------------


def _cmd_smoke(args: argparse.Namespace) -> int:
    from mcp_server.smoke import SmokeInterrupted, SmokeProgress, format_verdict, run_smoke

    def progress(p: SmokeProgress) -> None:
        print(f"[{p.step}/{p.total}] {p.message}", file=sys.stderr, flush=True)

    received: list[int] = []

    def terminated(signum: int, _frame) -> None:  # SIGTERM/SIGHUP and Ctrl-C: stop the run
        received.append(signum)
        # Only the first stops the run: a second Ctrl-C while the run's processes are being killed
        # would cut that short and lose the verdict (no JSON, a traceback). The run stops anyway.
        if len(received) == 1:
            raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signum != signal.SIGINT or signal.getsignal(signum) is signal.default_int_handler:
            signal.signal(signum, terminated)  # (a SIGINT ignored by who started us stays ignored)
    try:
        verdict = run_smoke(
            user_path(args.path),
            target=args.target,
            steps=args.steps,
            timeout_s=args.timeout,
            on_progress=progress,
            model=args.model,
            device=args.device,
        )
        code = EXIT_OK if verdict.passed else EXIT_FINDINGS
    except SmokeInterrupted as stop:  # the script and everything it started are gone already
        verdict = stop.verdict
        code = 128 + (received[0] if received else signal.SIGINT)
    _emit(verdict, args.json, lambda: format_verdict(verdict))
    return code


# --- parity ------------------------------------------------------------------------------------


def _cmd_parity(args: argparse.Namespace) -> int:
    import shlex

    from mcp_server.parity.check import check_parity, format_report, record_in_migration_md

    def progress(step: int, message: str) -> None:
        print(f"[{step}/3] {message}", file=sys.stderr, flush=True)

    report = check_parity(
        user_path(args.source),
        train=user_path(args.train) if args.train else None,
        configs=[user_path(p) for p in args.config],
        rows=args.rows,
        data=user_path(args.data) if args.data else None,
        mint_data=user_path(args.mint_data) if args.mint_data else None,
        model=str(user_path(args.model)) if args.model else None,
        script_args=shlex.split(args.args or ""),
        timeout_s=args.timeout,
        fresh=args.fresh,
        keep=user_path(args.keep) if args.keep else None,
        on_progress=progress,
    )
    if args.train and not args.no_report and record_in_migration_md(report, _ANYWHERE):
        report.notes.append(f"wrote the Parity section of {Path(report.train).parent / 'MIGRATION.md'}")
    _emit(report, args.json, lambda: format_report(report))
    return EXIT_OK if report.passed else EXIT_FINDINGS


# --- serve -------------------------------------------------------------------------------------


def _cmd_serve(args: argparse.Namespace) -> int:
    from mcp_server.server import create_server
    from mcp_server.smoke.servers import stop_local_servers
    from mcp_server.worker import kill_all as kill_workers
    from mint_local.process import stop_all

    workspace = user_path(args.workspace) if args.workspace else Path.cwd()
    if not workspace.is_dir():
        raise MintMigrateError(f"--workspace {workspace} is not a directory.")

    def terminated(signum: int, _frame) -> None:
        # Smoke runs and the mint-local servers they started end with the server, and so do their
        # temporary state folders and logs (a death by signal runs no atexit).
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

    def json_flag(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="print exactly one JSON document on stdout")

    p = sub.add_parser("map", help="show how a framework's concepts map onto MinT")
    p.add_argument("framework", help=framework_list())
    p.add_argument("concept", nargs="?", help="a class, config key or flag; omit for the whole table")
    json_flag(p)
    p.set_defaults(run=_cmd_map)

    p = sub.add_parser("scaffold", help="write a runnable MinT train.py (and the mint_run.py it imports) for a kind")
    add_flags(p, ScaffoldOptions, exclude=SCAFFOLD_INTERNAL)  # the same arguments as the MCP tool
    p.add_argument("--out", help="write train.py here, and mint_run.py beside it, instead of printing")
    p.add_argument("--force", action="store_true", help="overwrite --out and the mint_run.py beside it if they exist")
    json_flag(p)
    p.set_defaults(run=_cmd_scaffold)

    p = sub.add_parser("migrate", help="plan a migration; with --out write train.py, MIGRATION.md and the data step")
    p.add_argument("source", help="training script, launch script or config (python, shell, YAML)")
    p.add_argument("--config", action="append", default=[], metavar="FILE", help="companion file (repeatable)")
    p.add_argument("--out", metavar="DIR", help="write train.py, mint_run.py and MIGRATION.md here")
    p.add_argument("--force", action="store_true", help="overwrite files in --out")
    json_flag(p)
    p.set_defaults(run=_cmd_migrate)

    p = sub.add_parser("lint", help="find MinT pitfalls (exit 1 on errors)")
    p.add_argument("path")
    p.add_argument("--fix", action="store_true", help="apply the safe fixes in place")
    p.add_argument("--format", choices=["text", "json", "sarif"], default="text")
    json_flag(p)
    p.set_defaults(run=_cmd_lint)

    p = sub.add_parser("preflight", help="check SDK, credentials, endpoint and script (exit 1 on a failure)")
    p.add_argument("path", nargs="?", help="train.py to check too")
    p.add_argument(
        "--target",
        choices=["local", "remote"],
        default="remote",
        help="local: ready for a smoke run on mint-local (no key or endpoint needed); remote: for MinT (default)",
    )
    json_flag(p)
    p.set_defaults(run=_cmd_preflight)

    p = sub.add_parser("smoke", help="run a train.py for a few steps against mint-local or MinT")
    p.add_argument("path")
    p.add_argument("--target", choices=["local", "remote"], default="local")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--timeout", type=float, default=600, metavar="SECONDS")
    p.add_argument("--model", help="local: 'tiny' (default) or a local Hugging Face model directory")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="local: where mint-local runs the model")
    json_flag(p)
    p.set_defaults(run=_cmd_smoke)

    p = sub.add_parser(
        "parity", help="run the source and its migrated train.py for one step on a tiny model; compare objectives"
    )
    p.add_argument("source", help="the source training script (.py) the migration came from")
    p.add_argument("--train", metavar="PATH", help="the migrated train.py (default: migrate SOURCE afresh)")
    p.add_argument("--config", action="append", default=[], metavar="FILE", help="companion file (repeatable)")
    p.add_argument("--rows", type=int, default=8, help="data rows (GRPO: prompts) in the step (default: %(default)s)")
    p.add_argument("--data", metavar="FILE", help="a local copy of the source's data (a Hub dataset offline)")
    p.add_argument("--mint-data", metavar="FILE", help="rows train.py reads, if a separate data step made them")
    p.add_argument("--model", metavar="DIR", help="Hugging Face folder both sides load (default: tiny Qwen3)")
    p.add_argument("--args", metavar="STRING", help="command-line arguments for the source script")
    p.add_argument("--timeout", type=float, default=600, metavar="SECONDS", help="per side")
    p.add_argument("--fresh", action="store_true", help="run the source side even if a cached record matches")
    p.add_argument("--keep", metavar="DIR", help="keep both sides' records and the rows here")
    p.add_argument("--no-report", action="store_true", help="do not write the Parity section of MIGRATION.md")
    json_flag(p)
    p.set_defaults(run=_cmd_parity)

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
