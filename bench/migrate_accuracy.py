"""migrate_script accuracy and speed over the migration fixtures.

Prints, over tests/fixtures/migrate/*/*/case.json:
  - framework and algorithm accuracy;
  - per-setting accuracy (value and file:line both right; a null expected must stay null);
  - analysis time per fixture (median of several runs);
and the time to analyze a generated 500-line TRL script (target: under 200 ms), next to a
baseline measured in the same run: libcst parsing the same file, which any libcst analysis pays.

    python bench/migrate_accuracy.py [--repeat 5]
"""

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import libcst  # noqa: E402

from mint_migrate.analyze import analyze  # noqa: E402
from mint_migrate.plan import SETTING_KEYS  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "migrate"


def median_ms(fn, repeat: int) -> float:
    fn()  # warm caches (imports, regexes)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def setting_json(plan, key):
    setting = getattr(plan.settings, key)
    return None if setting is None else json.loads(setting.model_dump_json(exclude_none=True))


def fixture_accuracy(repeat: int) -> None:
    cases = sorted(FIXTURES.glob("*/*/case.json"))
    right = {"framework": 0, "algorithm": 0}
    per_key = {key: 0 for key in SETTING_KEYS}
    stated = {key: 0 for key in SETTING_KEYS}  # fixtures whose inputs state the setting (expected non-null)
    rows = []
    for case_path in cases:
        case = json.loads(case_path.read_text())
        source = case_path.parent / case["source"]
        configs = [case_path.parent / c for c in case["configs"]]
        expected = case["expected"]
        plan = analyze(source, configs)
        right["framework"] += plan.framework == expected["framework"]
        right["algorithm"] += plan.algorithm == expected["algorithm"]
        for key in SETTING_KEYS:
            per_key[key] += setting_json(plan, key) == expected["settings"][key]
            stated[key] += expected["settings"][key] is not None
        lines = sum(len(p.read_text().splitlines()) for p in [source, *configs])
        ms = median_ms(lambda source=source, configs=configs: analyze(source, configs), repeat)
        rows.append((f"{case_path.parent.parent.name}/{case_path.parent.name}", lines, ms))

    n = len(cases)
    print(f"fixtures: {n} ({', '.join(sorted({r[0].split('/')[0] for r in rows}))})")
    print(f"framework accuracy: {right['framework']}/{n} = {right['framework'] / n:.1%}")
    print(f"algorithm accuracy: {right['algorithm']}/{n} = {right['algorithm'] / n:.1%}")
    total = sum(per_key.values())
    print(f"settings accuracy (value and source): {total}/{n * len(SETTING_KEYS)} = {total / (n * len(SETTING_KEYS)):.1%}")
    print(f"  {'setting':28} {'right':>7} {'':7} (stated in N fixtures; the rest must stay null)")
    for key in SETTING_KEYS:
        print(f"  {key:28} {per_key[key]:3}/{n}  {per_key[key] / n:6.1%}  ({stated[key]})")
    print(f"\nanalysis time per fixture (median of {repeat} runs):")
    print(f"  {'fixture':45} {'lines':>6} {'ms':>8}")
    for name, lines, ms in rows:
        print(f"  {name:45} {lines:6} {ms:8.1f}")
    print(f"  {'median':45} {'':6} {statistics.median(r[2] for r in rows):8.1f}")
    print(f"  {'max':45} {'':6} {max(r[2] for r in rows):8.1f}")


def synthetic_script(target_lines: int = 500) -> str:
    """A TRL GRPO script of about `target_lines` lines: constants, argparse, many reward helpers."""
    head = [
        '"""GRPO with many rule-based rewards (generated for the benchmark)."""',
        "import argparse",
        "import re",
        "",
        "from datasets import load_dataset",
        "from peft import LoraConfig",
        "from trl import GRPOConfig, GRPOTrainer",
        "",
        'MODEL = "Qwen/Qwen2.5-7B-Instruct"',
        "LEARNING_RATE = 1e-6",
        "NUM_GENERATIONS = 16",
        "",
    ]
    body: list[str] = []
    i = 0
    while len(head) + len(body) < target_lines - 45:
        body += [
            f"def reward_{i}(completions, answer, **kwargs):",
            f'    """Reward {i}: pattern {i} in the last line."""',
            "    scores = []",
            "    for completion, gold in zip(completions, answer):",
            '        text = completion[0]["content"]',
            f'        hit = re.search(r"answer_{i}:\\s*(\\S+)", text)',
            "        scores.append(1.0 if hit and hit.group(1) == gold else 0.0)",
            "    return scores",
            "",
            "",
        ]
        i += 1
    tail = [
        "def main():",
        "    parser = argparse.ArgumentParser()",
        '    parser.add_argument("--beta", type=float, default=0.04)',
        '    parser.add_argument("--rank", type=int, default=64)',
        "    args = parser.parse_args()",
        '    dataset = load_dataset("openai/gsm8k", "main", split="train")',
        "    config = GRPOConfig(",
        '        output_dir="out",',
        "        learning_rate=LEARNING_RATE,",
        "        beta=args.beta,",
        "        num_generations=NUM_GENERATIONS,",
        "        per_device_train_batch_size=16,",
        "        gradient_accumulation_steps=4,",
        "        max_prompt_length=512,",
        "        max_completion_length=1024,",
        "        temperature=0.9,",
        "        epsilon=0.2,",
        "        epsilon_high=0.28,",
        "        max_steps=1000,",
        "        use_vllm=True,",
        "    )",
        "    trainer = GRPOTrainer(",
        "        model=MODEL,",
        f"        reward_funcs=[{', '.join(f'reward_{k}' for k in range(i))}],",
        "        args=config,",
        "        train_dataset=dataset,",
        '        peft_config=LoraConfig(r=args.rank, lora_alpha=128, target_modules="all-linear"),',
        "    )",
        "    trainer.train()",
        "",
        "",
        'if __name__ == "__main__":',
        "    main()",
    ]
    return "\n".join(head + body + tail) + "\n"


def speed_500_lines(repeat: int) -> None:
    text = synthetic_script()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "grpo_500.py"
        path.write_text(text)
        lines = len(text.splitlines())
        plan = analyze(path, [])
        assert plan.framework == "trl" and plan.algorithm == "grpo", plan
        analysis = median_ms(lambda: analyze(path, []), repeat)
        parse = median_ms(lambda: libcst.parse_module(text), repeat)
    print(f"\n{lines}-line TRL script (median of {repeat} runs):")
    print(f"  baseline, libcst.parse_module alone: {parse:7.1f} ms")
    print(f"  full analysis (parse included):      {analysis:7.1f} ms  = {analysis / parse:.2f}x the parse"
          f"  -> target < 200 ms: {'met' if analysis < 200 else 'MISSED'}")
    print(f"  reward functions found: {len(plan.settings.reward_functions.value)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"libcst {importlib.metadata.version('libcst')}")
    fixture_accuracy(args.repeat)
    speed_500_lines(args.repeat)


if __name__ == "__main__":
    main()
