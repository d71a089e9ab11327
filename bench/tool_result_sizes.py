"""What one call of each MCP tool costs an agent's context: the characters of its default result.

Through the SDK's in-memory MCP client, on the demo (TRL SFT), the TRL GRPO example and the verl
GRPO example: map_concept (the framework's whole table), migrate_script (writing the files),
scaffold_train_py (writing), lint_script and preflight_check on the written train.py, and with
--runs launch_smoke_run (2 steps on mint-local) and check_parity (the demo, on 8 local rows). Prints one
row per call: the JSON text the model reads (content) and the structured result.

    .venv/bin/python bench/tool_result_sizes.py [--runs]
    PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/tool_result_sizes.py   # a baseline
"""

import argparse
import asyncio
import json
import shutil
import tempfile
from pathlib import Path

from mcp import Client

from mint_migrate.server import create_server

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PORTS = [  # (name, folder, entry, companions, framework, scaffold kind)
    ("demo (trl sft)", "trl", "sft_trl.py", [], "trl", "sft"),
    ("trl grpo", "trl", "grpo_trl.py", [], "trl", "grpo"),
    ("verl grpo", "verl", "run_grpo_gsm8k.sh", ["gsm8k_reward.py"], "verl", "grpo"),
]


def chat_rows(n: int) -> str:
    """`n` short conversations in the demo dataset's shape (a `messages` column)."""
    return "".join(
        json.dumps({"messages": [{"role": "user", "content": f"What is {i} plus {i}?"},
                                 {"role": "assistant", "content": f"{i} plus {i} is {2 * i}."}]}) + "\n"
        for i in range(n)
    )


async def measure(runs: bool) -> list[tuple[str, str, int, int, bool]]:
    rows = []
    for name, folder, entry, companions, framework, kind in PORTS:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            shutil.copytree(EXAMPLES / folder, work / folder)
            calls = [
                ("map_concept", {"framework": framework}),
                ("migrate_script", {"source_path": f"{folder}/{entry}",
                                    "config_paths": [f"{folder}/{c}" for c in companions], "output_dir": "out"}),
                ("scaffold_train_py", {"kind": kind, "output_path": "scaffold/train.py"}),
                ("lint_script", {"path": "out/train.py"}),
                ("preflight_check", {"script_path": "out/train.py", "target": "local"}),
            ]
            if runs:
                calls.append(("launch_smoke_run", {"script_path": "out/train.py", "steps": 2}))
                if kind == "sft":  # parity runs TRL SFT; the demo reads a Hub dataset, so a local copy
                    (work / "rows.jsonl").write_text(chat_rows(8), encoding="utf-8")
                    calls.append(("check_parity", {"source_path": f"{folder}/{entry}", "train_path": "out/train.py",
                                                   "data_path": "rows.jsonl"}))
            async with Client(create_server(work)) as client:
                for tool, arguments in calls:
                    result = await client.call_tool(tool, arguments)
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    structured = len(json.dumps(result.structured_content)) if result.structured_content else 0
                    rows.append((name, tool, len(text), structured, result.is_error))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", action="store_true", help="also the smoke run and the parity check (minutes)")
    args = parser.parse_args()
    print(f"{'port':16} {'tool':18} {'content chars':>13} {'structured':>10}")
    for name, tool, text, structured, error in asyncio.run(measure(args.runs)):
        print(f"{name:16} {tool:18} {text:>13} {structured:>10}" + ("  (error)" if error else ""))


if __name__ == "__main__":
    main()
