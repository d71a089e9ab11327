"""A smoke verdict as text for a person at a shell."""

import json

from mint_migrate.smoke.verdict import SmokeVerdict


def format_verdict(verdict: SmokeVerdict) -> str:
    """The verdict for a person at a shell."""
    head = "PASSED" if verdict.passed else "FAILED"
    if verdict.passed and verdict.scope == "plumbing":
        head += f" (plumbing only: {verdict.ran}, not your task)"
    lines = [f"smoke run {head}: {verdict.script} on {verdict.target} ({verdict.model or 'model unknown'})"]
    if verdict.passed and verdict.task_command:
        lines.append(f"  your task    {verdict.task_command}")
    lines.append(
        f"  steps        {verdict.steps_done}/{verdict.steps_requested}"
        + (f" (steps {verdict.first_step}..{verdict.last_step})" if verdict.first_step is not None else "")
    )
    if verdict.loss_first is not None:
        lines.append(f"  loss         {verdict.loss_first:.4g} -> {verdict.loss_last:.4g}")
    if verdict.median_step_s is not None:
        lines.append(f"  step time    {verdict.median_step_s:.3g} s (median)")
    if verdict.accepted_groups is not None:
        lines.append(f"  groups       {verdict.accepted_groups} accepted, {verdict.trained_groups} trained")
    if verdict.ran is not None:
        lines.append(f"  ran          {verdict.ran}")
    if verdict.reward_calls is not None:
        lines.append(f"  reward       {verdict.reward_calls} answers scored, {verdict.reward_distinct} distinct value(s)")
    if verdict.sample_text is not None:
        lines.append(f"  sample       {json.dumps(verdict.sample_text[:200])}")
    if verdict.checkpoint:
        lines.append(f"  checkpoint   {verdict.checkpoint}")
    lines.append(f"  took         {verdict.duration_s:.1f} s")
    if verdict.left_running:
        lines.append(f"  left running {len(verdict.left_running)} process(es), killed")
    for note in verdict.notes:
        lines.append(f"  note: {note}")
    for error in verdict.errors:
        lines += [f"  error [{error.kind}] {error.message}", f"    fix: {error.fix}"]
    if not verdict.passed and verdict.log_tail:
        lines += ["  log tail:"] + ["    " + line for line in verdict.log_tail.splitlines()[-25:]]
    return "\n".join(lines)
