"""verl custom reward: exact match of the number after '####'."""

import re


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    found = re.findall(r"####\s*(-?[\d\.,]+)", solution_str)
    if not found:
        return 0.0
    return 1.0 if found[-1].replace(",", "") == str(ground_truth).strip() else 0.1
