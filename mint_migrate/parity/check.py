"""`mint-migrate parity` / `check_parity`: does the migrated train.py optimise the source's objective?

One check: the source's first step, run by its own framework, and train.py's first step on
mint-local (mint_side), on the same data rows and the same Hugging Face model, compared token by
token (compare). The source side depends on the framework the migration plan names:
- TRL and plain PyTorch loops: the script itself, in a child process (source_side, harness);
- a Tinker-SDK script: the script itself, against the same mint-local (harness.patch_tinker);
- verl and OpenRLHF launchers: their own reward, advantage and policy-loss code on the batch
  train.py sampled, in an env of their own (launcher_side, rl_source, framework_envs).
The result is a ParityReport with one of three verdicts: passed, failed (a difference, each a
finding with its cause and fix) or inconclusive (a side did not run: why, and the exact fix; never
reported as a difference). Only bad input (a missing file, a Hub dataset with no local copy)
raises MintMigrateError.
"""

import io
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from mint_migrate.errors import MintMigrateError
from mint_migrate.parity.compare import LOSS_TOLERANCE, Vocab, compare, text_leaves
from mint_migrate.parity.launcher_side import FRAMEWORKS as LAUNCHER_FRAMEWORKS
from mint_migrate.parity.launcher_side import critic_estimator, framework_python, run_rl_source
from mint_migrate.parity.mint_side import MintSideError, is_rl_script, run_mint_side
from mint_migrate.parity.records import ParityFinding, ParityReport, SideRecord
from mint_migrate.parity.source_side import SourceSideError, require_frameworks, run_source_side
from mint_migrate.plan import MigrationPlan
from mint_migrate.smoke import SmokeError, SmokeVerdict, local_server, run_smoke
from mint_migrate.workspace import also_readable, read_bytes_checked, read_text_checked

DEFAULT_ROWS = 8
MAX_ROWS = 64


def shared_model(model: str | None) -> Path:
    """The Hugging Face folder both sides load: `model`, or mint-local's tiny Qwen3 (built offline)."""
    from mint_local.tiny_model import VARIANTS, ensure_tiny_model

    if model is None or model in VARIANTS:
        return ensure_tiny_model(model or "tiny")
    path = Path(model).expanduser().resolve()
    if not (path / "config.json").is_file() or not (path / "tokenizer.json").is_file():
        raise MintMigrateError(
            f"--model {model}: not a Hugging Face model folder with config.json and tokenizer.json. "
            f"Omit --model to use mint-local's tiny Qwen3 (or name a variant: {', '.join(sorted(VARIANTS))})."
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
        import pyarrow

        rows = pyarrow.parquet.read_table(pyarrow.BufferReader(read_bytes_checked(path))).slice(0, n).to_pylist()
    elif suffix == ".csv":
        import csv

        with io.StringIO(read_text_checked(path), newline="") as f:
            rows = [row for _, row in zip(range(n), csv.DictReader(f), strict=False)]  # the first n
    else:
        text = read_text_checked(path)  # an MCP tool's read fence, if any
        if text.lstrip().startswith("["):
            rows = json.loads(text)[:n]
        else:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()][:n]
    if not rows or not all(isinstance(row, dict) for row in rows):
        raise MintMigrateError(f"{path}: expected rows of named columns (JSON objects).")
    return rows


def _source_plan(source: Path, configs: list[Path]) -> MigrationPlan:
    """The migration plan of the source: its framework picks the source side, its data the rows."""
    from mint_migrate.migrate import migrate

    return migrate(source, configs, output_dir=None, workspace=source.parent, overwrite=False).plan


def _plan_data_file(plan: MigrationPlan) -> Path | None:
    """The local data file the migration plan found in the source, if any."""
    data = getattr(plan, "data", None)
    local = getattr(data, "local_path", None) if data is not None else None
    return Path(local) if local and Path(local).is_file() else None


def _migrated_train(source: Path, configs: list[Path], workdir: Path) -> Path:
    from mint_migrate.migrate import migrate

    out = workdir / "migrated"
    migrate(source, configs, output_dir=str(out), workspace=workdir, overwrite=True)
    return out / "train.py"


class _Stopped(Exception):
    """A side could not run; its finding is already in the report."""


