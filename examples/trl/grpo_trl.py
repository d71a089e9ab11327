"""GRPO with TRL on math word problems: two rule-based rewards, vLLM generation, KL to the reference.

    accelerate launch --num_processes 8 grpo_trl.py
"""

import re

from datasets import load_dataset
from trl import GRPOConfig, GRPOTrainer

MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
NUM_GENERATIONS = 8


def boxed_answer(completions, solution, **kwargs):
    """1.0 when the last \\boxed{...} equals the reference solution."""
    scores = []
    for completion, answer in zip(completions, solution):
        found = re.findall(r"\\boxed\{([^{}]*)\}", completion[0]["content"])
        scores.append(1.0 if found and found[-1].strip() == answer.strip() else 0.0)
    return scores


def reasoning_format(completions, **kwargs):
    return [0.5 if "<think>" in c[0]["content"] and "</think>" in c[0]["content"] else 0.0 for c in completions]


dataset = load_dataset("AI-MO/NuminaMath-TIR", split="train")

args = GRPOConfig(
    output_dir="qwen-grpo-math",
    learning_rate=1e-6,
    beta=0.04,
    num_generations=NUM_GENERATIONS,
    per_device_train_batch_size=8,
    gradient_accumulation_steps=4,
    max_prompt_length=512,
    max_completion_length=1024,
    temperature=1.0,
    num_train_epochs=1,
    use_vllm=True,
    bf16=True,
    logging_steps=5,
)
trainer = GRPOTrainer(model=MODEL, reward_funcs=[boxed_answer, reasoning_format], args=args, train_dataset=dataset)
trainer.train()
