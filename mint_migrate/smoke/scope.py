"""What a passed smoke run proved: the plumbing, or the user's task.

A migrated train.py knows the source's data (DATA["source"]) and reward (REWARD). Offline, a smoke
run often trains on the built-in examples with the placeholder reward: it proves that train.py
runs against MinT's API, not that it trains the user's task. The verdict says which, and gives the
one command that runs the task.
"""

import ast

from mint_migrate.smoke.verdict import SmokeVerdict


def judge(verdict: SmokeVerdict, source: str) -> None:
    """Set verdict.scope (and, for plumbing, verdict.task_command) from what ran and what train.py knows."""
    if verdict.ran is None:
        return
    constants = _constants(source)
    data = constants.get("DATA") if isinstance(constants.get("DATA"), dict) else {}
    reward = constants.get("REWARD")
    builtin = verdict.data_file is None
    placeholder = verdict.reward == "placeholder"
    knows_data = bool(data.get("source"))
    knows_reward = isinstance(reward, dict) and bool(reward.get("functions"))
    if not builtin and not (placeholder and knows_reward):
        verdict.scope = "task"
        return
    verdict.scope = "plumbing"
    if knows_data and builtin:
        source_name = data["source"]
        verdict.task_command = (f"python prepare_data.py   # {source_name} -> {data.get('file') or 'train.jsonl'} "
                                "(where the Hub or the file is reachable); then smoke-run train.py again: it reads "
                                "that file")
    elif builtin:
        verdict.task_command = "pass your data: python train.py --smoke --data FILE (.jsonl, .json, .parquet, .csv)"
    elif placeholder and knows_reward:
        verdict.task_command = ("make the reward importable here (its file beside train.py, or --reward FILE:NAME), "
                                "then smoke-run train.py again")


def _constants(source: str) -> dict:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in ("DATA", "REWARD"):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, RecursionError):
                pass
    return out
