"""`mint-migrate parity` / `check_parity`: does the migrated train.py optimise the source's objective?

One check: the source script's first step, run by its own framework (source_side), and train.py's
first step on mint-local (mint_side), on the same data rows and the same tiny Hugging Face model,
compared token by token (compare). The result is a ParityReport; a difference is a finding with
its cause and fix, never an exception. Only bad input (a missing file, an uninstalled framework,
a Hub dataset with no local copy) raises MintMigrateError.
"""

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mcp_server.errors import MintMigrateError
from mcp_server.parity.compare import LOSS_TOLERANCE, Vocab, compare
from mcp_server.parity.mint_side import MintSideError, run_mint_side
from mcp_server.parity.records import ParityFinding, ParityReport
from mcp_server.parity.source_side import SourceSideError, run_source_side
from mcp_server.smoke import SmokeError, SmokeVerdict, run_smoke

DEFAULT_ROWS = 8
MAX_ROWS = 64


def shared_model(model: str | None) -> Path:
    """The Hugging Face folder both sides load: `model`, or mint-local's tiny Qwen3 (built offline)."""
    if model is None or model == "tiny":
        from mint_local.tiny_model import ensure_tiny_model

        return ensure_tiny_model("tiny")
    path = Path(model).expanduser().resolve()
    if not (path / "config.json").is_file() or not (path / "tokenizer.json").is_file():
        raise MintMigrateError(
            f"--model {model}: not a Hugging Face model folder with config.json and tokenizer.json. "
            "Omit --model to use mint-local's tiny Qwen3."
        )
    return path


