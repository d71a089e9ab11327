"""Rebuild the real-world corpus (bench/real_world/manifest.json) from git snapshots on this machine.

The corpus is other projects' code, so git holds only its labels; this script writes the files back,
one folder per case, each file at its path in its repository:

    OUT/<case id>/<path in the repository>

Each case gets its own folder holding only the files the case names (what a user passes, plus any
`context` file that sits beside them), so the analyzer sees exactly the case and nothing else.
Every file is checked against the git blob id recorded in the manifest.

    python bench/real_world/fetch_corpus.py [--manifest PATH] [--out DIR] [--mirrors DIR]

Another manifest (the blind holdout2.json) is rebuilt into a folder of its own, .corpus-<name>, since
a rebuild removes the case folders its manifest does not name.

Snapshots are read from MIRRORS/<owner>+<name>/repo (a bare git directory), the layout the agent
session's `fetch` tool produces under /work/.mirror. The script never goes to the network.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
DEFAULT_OUT = HERE / ".corpus"
DEFAULT_MIRRORS = Path(os.environ.get("MINT_CORPUS_MIRRORS", "/work/.mirror"))
MARKER = ".fetch_corpus"  # marks a folder this script owns, so stale case folders can be removed safely


def default_out(manifest: Path) -> Path:
    """manifest.json rebuilds into .corpus; any other manifest into .corpus-<its name>, so that rebuilding
    one corpus never deletes another's case folders."""
    return DEFAULT_OUT if manifest.resolve() == MANIFEST else HERE / f".corpus-{manifest.stem}"


def git_dir(mirrors: Path, repo: str) -> Path | None:
    """The bare git directory of a snapshot: MIRRORS/owner+name/repo (fetch's layout) or MIRRORS/owner+name."""
    base = mirrors / repo.replace("/", "+")
    for candidate in (base / "repo", base):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def missing_snapshot_help(repos: list[str], mirrors: Path) -> str:
    lines = [f"No git snapshot on this machine for {len(repos)} repositor{'y' if len(repos) == 1 else 'ies'} "
             f"(looked in {mirrors}/<owner>+<name>/repo):"]
    lines += [f"  {repo}" for repo in repos]
    lines += [
        "",
        "What to do:",
        "  - In an agent session: `fetch` is a session tool, not a shell command. Call it once per repository",
        "    with source \"github:<owner>/<name>\" (for example github:" + repos[0] + "); the snapshot lands in",
        "    /work/.mirror/<owner>+<name>/repo. Then run this script again.",
        "  - Elsewhere, with network access: git clone --bare https://github.com/<owner>/<name> "
        f"{mirrors}/<owner>+<name>/repo",
        "    (or point --mirrors / MINT_CORPUS_MIRRORS at a folder laid out that way).",
    ]
    return "\n".join(lines)


def read_blob(git: Path, commit: str, path: str) -> bytes | None:
    result = subprocess.run(["git", "--git-dir", str(git), "cat-file", "blob", f"{commit}:{path}"],
                            capture_output=True)
    return result.stdout if result.returncode == 0 else None


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def check_labels(cases: list[dict]) -> list[str]:
    """Label sanity, independent of the analyzer: every cited file belongs to its case."""
    problems = []
    for case in cases:
        paths = {f["path"] for f in case["files"]}
        for key, setting in case["expected"]["settings"].items():
            if setting is None:
                continue
            path, _, line = setting["source"].rpartition(":")
            if path not in paths or not line.isdigit():
                problems.append(f"{case['id']}: {key} cites {setting['source']}, not a line of a file of this case")
    return problems


def cited_lines_exist(case: dict, texts: dict[str, str]) -> list[str]:
    problems = []
    for key, setting in case["expected"]["settings"].items():
        if setting is None:
            continue
        path, _, line = setting["source"].rpartition(":")
        lines = texts[path].splitlines()
        number = int(line)
        if not 1 <= number <= len(lines) or not lines[number - 1].strip():
            problems.append(f"{case['id']}: {key} cites {setting['source']}, an empty or missing line")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where to write the corpus (default {DEFAULT_OUT}, or .corpus-<name> beside another manifest)")
    parser.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS,
                        help="folder of snapshots <owner>+<name>/repo (default /work/.mirror, or $MINT_CORPUS_MIRRORS)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST,
                        help="the cases to rebuild (default manifest.json; the blind holdout is holdout2.json)")
    args = parser.parse_args()
    if args.out is None:
        args.out = default_out(args.manifest)

    cases = json.loads(args.manifest.read_text())["cases"]
    problems = check_labels(cases)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1

    repos = sorted({f["repo"] for case in cases for f in case["files"]})
    gits = {repo: git_dir(args.mirrors, repo) for repo in repos}
    missing = [repo for repo, git in gits.items() if git is None]
    if missing:
        print(missing_snapshot_help(missing, args.mirrors), file=sys.stderr)
        return 2

    out = args.out
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        print(f"{out} exists, is not empty and was not written by this script; pass another --out.", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by bench/real_world/fetch_corpus.py; safe to delete\n")
    wanted = {case["id"] for case in cases}
    for stale in out.iterdir():
        if stale.is_dir() and stale.name not in wanted:
            shutil.rmtree(stale)

    files = 0
    for case in cases:
        folder = out / case["id"]
        if folder.exists():
            shutil.rmtree(folder)
        texts = {}
        for f in case["files"]:
            data = read_blob(gits[f["repo"]], f["commit"], f["path"])
            if data is None:
                print(f"{case['id']}: the snapshot of {f['repo']} ({gits[f['repo']]}) has no {f['path']} at commit "
                      f"{f['commit']}. It is probably older than that commit: fetch the repository again (see "
                      "--help), then rerun.", file=sys.stderr)
                return 2
            if blob_id(data) != f["blob"]:
                print(f"{case['id']}: {f['repo']}:{f['path']}@{f['commit'][:12]} does not match blob {f['blob']}; "
                      "the snapshot is damaged: fetch it again.", file=sys.stderr)
                return 2
            target = folder / f["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            texts[f["path"]] = data.decode("utf-8", errors="replace")
            files += 1
        problems += cited_lines_exist(case, texts)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    unique = len({(f["repo"], f["commit"], f["path"]) for case in cases for f in case["files"]})
    print(f"wrote {len(cases)} cases ({files} files, {unique} distinct, from {len(repos)} repositories) to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
