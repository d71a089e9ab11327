"""migrate_script accuracy on the real-world corpus: hand-labelled upstream files we do not tune to.

Runs the analyzer (`mint_migrate.analyze.analyze(source, configs)`) on every case of a split of
bench/real_world/manifest.json and prints framework, algorithm and settings accuracy, overall and per
framework, then the misses. A setting is right only when its value and its `file:line` are both
exact; settings are scored over all 18 keys x cases, and apart over the keys the inputs state (they
must be found) and the ones they do not (they must stay null). A clean refusal (MintMigrateError) and
a crash (any other exception) are counted apart, and score nothing for their case.

The holdout third is for the final report: for it only the figures are printed, never the misses,
unless --show-holdout-misses is given. Whoever works on the analyzer runs the default (dev) split.
Every split but dev is held out this way, the blind holdout2 manifest (issue 23) included:

    python bench/real_world/fetch_corpus.py                  # once: rebuild the corpus texts
    python bench/real_world_accuracy.py [--split dev|holdout|all] [--case ID] [--json]
    python bench/real_world/fetch_corpus.py --manifest bench/real_world/holdout2.json
    python bench/real_world_accuracy.py --manifest bench/real_world/holdout2.json --split holdout2
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mint_migrate.analyze import analyze  # noqa: E402
from mint_migrate.errors import MintMigrateError  # noqa: E402

MANIFEST = ROOT / "bench" / "real_world" / "manifest.json"
LORA_PARTS = ("rank", "alpha", "target_modules")  # the parts labelled; parts a later plan adds are not scored
CORPUS = ROOT / "bench" / "real_world" / ".corpus"


# --- comparing one case -----------------------------------------------------------------------------


def same_value(expected, got) -> bool:
    """JSON values equal as data: 5e-07 == 5.0e-7, 16 == 16.0; lists in order; dicts key by key."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected is got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return float(expected) == float(got)
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(same_value(e, g) for e, g in zip(expected, got, strict=True))
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(same_value(expected[k], got[k]) for k in expected)
    return expected == got


def setting_json(settings, key: str) -> dict | None:
    """One plan setting as {"value", "source"} (absent parts dropped), whatever shape the plan grows."""
    setting = getattr(settings, key, None) if settings is not None else None
    if setting is None:
        return None
    got = setting.model_dump(mode="json", exclude_none=True) if hasattr(setting, "model_dump") else dict(setting)
    if key == "lora" and isinstance(got.get("value"), dict):
        got["value"] = {part: v for part, v in got["value"].items() if part in LORA_PARTS}
    return got


def repo_source(source: str, case_dir: Path, primary: str) -> str:
    """The analyzer cites `label:line` with labels relative to the primary file's folder; labels cite
    `<path in the repository>:<line>`. Map the first onto the second (anything else is kept as is)."""
    label, sep, line = source.rpartition(":")
    if not sep or not line.isdigit():
        return source
    folder = (case_dir / primary).parent
    resolved = (folder / label).resolve()
    try:
        return f"{resolved.relative_to(case_dir.resolve()).as_posix()}:{line}"
    except ValueError:
        return source