def read_data_rows(path: Path, n: int) -> list[dict]:
    """The first n rows of a .jsonl / .json / .parquet / .csv file."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow.parquet
        except ImportError as exc:
            raise MintMigrateError(f"{path}: reading parquet needs pyarrow (pip install pyarrow).") from exc
        rows = pyarrow.parquet.read_table(path).slice(0, n).to_pylist()
    elif suffix == ".csv":
        import csv

        with path.open(newline="", encoding="utf-8") as f:
            rows = [row for _, row in zip(range(n), csv.DictReader(f))]
    else:
        text = path.read_text(encoding="utf-8")
        if text.lstrip().startswith("["):
            rows = json.loads(text)[:n]
        else:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()][:n]
    if not rows or not all(isinstance(row, dict) for row in rows):
        raise MintMigrateError(f"{path}: expected rows of named columns (JSON objects).")
    return rows


def _plan_data_file(source: Path, configs: list[Path]) -> Path | None:
    """The local data file the migration plan found in the source, if any."""
    from mcp_server.migrate import migrate

    plan = migrate(source, configs, output_dir=None, workspace=source.parent, overwrite=False).plan
    data = getattr(plan, "data", None)
    local = getattr(data, "local_path", None) if data is not None else None
    return Path(local) if local and Path(local).is_file() else None


def _migrated_train(source: Path, configs: list[Path], workdir: Path) -> Path:
    from mcp_server.migrate import migrate

    out = workdir / "migrated"
    migrate(source, configs, output_dir=str(out), workspace=workdir, overwrite=True)
    return out / "train.py"


def check_parity(
    source: Path,
    *,
    train: Path | None = None,
    configs: list[Path] | None = None,
    rows: int = DEFAULT_ROWS,
    data: Path | None = None,
    mint_data: Path | None = None,
    model: str | None = None,
    script_args: list[str] | None = None,
    timeout_s: float = 600,
    fresh: bool = False,
    keep: Path | None = None,
    on_progress: Callable[[int, str], None] | None = None,
) -> ParityReport:
    """Run both sides' first step and compare them (see the module docstring).

    train: the migrated train.py (default: migrate `source` afresh into a temporary folder).
    data: a local copy of the source's data (needed when the source reads a Hub dataset offline,
    or reads its file without `datasets`). mint_data: the rows train.py reads, when a data step
    converted them outside train.py (the first N, in the source's order). keep: copy both sides' records and the rows there.
    """
    started = time.monotonic()
    configs = list(configs or [])
    source = Path(source).expanduser().resolve()
    if not source.is_file():
        raise MintMigrateError(f"{source} is not a file; give the source training script.")
    if source.suffix != ".py":
        raise MintMigrateError(f"{source.name}: parity runs a Python training script; give the .py the launcher runs.")
    if not 1 <= rows <= MAX_ROWS:
        raise MintMigrateError(f"--rows {rows}: use 1 to {MAX_ROWS} (a handful of rows shows every difference).")
    for flag, path in (("--data", data), ("--mint-data", mint_data)):
        if path is not None and not Path(path).is_file():
            raise MintMigrateError(f"{flag} {path}: no such file.")
    if train is not None and not Path(train).is_file():
        raise MintMigrateError(f"{train} is not a file; give the migrated train.py (or omit it to migrate afresh).")
    model_dir = shared_model(model)

    def progress(step: int, message: str) -> None:
        if on_progress is not None:
            try:
                on_progress(step, message)
            except Exception:  # noqa: BLE001 - a broken progress display must not sink the check
                pass

    workdir = Path(tempfile.mkdtemp(prefix="mint-parity-"))
    try:
        train_path = Path(train).resolve() if train is not None else _migrated_train(source, configs, workdir)
        report = ParityReport(passed=False, source=str(source), train=str(train_path), model=str(model_dir))
        if train is None:
            report.notes.append(f"train.py: migrated afresh from {source.name} (give the train path to check yours)")
        progress(0, f"running {source.name} for one step ({rows} rows)")
        try:
            source_record, cached = run_source_side(
                source, model_dir, rows, workdir, data=data, script_args=script_args, timeout_s=timeout_s, fresh=fresh
            )
        except SourceSideError as exc:
            report.findings.append(ParityFinding(
                check="run", cause="source_run", message=f"the source did not reach its first step: {exc}",
                fix="Make the script run on this machine (CPU, offline), or give --data for its dataset.",
            ))  # fmt: skip
            return _finish(report, started)
        report.timings["source_s"] = 0.0 if cached else source_record.seconds
        if cached:
            report.notes.append("source side: reused the cached record of an identical run (--fresh re-runs it)")
        report.notes += [f"source: {note}" for note in source_record.notes]

        source_rows = source_record.rows
        if source_rows is None:
            data_file = data or _plan_data_file(source, configs)
            source_rows = read_data_rows(Path(data_file), rows) if data_file else None
        mint_rows = read_data_rows(Path(mint_data), rows) if mint_data is not None else source_rows
        if mint_rows is None:
            raise MintMigrateError(
                f"{source.name} does not load its data with `datasets`, and no data file was found: "
                "give --data FILE (the file the script reads)."
            )
        step_rows = source_rows if source_rows is not None else mint_rows
        rows_file = workdir / "rows.jsonl"
        rows_file.write_text(
            "".join(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n" for row in mint_rows),
            encoding="utf-8",
        )
        progress(1, f"running {train_path.name} --parity-dump on mint-local")
        try:
            mint_record = run_mint_side(train_path, rows_file, model_dir, len(mint_rows), workdir, timeout_s=timeout_s)
        except MintSideError as exc:
            report.findings.append(ParityFinding(
                check="run", cause="mint_run", message=f"train.py did not produce its first step: {exc}",
                fix="Run `mint-migrate smoke` on train.py and fix what it reports first.",
            ))  # fmt: skip
            return _finish(report, started)
        report.timings["mint_s"] = mint_record.seconds
        progress(2, "comparing")
        compare(source_record, mint_record, step_rows, Vocab(model_dir), report)
        if keep is not None:
            keep = Path(keep)
            keep.mkdir(parents=True, exist_ok=True)
            (keep / "source_record.json").write_text(source_record.model_dump_json(indent=1), encoding="utf-8")
            (keep / "mint_record.json").write_text(mint_record.model_dump_json(indent=1), encoding="utf-8")
            shutil.copy(rows_file, keep / "rows.jsonl")
            report.records_dir = str(keep.resolve())
        return _finish(report, started)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _finish(report: ParityReport, started: float) -> ParityReport:
    report.passed = (
        not any(f.severity == "error" for f in report.findings)
        and report.sequences_compared > 0
        and report.tokens_equal
        and report.positions_equal
        and (report.kind == "dpo" or report.weight_constant is not None)
        and (report.loss_relative_error is not None and report.loss_relative_error < LOSS_TOLERANCE)
    )
    report.timings["total_s"] = round(time.monotonic() - started, 2)
    return report


# --- output -------------------------------------------------------------------------------------------------


def format_report(report: ParityReport) -> str:
    """The report for a person at a shell."""
    head = "PASSED" if report.passed else "FAILED"
    lines = [f"parity {head}: {report.source} vs {report.train}"]
    if report.source_runner:
        lines.append(f"  source       {report.source_runner} ({report.kind}), one step on {report.rows} rows")
    lines.append(f"  model        {report.model}")
    if report.sequences_compared:
        n, same = report.sequences_compared, report.sequences_same_tokens
        tokens = "equal" if report.tokens_equal else f"DIFFER in {n - same}"
        positions = "equal" if report.positions_equal else "DIFFER" if same else "not comparable"
        lines.append(f"  sequences    {n} compared; tokens {tokens}, trained positions {positions}")
    if report.weight_constant is not None:
        lines.append(f"  weights      mint = c x source, c = {report.weight_constant_meaning}")
    if report.source_loss is not None and report.mint_loss is not None:
        error = f", relative error {report.loss_relative_error:.2g}" if report.loss_relative_error is not None else ""
        lines.append(f"  step-0 loss  source {report.source_loss:.6g}, train.py {report.mint_loss:.6g}{error}")
    lines.append(f"  took         {report.timings.get('total_s', 0):.1f} s")
    for note in report.notes:
        lines.append(f"  note: {note}")
    # One line per kind of difference: the same cause on every row is one problem to fix.
    groups: dict[tuple, list] = {}
    for f in report.findings:
        groups.setdefault((f.severity, f.check, f.cause, f.fix), []).append(f)
    for (severity, check, cause, fix), found in groups.items():
        others = sorted({f.row for f in found[1:] if f.row is not None and f.row != found[0].row})
        also = f" (also rows {', '.join(map(str, others))})" if others else ""
        lines.append(f"  {severity} [{check}/{cause}] {found[0].message}{also}")
        if fix:
            lines.append(f"    fix: {fix}")
    if report.records_dir:
        lines.append(f"  records in {report.records_dir}")
    return "\n".join(lines)


def parity_markdown(report: ParityReport) -> str:
    """The body of MIGRATION.md's "Parity" section."""
    verdict = "passed" if report.passed else "FAILED"
    lines = [
        f"`mint-migrate parity` {verdict}: {report.source_runner or 'the source'} and train.py, one step on "
        f"{report.rows} data rows, both on the same tiny model ({Path(report.model).name}).",
        "",
        f"- Token sequences: {'identical' if report.tokens_equal else 'different'} "
        f"({report.sequences_compared} compared); trained positions: {'identical' if report.positions_equal else 'different'}.",
    ]
    if report.weight_constant is not None:
        lines.append(f"- Per-token weights: train.py = c x source, c = {report.weight_constant_meaning}")
    if report.loss_relative_error is not None:
        lines.append(
            f"- Step-0 loss: source {report.source_loss:.6g}, train.py {report.mint_loss:.6g} "
            f"(relative error {report.loss_relative_error:.2g} after c; tolerance {LOSS_TOLERANCE:g})."
        )
    for f in report.findings:
        fix = f" Fix: {f.fix}" if f.fix else ""
        lines.append(f"- **{f.severity}** ({f.cause}): {f.message}{fix}")
    return "\n".join(lines) + "\n"


def record_in_migration_md(report: ParityReport, workspace: Path) -> Path | None:
    """Write the report as the "Parity" section of the MIGRATION.md beside train.py, if there is one."""
    from mcp_server.report import with_section
    from mcp_server.workspace import write_text

    target = Path(report.train).parent / "MIGRATION.md"
    if not target.is_file():
        return None
    text = with_section(target.read_text(encoding="utf-8"), "Parity", parity_markdown(report))
    return write_text(target, text, workspace, overwrite=True)


def smoke_with_parity(script: Path, source: Path, *, rows: int = DEFAULT_ROWS, **smoke_options) -> SmokeVerdict:
    """A smoke run of train.py, then (if it passed) the parity check against `source`, in one verdict:
    a failed parity check fails the verdict, with the report under `verdict.parity`."""
    verdict = run_smoke(script, **smoke_options)
    if not verdict.passed:
        verdict.notes.append("parity not checked: the smoke run failed first")
        return verdict
    report = check_parity(source, train=script, rows=rows)
    verdict.parity = report
    if not report.passed:
        errors = [f for f in report.findings if f.severity == "error"]
        first = errors[0].message if errors else "see parity.findings"
        verdict.errors.append(SmokeError(
            kind="parity",
            message=f"train.py runs but does not optimise the source's objective ({len(errors)} finding(s)): {first}",
            fix=(errors[0].fix if errors and errors[0].fix else "Read parity.findings; `mint-migrate parity` explains each."),
        ))  # fmt: skip
        verdict.passed = False
    return verdict
