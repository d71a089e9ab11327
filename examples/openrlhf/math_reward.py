import torch


def reward_func(queries, prompts, labels, **kwargs):
    """OpenRLHF remote reward: 1 when the reference label appears in the response."""
    rewards = torch.tensor([1.0 if str(label) in query else 0.0 for query, label in zip(queries, labels)])
    return {"rewards": rewards, "scores": rewards, "extra_logs": {}}