def score_case(case: dict, case_dir: Path, keys: list[str]) -> dict:
    expected = case["expected"]
    source = case_dir / case["source"]
    configs = [case_dir / c for c in case["configs"]]
    result = {"id": case["id"], "split": case["split"], "framework": case["framework"], "status": "ok",
              "error": None, "framework_ok": False, "algorithm_ok": False, "got_framework": None,
              "got_algorithm": None, "keys": {}}
    try:
        plan = analyze(source, configs)
    except MintMigrateError as exc:
        result.update(status="refused", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a crash is a finding: record it, keep measuring the other cases
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        result.update(status="crashed", error=f"{type(exc).__name__}: {exc} "
                      f"(at {Path(frame.filename).name}:{frame.lineno})")
    for key in keys:
        want = expected["settings"].get(key)
        entry = {"expected": want, "got": None, "ok": False, "stated": want is not None}
        result["keys"][key] = entry
    result["ledger"] = {"found": 0, "total": len(expected.get("stated", [])), "missed": [], "items": 0,
                        "incomplete": 0}
    if result["status"] != "ok":
        return result
    result["ledger"] = score_ledger(case["expected"].get("stated", []), getattr(plan, "ledger", []))
    result["got_framework"] = getattr(plan, "framework", None)
    result["got_algorithm"] = getattr(plan, "algorithm", None)
    result["framework_ok"] = result["got_framework"] == expected["framework"]
    result["algorithm_ok"] = result["got_algorithm"] == expected["algorithm"]
    settings = getattr(plan, "settings", None)
    for key, entry in result["keys"].items():
        got = setting_json(settings, key)
        if got is not None and "source" in got:
            got["source"] = repo_source(str(got["source"]), case_dir, case["source"])
        entry["got"] = got
        want = entry["expected"]
        if want is None:
            entry["ok"] = got is None
        else:
            entry["ok"] = got is not None and same_value(want["value"], got.get("value")) and \
                want["source"] == got.get("source")
    return result


def ledger_key(key: str) -> str:
    """The labels write a key as the source does; `--learning-rate` and `learning_rate` are one name."""
    return key.lstrip("-+~").replace("-", "_")


def score_ledger(expected: list[dict], ledger: list) -> dict:
    """Ledger recall: a labelled item is found when the plan's ledger has an item of the same name and
    the same value (issue 22). Items the ledger writes without a source or a disposition are counted."""
    got: dict[str, list] = {}
    for item in ledger:
        got.setdefault(ledger_key(item.key), []).append(item.value)
    missed = [want for want in expected
              if not any(same_value(want["value"], value) for value in got.get(ledger_key(want["key"]), []))]
    incomplete = sum(1 for item in ledger if not item.source or not item.disposition)
    return {"found": len(expected) - len(missed), "total": len(expected), "missed": missed, "items": len(ledger),
            "incomplete": incomplete}


def miss_kind(entry: dict) -> str:
    want, got = entry["expected"], entry["got"]
    if want is None:
        return "spurious"
    if got is None:
        return "missed"
    value_ok = same_value(want["value"], got.get("value"))
    line_ok = want["source"] == got.get("source")
    return "wrong line" if value_ok else "wrong value" if line_ok else "wrong value and line"


# --- figures ---------------------------------------------------------------------------------------


def figures(results: list[dict], keys: list[str]) -> dict:
    n = len(results)
    entries = [e for r in results for e in r["keys"].values()]
    stated = [e for e in entries if e["stated"]]
    nulls = [e for e in entries if not e["stated"]]
    return {
        "cases": n,
        "framework": [sum(r["framework_ok"] for r in results), n],
        "algorithm": [sum(r["algorithm_ok"] for r in results), n],
        "settings": [sum(e["ok"] for e in entries), len(entries)],
        "settings_stated": [sum(e["ok"] for e in stated), len(stated)],
        "settings_null": [sum(e["ok"] for e in nulls), len(nulls)],
        "ledger": [sum(r["ledger"]["found"] for r in results), sum(r["ledger"]["total"] for r in results)],
        "ledger_incomplete": sum(r["ledger"]["incomplete"] for r in results),
        "refused": sum(r["status"] == "refused" for r in results),
        "crashed": sum(r["status"] == "crashed" for r in results),
    }


def breakdown(results: list[dict], keys: list[str]) -> dict:
    per_framework = {fw: figures([r for r in results if r["framework"] == fw], keys)
                     for fw in sorted({r["framework"] for r in results})}
    per_key = {}
    for key in keys:
        entries = [r["keys"][key] for r in results]
        stated = [e for e in entries if e["stated"]]
        nulls = [e for e in entries if not e["stated"]]
        per_key[key] = {"stated": [sum(e["ok"] for e in stated), len(stated)],
                        "null": [sum(e["ok"] for e in nulls), len(nulls)]}
    return {"per_framework": per_framework, "per_key": per_key}


def pct(pair: list[int]) -> str:
    right, total = pair
    return f"{right}/{total} = {right / total:.1%}" if total else "0/0"


def print_block(title: str, block: dict, detail: dict | None) -> None:
    print(f"\n== {title}: {block['cases']} cases ==")
    print(f"  framework accuracy      {pct(block['framework'])}")
    print(f"  algorithm accuracy      {pct(block['algorithm'])}")
    print(f"  settings, value and file:line exact (18 keys x cases)  {pct(block['settings'])}")
    print(f"    stated in the inputs (must be found)  {pct(block['settings_stated'])}")
    print(f"    not stated (must stay null)           {pct(block['settings_null'])}")
    print(f"  ledger recall, key and value (every stated setting)  {pct(block['ledger'])}; "
          f"items without a source or disposition: {block['ledger_incomplete']}")
    print(f"  refusals (clean MintMigrateError): {block['refused']}   crashes: {block['crashed']}")
    if detail is None:
        return
    print(f"  {'framework':11} {'cases':>5} {'framework':>11} {'algorithm':>11} {'settings':>13} "
          f"{'stated':>11} {'nulls':>11} {'refused':>7} {'crashed':>7}")
    for fw, b in detail["per_framework"].items():
        cell = lambda pair: f"{pair[0]}/{pair[1]}"  # noqa: E731
        print(f"  {fw:11} {b['cases']:>5} {cell(b['framework']):>11} {cell(b['algorithm']):>11} "
              f"{cell(b['settings']):>13} {cell(b['settings_stated']):>11} {cell(b['settings_null']):>11} "
              f"{b['refused']:>7} {b['crashed']:>7}")
    print(f"  {'key':28} {'stated: found':>14} {'not stated: null':>17}")
    for key, b in detail["per_key"].items():
        print(f"  {key:28} {b['stated'][0]:>6}/{b['stated'][1]:<7} {b['null'][0]:>8}/{b['null'][1]:<8}")


def case_misses(result: dict) -> list[str]:
    lines = []
    if result["status"] != "ok":
        return [f"{result['status']}: {result['error']}"]
    if not result["framework_ok"]:
        lines.append(f"framework: expected {result['expected_framework']}, got {result['got_framework']}")
    if not result["algorithm_ok"]:
        lines.append(f"algorithm: expected {result['expected_algorithm']}, got {result['got_algorithm']}")
    for key, e in result["keys"].items():
        if e["ok"]:
            continue
        want = "null" if e["expected"] is None else \
            f"{json.dumps(e['expected']['value'])} at {e['expected']['source']}"
        got = "null" if e["got"] is None else f"{json.dumps(e['got'].get('value'))} at {e['got'].get('source')}"
        lines.append(f"{key}: {miss_kind(e)}; expected {want}, got {got}")
    for want in result.get("ledger", {}).get("missed", []):
        lines.append(f"ledger: {want['key']} = {json.dumps(want['value'])} at {want['source']} not in the ledger")
    return lines


def analyzer_revision() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "mint_migrate"],
                               capture_output=True, text=True).stdout.strip()
        return rev + (" (mint_migrate/ modified)" if dirty else "")
    except OSError:
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", default="dev", help="dev (default), holdout, holdout2 or all: a split the manifest names")
    parser.add_argument("--case", action="append", default=[], help="only this case id (repeatable)")
    parser.add_argument("--corpus", type=Path, default=None,
                        help=f"the rebuilt corpus (default {CORPUS}, or .corpus-<name> beside another manifest)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST,
                        help="the labelled cases (default manifest.json; the blind holdout is holdout2.json)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument("--show-holdout-misses", action="store_true",
                        help="also list the holdout cases' misses and breakdowns (the final report only)")
    args = parser.parse_args()

    manifest = json.loads(args.manifest.read_text())
    keys = manifest["settings_keys"]
    names = sorted({c["split"] for c in manifest["cases"]})
    if args.split != "all" and args.split not in names:
        print(f"{args.manifest} has no split {args.split!r}; its splits: {', '.join(names)} (or all)", file=sys.stderr)
        return 2
    if args.corpus is None:
        # the same folder fetch_corpus.py writes for this manifest
        args.corpus = CORPUS if args.manifest.resolve() == MANIFEST else CORPUS.parent / f".corpus-{args.manifest.stem}"
    cases = [c for c in manifest["cases"] if args.split == "all" or c["split"] == args.split]
    if args.case:
        unknown = set(args.case) - {c["id"] for c in manifest["cases"]}
        if unknown:
            print(f"no such case: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        cases = [c for c in manifest["cases"] if c["id"] in args.case]
    missing = [c["id"] for c in cases if not all((args.corpus / c["id"] / f["path"]).is_file() for f in c["files"])]
    if missing:
        rebuild = "python bench/real_world/fetch_corpus.py" + \
            ("" if args.manifest.resolve() == MANIFEST else f" --manifest {args.manifest}")
        print(f"{len(missing)} case(s) are not in {args.corpus} (first: {missing[0]}). Rebuild the corpus: "
              f"{rebuild}", file=sys.stderr)
        return 2

    start = time.perf_counter()
    results = []
    for case in cases:
        result = score_case(case, args.corpus / case["id"], keys)
        result["expected_framework"] = case["expected"]["framework"]
        result["expected_algorithm"] = case["expected"]["algorithm"]
        results.append(result)
    seconds = time.perf_counter() - start

    show_holdout = args.show_holdout_misses
    splits = {name: [r for r in results if r["split"] == name]
              for name in ["dev"] + sorted({r["split"] for r in results} - {"dev"})}
    blocks = {}
    if len({r["split"] for r in results}) > 1 or args.split == "all":
        blocks["all"] = (figures(results, keys), breakdown(results, keys))
    for name, part in splits.items():
        if part:
            detail = breakdown(part, keys) if name == "dev" or show_holdout else None
            blocks[name] = (figures(part, keys), detail)
    shown = [r for r in results if r["split"] == "dev" or show_holdout]
    hidden = len(results) - len(shown)
    misses = {r["id"]: case_misses(r) for r in shown if case_misses(r)}

    meta = {"analyzer_revision": analyzer_revision(), "split": args.split, "cases": len(results),
            "seconds": round(seconds, 1),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"}
    if args.json:
        doc = {**meta, "blocks": {name: {"figures": fig, **(detail or {})} for name, (fig, detail) in blocks.items()},
               "misses": misses, "holdout_cases_hidden": hidden}
        print(json.dumps(doc, indent=1))
        return 0

    counts = Counter(r["framework"] for r in results)
    print(f"real-world corpus ({args.manifest.relative_to(ROOT) if args.manifest.is_relative_to(ROOT) else args.manifest}): "
          f"{len(results)} cases ({', '.join(f'{fw} {n}' for fw, n in sorted(counts.items()))}); split {args.split}")
    print(f"analyzer at {meta['analyzer_revision']}; {meta['machine']}; {seconds:.1f} s")
    titles = {"all": "whole selection", "dev": "dev split"}
    titles.update({name: f"{name} split" + ("" if show_holdout else " (figures only)") for name in splits if name != "dev"})
    for name, (fig, detail) in blocks.items():
        print_block(titles[name], fig, detail)
    print(f"\n== misses ({len(misses)} of {len(shown)} cases shown have any) ==")
    for case_id, lines in misses.items():
        split = next(r["split"] for r in results if r["id"] == case_id)
        print(f"{case_id}{f' [{split}]' if split != 'dev' else ''}")
        for line in lines:
            print(f"    {line}")
    if hidden:
        print(f"\n({hidden} holdout cases: misses not shown; --show-holdout-misses is for the final report only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
