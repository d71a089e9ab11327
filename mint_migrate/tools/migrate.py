"""migrate_script / `mint-migrate migrate`: a training setup -> a plan, train.py, MIGRATION.md."""

from collections import Counter
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from mint_migrate.migrate import MigrationResult
from mint_migrate.next_steps import after_migration, resume_hint
from mint_migrate.plan import MintChoices
from mint_migrate.render import COMPANION
from mint_migrate.tools.base import DETAIL_DESCRIPTION, MCP_ONLY, Cli, Detail, Env, Hints, ToolSpec, fit

# Lists in the summary stop here; the rest is counted in `omitted` and is in detail='full'.
LEDGER_ITEMS_SHOWN = 20
CANDIDATES_SHOWN = 3
LINE_CHARS = 240


class MigrateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source_path: Annotated[
        str,
        Field(description="The script, launch script or config to migrate (python, shell or YAML)."),
        Cli(metavar="source", help="training script, launch script or config (python, shell, YAML)"),
    ]
    config_paths: Annotated[
        list[str],
        Field(description="Companion files: the YAML a script reads, a reward module, ..."),
        Cli("--config", metavar="FILE", help="companion file (repeatable)", repeat=True),
    ] = []
    output_dir: Annotated[
        str | None,
        Field(description="Write train.py, mint_run.py (the plumbing it imports) and MIGRATION.md here "
              "(inside the workspace); omit to only plan."),
        Cli("--out", metavar="DIR", help="write train.py, mint_run.py and MIGRATION.md here"),
    ] = None
    overwrite: Annotated[
        bool, Field(description="Replace existing files in output_dir."), Cli("--force", help="overwrite files in --out")
    ] = False
    confirmed: Annotated[
        list[str],
        Field(description="key=value@file:line settings the agent read and cites (for a setting the plan "
              "lists as not found)."),
        Cli("--set", metavar="KEY=VALUE@FILE:LINE", help="a setting you read and cite (repeatable)", repeat=True),
    ] = []
    detail: Annotated[Detail, Field(description=DETAIL_DESCRIPTION), MCP_ONLY] = "summary"


class PlanSummary(BaseModel):
    framework: str
    algorithm: str
    variant: str | None = None
    settings: dict[str, str] = Field(description="Canonical settings found: value (file:line).")
    not_found: list[str] = Field(description="Canonical settings the analysis did not find: the inputs may not "
                                 "state them, or in a shape it does not read (see `unmapped`, then `confirmed`).")
    mint: MintChoices | None = Field(description="The MinT choices train.py holds, each with its reason.")


class LedgerSummary(BaseModel):
    counts: dict[str, int] = Field(description="Settings the inputs state, by disposition.")
    not_carried: list[str] = Field(description="key (file:line): why it does not move, and what to do.")
    changed: list[str] = Field(description="key (file:line): what it became, and why.")


class WrittenFile(BaseModel):
    path: str
    resource: str | None = Field(default=None, description="Read its full text with resources/read of this URI.")


class MigrateResult(BaseModel):
    plan: PlanSummary
    ledger: LedgerSummary
    warnings: list[str] = Field(description="CODE: what cannot move as-is (file:line).")
    unmapped: dict[str, list[str]] = Field(description="Settings not found, with candidate lines to read.")
    tinker_fixes: list[str] = Field(default_factory=list, description="Tinker sources: 0.38-only calls to change.")
    files_written: list[WrittenFile]
    next_steps: list[str]
    omitted: list[str] = Field(default_factory=list, description="What this summary leaves out.")
    full: MigrationResult | None = Field(default=None, description="detail='full': the plan and every file's text.")


def _short(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _value(value) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_none=True)
    return _short(repr(value), 120)


def _capped(lines: list[str], what: str, omitted: list[str]) -> list[str]:
    if len(lines) > LEDGER_ITEMS_SHOWN:
        omitted.append(f"{what}: {len(lines) - LEDGER_ITEMS_SHOWN} of {len(lines)} items")
    return lines[:LEDGER_ITEMS_SHOWN]


def run(request: MigrateRequest, env: Env) -> MigrationResult:
    from mint_migrate.migrate import migrate

    source = env.read(request.source_path)
    configs = [env.read(p) for p in request.config_paths]
    with env.fence():  # and the files a launch script names, which the analyzer follows
        return migrate(source, configs, output_dir=request.output_dir, workspace=env.workspace,
                       overwrite=request.overwrite, confirmed=request.confirmed, front=env.front)


def _shown_path(path: str, env: Env) -> str:
    """A written file as the caller names it: relative to the workspace under MCP."""
    if env.front == "mcp":
        try:
            return Path(path).relative_to(env.workspace.resolve()).as_posix()
        except ValueError:
            return path
    return path