class _Check:
    """One parity check in progress: its inputs, its scratch folder and the report it fills."""

    def __init__(self, source: Path, train: Path, model_dir: Path, workdir: Path, report: ParityReport, options: dict):
        self.source, self.train, self.model_dir, self.workdir = source, train, model_dir, workdir
        self.report, self.options = report, options
        self.records: dict[str, SideRecord] = {}
        self.files: dict[str, Path] = {}

    def write_rows(self, name: str, rows: list[dict]) -> Path:
        """Rows as JSON lines (keys the datasets library filled with None left out)."""
        path = self.workdir / name
        path.write_text(
            "".join(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n" for row in rows),
            encoding="utf-8",
        )
        self.files[name] = path
        return path

    def require_source_frameworks(self) -> None:
        """Before either side runs: a framework the source needs and this interpreter lacks."""
        try:
            require_frameworks(self.source)
        except SourceSideError as exc:
            self.stopped(exc)

    def not_supported(self, why: str) -> None:
        self.report.findings.append(ParityFinding(
            check="run", cause="not_supported", message=f"the source side cannot run here: {why}",
            fix="Nothing to fix in train.py: parity cannot compare this objective; rely on the smoke run and "
            "MIGRATION.md's ledger.",
        ))  # fmt: skip
        raise _Stopped

    def stopped(self, exc: SourceSideError) -> None:
        self.report.findings.append(ParityFinding(
            check="run", cause=exc.cause, message=f"the source did not reach its first step: {exc}", fix=exc.fix,
        ))  # fmt: skip
        raise _Stopped from exc

    def source_side(self, rows: int, data: Path | None, completions: Path | None = None) -> SideRecord:
        o = self.options
        try:
            record, cached = run_source_side(
                self.source, self.model_dir, rows, self.workdir, data=data, script_args=o["script_args"],
                completions=completions, timeout_s=o["timeout_s"], fresh=o["fresh"], cancel=o["cancel"],
                extra_env=o.get("env"),
            )  # fmt: skip
        except SourceSideError as exc:
            self.stopped(exc)
        self.report.timings["source_s"] = 0.0 if cached else record.seconds
        if cached:
            self.report.notes.append("source side: reused the cached record of an identical run (--fresh re-runs it)")
        self.report.notes += [f"source: {note}" for note in record.notes]
        self.records["source"] = record
        return record

    def mint_side(self, rows_file: Path, n_rows: int) -> SideRecord:
        try:
            record = run_mint_side(
                self.train, rows_file, self.model_dir, n_rows, self.workdir, timeout_s=self.options["timeout_s"],
                cancel=self.options["cancel"],
            )
        except MintSideError as exc:
            self.report.findings.append(ParityFinding(
                check="run", cause="mint_run", message=f"train.py did not produce its first step: {exc}",
                fix="Run `mint-migrate smoke` on train.py and fix what it reports first.",
            ))  # fmt: skip
            raise _Stopped from exc
        self.report.timings["mint_s"] = record.seconds
        self.records["mint"] = record
        return record

    def keep(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for side, record in self.records.items():
            (folder / f"{side}_record.json").write_text(record.model_dump_json(indent=1), encoding="utf-8")
        for name, path in self.files.items():
            shutil.copy(path, folder / name)
        self.report.records_dir = str(folder.resolve())


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
    cancel: threading.Event | None = None,
) -> ParityReport:
    """Run both sides' first step and compare them (see the module docstring).

    train: the migrated train.py (default: migrate `source` afresh into a temporary folder).
    data: a local copy of the source's data (needed when the source reads a Hub dataset offline,
    or reads its file without `datasets`). mint_data: the rows train.py reads, when a data step
    converted them outside train.py (the first N, in the source's order). keep: a folder for both
    sides' records and the rows. cancel: when set (an MCP client went away), the side running stops
    with everything it started, and the report says so.
    """
    started = time.monotonic()
    configs = list(configs or [])
    source = Path(source).expanduser().resolve()
    if not source.is_file():
        raise MintMigrateError(f"{source} is not a file; give the source training script.")
    not_python = (f"{source.name}: parity runs a Python training script (or a verl / OpenRLHF launcher); give the "
                  ".py the launcher runs.")  # fmt: skip
    try:
        plan = _source_plan(source, configs)
    except MintMigrateError as exc:
        if source.suffix != ".py":
            raise MintMigrateError(not_python) from exc
        if train is None:  # nothing to compare against without a migration
            raise
        plan = MigrationPlan(framework="unknown", algorithm="other")  # the script runs as it is
    if source.suffix != ".py" and plan.framework not in LAUNCHER_FRAMEWORKS:
        raise MintMigrateError(not_python)
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
    # mint-local starts while the source side runs: on 2 cores that hides most of its start-up. Its
    # launcher is imported here first: CPython 3.11 builds ASTs with interpreter-wide state
    # (cpython#106905), so no module should be compiled in that thread while another parses.
    import mint_local.launcher  # noqa: F401

    threading.Thread(target=_start_server, args=(model_dir,), name="parity-mint-local", daemon=True).start()
    try:
        with also_readable(workdir):  # what parity writes there itself: train.py migrated afresh, rows
            train_path = Path(train).resolve() if train is not None else _migrated_train(source, configs, workdir)
            report = ParityReport(passed=False, source=str(source), train=str(train_path), model=str(model_dir))
            if train is None:
                report.notes.append(f"train.py: migrated afresh from {source.name} (give the train path to check yours)")
            options = {"script_args": list(script_args or []), "timeout_s": timeout_s, "fresh": fresh, "cancel": cancel}
            check = _Check(source, train_path, model_dir, workdir, report, options)

            def data_rows() -> list[dict] | None:
                data_file = data or _plan_data_file(plan)
                return read_data_rows(Path(data_file), rows) if data_file else None

            try:
                if plan.framework in LAUNCHER_FRAMEWORKS:
                    _launcher(check, plan, rows, data_rows, progress)
                elif plan.framework == "tinker":
                    _tinker(check, rows, data, mint_data, data_rows, progress)
                elif plan.framework == "torchforge":
                    check.not_supported(
                        "torchforge computes its loss inside Monarch actors (its trainer service), which need GPUs and "
                        "its process mesh; parity has no CPU entry point into that code."
                    )
                else:
                    check.require_source_frameworks()
                    if is_rl_script(train_path):
                        _grpo(check, rows, data_rows, progress)
                    else:
                        _supervised(check, rows, data, mint_data, data_rows, progress)
            except _Stopped:
                pass
            if keep is not None:
                check.keep(Path(keep))
            return _finish(report, started)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _supervised(
    check: _Check,
    rows: int,
    data: Path | None,
    mint_data: Path | None,
    data_rows: Callable[[], list[dict] | None],
    progress: Callable[[int, str], None],
) -> None:
    """SFT and DPO: the source first (it records the rows it loaded), then train.py on those rows."""
    progress(0, f"running {check.source.name} for one step ({rows} rows)")
    source_record = check.source_side(rows, data)
    source_rows = source_record.rows if source_record.rows is not None else data_rows()
    mint_rows = read_data_rows(Path(mint_data), rows) if mint_data is not None else source_rows
    if mint_rows is None:
        raise MintMigrateError(
            f"{check.source.name} does not load its data with `datasets`, and no data file was found: "
            "give --data FILE (the file the script reads)."
        )
    progress(1, f"running {check.train.name} --parity-dump on mint-local")
    mint_record = check.mint_side(check.write_rows("rows.jsonl", mint_rows), len(mint_rows))
    progress(2, "comparing")
    step_rows = source_rows if source_rows is not None else mint_rows
    compare(source_record, mint_record, step_rows, Vocab(check.model_dir), check.report)


def _launcher(
    check: _Check, plan: MigrationPlan, rows: int, data_rows: Callable[[], list[dict] | None], progress: Callable[[int, str], None]
) -> None:
    """verl / OpenRLHF: train.py samples, then the framework's own reward, advantage and policy-loss
    code scores the same completions (their trainers need a cluster; their loss code does not)."""
    framework = plan.framework
    if plan.algorithm not in ("grpo", "ppo", "reinforce"):
        check.not_supported(
            f"parity compares {framework}'s RL objectives (GRPO, REINFORCE++, RLOO ...); this launcher trains "
            f"{plan.algorithm}, whose {framework} trainer has no CPU entry point into its loss."
        )
    critic = critic_estimator(check.source, framework, plan.algorithm)
    if critic:
        check.not_supported(
            f"{critic}: {framework}'s PPO advantages come from its critic's value estimates (GAE); train.py has no "
            "critic, so there is no shared batch both sides can score. Critic-free estimators (GRPO, REINFORCE++, "
            "RLOO ...) are compared."
        )
    try:
        framework_python(framework)  # before train.py samples: a missing env makes the rest pointless
    except SourceSideError as exc:
        check.stopped(exc)
    reward = plan.reward
    reward_file = reward.file if reward is not None and reward.status == "user" else None
    reward_name = reward.functions[0].name if reward_file and reward.functions else None

    def score(groups: list[dict]) -> SideRecord:
        try:
            return run_rl_source(
                framework, plan.algorithm, check.source, groups, reward_file, reward_name, check.model_dir, check.workdir,
                timeout_s=check.options["timeout_s"], cancel=check.options["cancel"],
            )  # fmt: skip
        except SourceSideError as exc:
            check.stopped(exc)
            raise  # unreachable: stopped() raises

    _grpo(check, rows, data_rows, progress, score=score)


def _tinker(
    check: _Check,
    rows: int,
    data: Path | None,
    mint_data: Path | None,
    data_rows: Callable[[], list[dict] | None],
    progress: Callable[[int, str], None],
) -> None:
    """A Tinker-SDK script is its own source side: it runs, unchanged, against the same mint-local
    train.py uses (the SDKs speak one API), and its first forward_backward's datums are its step."""
    from mint_migrate.smoke import LOCAL_API_KEY

    check.require_source_frameworks()
    server = local_server(str(check.model_dir), "cpu")
    # tinker 0.22 checks the key's prefix client-side; mint-local takes any key.
    check.options["env"] = {"TINKER_BASE_URL": server.base_url, "TINKER_API_KEY": "tml-mint-local-parity",
                            "MINT_BASE_URL": server.base_url, "MINT_API_KEY": LOCAL_API_KEY, "TINKER_TELEMETRY": "0"}  # fmt: skip
    _supervised(check, rows, data, mint_data, data_rows, progress)


def _grpo(
    check: _Check,
    rows: int,
    data_rows: Callable[[], list[dict] | None],
    progress: Callable[[int, str], None],
    score: Callable[[list[dict]], SideRecord] | None = None,
) -> None:
    """GRPO: train.py first (its sampler draws the completions), then the source's trainer scores
    the very same completions with its own reward functions, advantages and loss (`score`, for a
    framework whose trainer does not run here: its own loss code on the groups)."""
    raw = data_rows()
    if raw is None:
        raise MintMigrateError(
            f"no data file was found for {check.source.name}: give --data FILE (the prompts it trains on)."
        )
    progress(0, f"running {check.train.name} --parity-dump on mint-local (it samples the completions)")
    mint_record = check.mint_side(check.write_rows("rows.jsonl", raw), len(raw))
    if not mint_record.sequences:
        check.report.findings.append(ParityFinding(
            check="run", cause="mint_run",
            message="train.py's first step trained no group: every group's rewards were equal, so there is nothing "
            "to compare.",
            fix="Give more rows (--rows), or check that the reward can tell the answers apart.",
        ))  # fmt: skip
        raise _Stopped
    groups = completion_groups(mint_record, raw)
    kept = [raw[g["row_index"]] for g in groups]
    completions = check.workdir / "completions.json"
    completions.write_text(json.dumps(groups), encoding="utf-8")
    check.files["completions.json"] = completions
    progress(1, f"running {check.source.name} on the same {sum(len(g['completions']) for g in groups)} completions")
    if score is not None:
        source_record = score(groups)
        check.report.timings["source_s"] = source_record.seconds
        check.report.notes += [f"source: {note}" for note in source_record.notes]
        check.records["source"] = source_record
    else:
        source_record = check.source_side(len(kept), check.write_rows("kept_rows.jsonl", kept), completions)
    progress(2, "comparing")
    compare(source_record, mint_record, kept, Vocab(check.model_dir), check.report)


def completion_groups(mint_record: SideRecord, raw: list[dict]) -> list[dict]:
    """train.py's sampled groups: {prompt, completions, row, row_index} per prompt, in its order. A
    dumped row is matched to the raw row it came from by its texts (train.py may rename columns)."""
    groups: list[dict] = []
    for sequence in mint_record.sequences:
        prompt = sequence.tokens[: sequence.prompt_length]
        if not groups or groups[-1]["prompt"] != prompt:
            groups.append({"prompt": prompt, "completions": []})
        groups[-1]["completions"].append(sequence.tokens[sequence.prompt_length :])
    dumped = mint_record.rows or []
    for i, group in enumerate(groups):
        text = json.dumps(dumped[i]) if i < len(dumped) else ""
        scores = [sum(len(leaf) for leaf in text_leaves(row) if json.dumps(leaf)[1:-1] in text) for row in raw]
        group["row_index"] = max(range(len(raw)), key=lambda j: scores[j])
        group["row"] = raw[group["row_index"]]
    return groups


def _start_server(model_dir: Path) -> None:
    """Start (or find) the mint-local the MinT side will use; a failure is reported by that side."""
    try:
        local_server(str(model_dir), "cpu")
    except Exception:  # noqa: BLE001 - run_mint_side starts it again and explains the failure
        pass


def _finish(report: ParityReport, started: float) -> ParityReport:
    """The verdict. A side that did not run leaves nothing compared: inconclusive, never failed."""
    if any(f.check == "run" for f in report.findings):
        report.passed, report.verdict = False, "inconclusive"
        report.timings["total_s"] = round(time.monotonic() - started, 2)
        return report
    report.passed = (
        not any(f.severity == "error" for f in report.findings)
        and report.sequences_compared > 0
        and report.tokens_equal
        and report.positions_equal
        and (report.kind == "dpo" or report.weight_constant is not None)
        and (report.loss_relative_error is not None and report.loss_relative_error < LOSS_TOLERANCE)
    )
    report.verdict = "passed" if report.passed else "failed"
    report.timings["total_s"] = round(time.monotonic() - started, 2)
    return report


# --- output -------------------------------------------------------------------------------------------------


def format_report(report: ParityReport) -> str:
    """The report for a person at a shell."""
    head = report.verdict.upper()
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
    if report.verdict == "inconclusive":
        lines = [
            "`mint-migrate parity` inconclusive: a side did not run, so the objectives were not compared "
            "(nothing here says they differ).",
            "",
        ]
        for f in report.findings:
            fix = f" Fix: {f.fix}" if f.fix else ""
            lines.append(f"- **{f.cause}**: {f.message}{fix}")
        return "\n".join(lines) + "\n"
    verdict = "passed" if report.passed else "FAILED"
    lines = [
        f"`mint-migrate parity` {verdict}: {report.source_runner or 'the source'} and train.py, one step on "
        f"{report.rows} data rows, both on the same tiny model ({Path(report.model).name}).",
        "",
        f"- Token sequences: {'identical' if report.tokens_equal else 'different'} "
        f"({report.sequences_compared} compared); trained positions: "
        f"{'identical' if report.positions_equal else 'different'}.",
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
    from mint_migrate import userfiles
    from mint_migrate.report import with_section
    from mint_migrate.workspace import write_text

    target = Path(report.train).parent / "MIGRATION.md"
    if not target.is_file():
        return None
    text = with_section(userfiles.read_text(target), "Parity", parity_markdown(report))  # the one door
    return write_text(target, text, workspace, overwrite=True)


class SmokeParityVerdict(SmokeVerdict):
    """A smoke verdict, with the parity check that followed it when one was asked for."""

    parity: ParityReport | None = Field(default=None, description="The parity check against the source, if asked.")


def smoke_with_parity(
    script: Path, source: Path | None, *, rows: int = DEFAULT_ROWS, **smoke_options
) -> SmokeParityVerdict:
    """A smoke run of train.py, then (with a source, and if the run passed) the parity check against
    it, in one verdict: a failed parity check fails the verdict, the report is `verdict.parity`."""
    verdict = SmokeParityVerdict(**run_smoke(script, **smoke_options).model_dump())
    if source is None:
        return verdict
    if not verdict.passed:
        verdict.notes.append("parity not checked: the smoke run failed first")
        return verdict
    # One model everywhere: the smoke run's model is the one both parity sides load.
    model = smoke_options.get("model")
    report = check_parity(source, train=script, rows=rows, model=model, cancel=smoke_options.get("cancel"))
    verdict.parity = report
    if report.verdict == "inconclusive":
        why = next((f for f in report.findings if f.check == "run"), None)
        verdict.notes.append(
            "parity inconclusive (nothing compared, nothing found to differ): "
            + (f"{why.message} Fix: {why.fix}" if why is not None else "see parity.findings")
        )
    elif not report.passed:
        errors = [f for f in report.findings if f.severity == "error"]
        first = errors[0].message if errors else "see parity.findings"
        verdict.errors.append(SmokeError(
            kind="parity",
            message=f"train.py runs but does not optimise the source's objective ({len(errors)} finding(s)): {first}",
            fix=errors[0].fix if errors and errors[0].fix else "Read parity.findings: each has its cause and fix.",
        ))  # fmt: skip
        verdict.passed = False
    return verdict

