"""Check the typing of the `stated` labels in manifest.json against the corpus texts.

The labels were written by hand; this only catches slips of the hand, never judges a label:

- every item has a key, a value and a `source` that is a non-empty line of one of its case's files;
- the cited line shows the value's text, or the key for a bare switch (a value computed or composed
  on another line, a YAML list written below its key: those are listed with --review, to be checked
  by eye);
- an item citing a YAML file under a key that file holds has the value the file gives it
  (interpolations aside), read the way the run reads it (`1e-5` is a number).

    python bench/real_world/fetch_corpus.py      # the texts first
    python bench/real_world/check_labels.py [--review]

Exit status 1 when a structural problem or a YAML mismatch is found.
"""

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
NUMBER = re.compile(r"(?<![\w.])[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
YAML_FLOAT = re.compile(r"^[-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)$")
KEY_PART = re.compile(r"[^.\[\]]+|\[\d+\]")


def shows_value(value, line: str) -> bool:
    """Whether the line writes the value, however the source spells a number or a switch."""
    numbers = [float(token) for token in NUMBER.findall(line)]
    if isinstance(value, bool):
        return str(value).lower() in line.lower()
    if isinstance(value, int | float):
        return float(value) in numbers
    if isinstance(value, list):
        return bool(value) and all(shows_value(item, line) for item in value)
    if isinstance(value, dict):
        return False
    return str(value) in line


def yaml_value(value):
    """The value a run reads: PyYAML leaves `1e-5` a string, OmegaConf and the dataclass parsers do not."""
    if isinstance(value, str) and YAML_FLOAT.match(value):
        return float(value)
    if isinstance(value, list):
        return [yaml_value(item) for item in value]
    return value


def lookup(document, key: str):
    node = document
    for part in KEY_PART.findall(key):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node


def check_case(case: dict, corpus: Path) -> tuple[list[str], list[str]]:
    problems, review = [], []
    paths = {f["path"] for f in case["files"]}
    texts, documents = {}, {}
    for item in case["expected"].get("stated", []):
        where = f"{case['id']}: {item.get('key')!r}"
        if not item.get("key") or "value" not in item or item["value"] is None or not item.get("source"):
            problems.append(f"{where} lacks a key, a value or a source")
            continue
        path, _, number = item["source"].rpartition(":")
        if path not in paths or not number.isdigit():
            problems.append(f"{where} cites {item['source']}, not a line of a file of this case")
            continue
        if path not in texts:
            texts[path] = (corpus / case["id"] / path).read_text(encoding="utf-8", errors="replace").splitlines()
        lines = texts[path]
        if not 1 <= int(number) <= len(lines) or not lines[int(number) - 1].strip():
            problems.append(f"{where} cites {item['source']}, an empty or missing line")
            continue
        line = lines[int(number) - 1]
        key_shown = item["key"].split(".")[-1].split("]")[-1] in line
        bare_switch = item["value"] is True and key_shown
        if not (bare_switch or shows_value(item["value"], line)):
            shown = "key only" if key_shown else "neither"
            review.append(f"{where} = {json.dumps(item['value'])[:80]} @ {item['source']} ({shown}): {line.strip()[:100]}")
        if path.endswith((".yaml", ".yml")):
            if path not in documents:
                documents[path] = yaml.safe_load("\n".join(lines))
            try:
                written = lookup(documents[path], item["key"])
            except (KeyError, IndexError, TypeError):
                continue  # a key under a hydra group's package, or one the command line adds
            if isinstance(written, str) and "${" in written:
                continue
            if yaml_value(written) != item["value"]:
                problems.append(f"{where} = {item['value']!r}, but {path} gives {written!r}")
    return problems, review


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manifest", type=Path, default=HERE / "manifest.json")
    parser.add_argument("--corpus", type=Path, default=HERE / ".corpus", help="what fetch_corpus.py wrote")
    parser.add_argument("--review", action="store_true", help="list the items to check by eye")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"No corpus at {args.corpus}: run python bench/real_world/fetch_corpus.py first.", file=sys.stderr)
        return 2
    cases = json.loads(args.manifest.read_text())["cases"]
    problems, review, counts = [], [], {}
    for case in cases:
        if "stated" not in case["expected"]:
            problems.append(f"{case['id']}: no stated list")
            continue
        found, to_review = check_case(case, args.corpus)
        problems += found
        review += to_review
        counts[case["split"]] = counts.get(case["split"], 0) + len(case["expected"]["stated"])
    if args.review:
        print("\n".join(review))
    print(f"{sum(counts.values())} stated items ({', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}); "
          f"{len(review)} show only their key or neither on the cited line (--review lists them); "
          f"{len(problems)} problems")
    if problems:
        print("\n".join(problems), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
