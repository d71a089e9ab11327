"""The source frameworks mint-migrate reads: one line each, in detection order (the most specific
first: a TRL or torchforge script imports torch too, so the plain-PyTorch reader comes last).

Everything that lists frameworks is built from this table: the plan's `Framework` type, the CLI's
help and choices, the MCP tools' schemas, the framework table in SKILL.md
(scripts/gen_framework_table.py) and the tests. Adding a framework takes two files: its analyzer
module `mint_migrate/analyze/<name>.py` (it defines `ANALYZER`; the interface is in
mint_migrate/analyze/registry.py) and its line here. This module imports nothing, so the lowest
layers (plan.py) can read it.
"""

FRAMEWORKS: dict[str, str] = {
    "tinker": "the Tinker SDK / tinker-cookbook",
    "torchforge": "torchforge (meta-pytorch/forge)",
    "verl": "verl",
    "openrlhf": "OpenRLHF",
    "trl": "TRL (Hugging Face)",
    "pytorch": "a plain PyTorch / transformers loop",
}
FRAMEWORK_NAMES: tuple[str, ...] = tuple(FRAMEWORKS)

# How train.py calls the user's reward, by the convention of the framework it was written for: the
# plan's RewardStyle type and MIGRATION.md's "called as" line read this table; the adapter that makes
# each call is in scaffolds/partials/reward.py.j2. A framework whose rewards follow a convention
# already here reuses it (tinker scripts and plain loops: tinker_env, plain).
REWARD_STYLES: dict[str, str] = {
    "trl": "`f(prompts=..., completions=..., completion_ids=..., **dataset_columns)` -> one float per completion "
           "(TRL reward_funcs); several functions add up with their weights",
    "verl": "`compute_score(data_source, solution_str, ground_truth, extra_info)` -> a float, or a dict with "
            "'score' (verl custom_reward_function)",
    "easyr1": "`compute_score(reward_inputs)` over dicts of response, response_length and ground_truth (the "
              "module's REWARD_TYPE 'batch'), or one such dict per call ('sequential') -> dicts whose 'overall' is "
              "the reward (EasyR1 worker.reward.reward_function)",
    "openrlhf": "`reward_func(queries, prompts, labels)` -> a tensor or a dict with 'rewards' (OpenRLHF)",
    "torchforge": "`reward(prompt, response, target)` -> a float, averaged over the functions (torchforge "
                  "RewardActor)",
    "tinker_env": "`Env(**row).check_answer(text)` (+ check_format), as a tinker-cookbook ProblemEnv scores",
    "plain": "`reward(completion, answer)`, or by its parameter names (prompt, answer, row)",
}


def framework_list(conjunction: str = "or") -> str:
    """`tinker, torchforge, ..., trl or pytorch`: for help texts."""
    names = list(FRAMEWORK_NAMES)
    return ", ".join(names[:-1]) + f" {conjunction} {names[-1]}" if len(names) > 1 else names[0]