def summary(result: MigrationResult, request: MigrateRequest, env: Env) -> MigrateResult:
    plan, omitted = result.plan, []
    found, not_found = {}, []
    for key, setting in plan.settings:
        if setting is None:
            not_found.append(key)
        else:
            found[key] = f"{_value(setting.value)} ({setting.source})"
    counts = Counter(item.disposition for item in plan.ledger)
    not_carried = [f"{i.key} = {_value(i.value)} ({i.source}): {_short(i.reason)}"
                   for i in plan.ledger if i.disposition == "not_carried"]
    changed = [f"{i.key} = {_value(i.value)} ({i.source}) -> {i.constant or 'MinT'}: {_short(i.reason)}"
               for i in plan.ledger if i.disposition == "changed"]
    unmapped = {}
    for key, lines in plan.unmapped.items():
        unmapped[key] = [_short(line, 160) for line in lines[:CANDIDATES_SHOWN]]
        if len(lines) > CANDIDATES_SHOWN:
            omitted.append(f"unmapped.{key}: {len(lines) - CANDIDATES_SHOWN} of {len(lines)} candidate lines")
    written = [WrittenFile(path=_shown_path(p, env), resource=_resource(p, env)) for p in plan.files_written]
    train = next((w.path for w in written if w.path.endswith("train.py") and not w.path.endswith(COMPANION)), None)
    if train is None:
        steps = [f'migrate_script(source_path="{request.source_path}", output_dir="migrated") writes train.py, '
                 f"{COMPANION} and MIGRATION.md" if env.front == "mcp"
                 else f"mint-migrate migrate {request.source_path} --out DIR writes them"]
    else:
        steps = after_migration(env.front, train)
        report = next((w for w in written if w.path.endswith("MIGRATION.md")), None)
        if report is not None:
            steps.insert(0, f"read {report.resource or report.path}: settings, what cannot move as-is, reward and data")
        steps.append("resume a stopped run: " + resume_hint(train))
    return MigrateResult(
        plan=PlanSummary(framework=plan.framework, algorithm=plan.algorithm, variant=plan.variant,
                         settings=found, not_found=not_found, mint=plan.mint),
        ledger=LedgerSummary(counts=dict(counts), not_carried=_capped(not_carried, "ledger.not_carried", omitted),
                             changed=_capped(changed, "ledger.changed", omitted)),
        warnings=[f"{w.code}: {_short(w.message, 400)}" + (f" ({w.source})" if w.source else "")
                  for w in plan.warnings],
        unmapped=unmapped,
        tinker_fixes=[_short(f"{c.source} ({c.location}) -> {c.mint}") for c in result.tinker_fixes],
        files_written=written,
        next_steps=steps,
        omitted=omitted,
    )


def _resource(path: str, env: Env) -> str | None:
    shown = _shown_path(path, env)
    return f"mint://workspace/{shown}" if env.front == "mcp" and shown != path else None


def full(result: MigrationResult, request: MigrateRequest, env: Env) -> MigrateResult:
    return summary(result, request, env).model_copy(update={"full": result})


def text(result: MigrationResult, request: MigrateRequest) -> str:
    plan = result.plan
    variant = f" ({plan.variant})" if plan.variant else ""
    lines = [f"framework: {plan.framework}   algorithm: {plan.algorithm}{variant}"]
    for key, setting in plan.settings:
        if setting is not None:
            value = setting.value.model_dump(exclude_none=True) if key == "lora" else setting.value
            lines.append(f"  {key:28} {value!r:40} {setting.source}")
    missing = [key for key, setting in plan.settings if setting is None and plan.unmapped.get(key)]
    if missing:  # not found, but some input line names them: where a person (or agent) should look
        lines.append("not found, with lines to read (MIGRATION.md): " + ", ".join(missing)
                     + "; confirm one with --set KEY=VALUE@FILE:LINE")
    if plan.ledger:
        counts = Counter(item.disposition for item in plan.ledger)
        lines.append(f"ledger: {len(plan.ledger)} settings the inputs state: " + ", ".join(
            f"{counts[d]} {d.replace('_', ' ')}" for d in ("carried", "changed", "not_carried", "server_side"))
            + " (each with its line and reason in MIGRATION.md)")
    for w in plan.warnings:
        lines.append(f"warning {w.code}: {w.message}" + (f" ({w.source})" if w.source else ""))
    train = next((p for p in plan.files_written if Path(p).name == "train.py"), None)
    if train:
        lines.append("wrote: " + ", ".join(plan.files_written))
        lines.append("Next: " + " && ".join(after_migration("cli", train)))
    else:
        lines.append(f"Nothing written; add --out DIR for train.py, {COMPANION} and MIGRATION.md.")
    return "\n".join(lines)


TOOL = ToolSpec(
    name="migrate_script",
    command="migrate",
    title="Migrate a training script to MinT",
    blurb="the user's script, launch script or config -> plan (every setting traced to file:line), "
    "train.py, mint_run.py, MIGRATION.md",
    description="Analyze a training setup (any framework mint-migrate reads: see map_concept) into a "
    "migration plan (every setting traced to file:line), a MinT train.py with mint_run.py (the plumbing "
    "it imports) and a MIGRATION.md report. The result summarises the plan, the ledger and the warnings, "
    "and names the files written with a resource URI for each full text (detail='full' inlines them).",
    cli_help="plan a migration; with --out write train.py, MIGRATION.md and the data step",
    request=MigrateRequest,
    result=MigrateResult,
    annotations=Hints(read_only=False, destructive=True, idempotent=True, open_world=False),
    isolated=True,
    run=run,
    summary=lambda result, request, env: fit(summary(result, request, env)),
    full=full,
    text=text,
    files=lambda result: list(result.plan.files_written),
)
