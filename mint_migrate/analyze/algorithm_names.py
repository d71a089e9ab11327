"""What a name says a run trains: a trainer class (`SimPOTrainer`), a script (`train_rm.py`), a
folder (`step2_reward_model_finetuning`). A leaf of the analyzer: the input loader and the framework
readers both ask it."""

import re

# What a trainer class's own name says it trains (`SimPOTrainer`, `MyGRPOTrainer`), most specific first.
_NAMED_ALGORITHMS = (("grpo", "grpo"), ("rloo", "reinforce"), ("reinforce", "reinforce"), ("sppo", "dpo"),
                     ("ppo", "ppo"), ("orpo", "orpo"), ("kto", "kto"), ("simpo", "dpo"), ("dpo", "dpo"), ("ipo", "dpo"),
                     ("cpo", "dpo"), ("preference", "dpo"), ("reward", "reward_model"), ("distil", "distillation"),
                     ("gkd", "distillation"), ("sft", "sft"), ("supervised", "sft"), ("finetun", "sft"),
                     ("fine_tun", "sft"))


# Short names that say an algorithm only as a word of their own (`RMTrainer`, `train_rm.py`), never
# inside another word (`transformer`, `warmup`).
NAMED_WORDS = {"rm": "reward_model", "sft": "sft", "dpo": "dpo", "ppo": "ppo", "grpo": "grpo", "kto": "kto",
               "orpo": "orpo"}


def algorithm_in_name(name: str) -> str | None:
    low = name.lower()
    found = next((algorithm for word, algorithm in _NAMED_ALGORITHMS if word in low), None)
    if found is not None:
        return found
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    return next((NAMED_WORDS[w.lower()] for w in words if w.lower() in NAMED_WORDS), None)
