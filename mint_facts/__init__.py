"""The pinned SDK's facts and mint-migrate's own defaults, in one place for both products.

Facts: what mindlab-toolkit 0.2.0 / tinker 0.22.0 accept (loss names, loss_fn_config keys,
keyword parameters, AdamParams and LoRA defaults, SamplingParams fields). Defaults and policies:
what mint-migrate picks where the SDK leaves a choice (the base model, the loss_fn_config each RL
loss gets, the LoRA learning-rate policy). The migration tool (mint_migrate: render, the analyzer's
choices, lint, preflight, the docs) and mint-local both read them from here, and neither product
imports the other; tests/test_sdk_facts.py checks every fact against the installed SDK
(`typing.get_args(LossFnType)`, `inspect.signature`, the pydantic fields) and that the
agent-facing docs state the same policy, so an SDK change shows up there first instead of as a
wrong doc.

The LoRA learning-rate policy, and the evidence for it:
- tinker-cookbook's `hyperparam_utils.get_lora_lr_over_full_finetune_lr` returns a fixed 10: its
  docstring says an earlier, more complicated formula was replaced because "the factor of 10 was
  more accurate empirically" (Thinking Machines' "LoRA Without Regret": the best LoRA rate is about
  10x the best full fine-tuning rate, across model sizes, and does not depend on the rank).
  `get_lr` builds its recommendation on the same x10 (5e-5 x 10 x a hidden-size term).
- Tinker's LoRA primer still says "20-100x" (32 for Llama-3.2-1B, 128 for Llama-3.1-70B): the
  numbers of that older formula, which the cookbook dropped.
- Our own runs do not settle it: mint-local's smoke runs train a tiny, randomly initialised model for
  two steps, which proves the plumbing, not a rate. What they do show is that the floor is safe: the
  migrated examples (source rates 1e-6..2e-5, so 1e-5..2e-4 after x10 and the floor) smoke-run without a
  failed step (tests/test_task_migration.py). 1e-5 is also the bottom of the RL range MinT's and Tinker's material use.
So: a full fine-tuning rate becomes x LORA_LR_FACTOR (10) for LoRA, never less than LORA_LR_FLOOR;
a rate the source already used with LoRA carries over; lint (MINT023) flags a LoRA rate below the
floor. The primer's 20-100x is an upper range worth trying when training is slow, not the rule.

Plain data and the standard library only: mint-local and the torch-free CLI import it freely.
Nothing here may be mutated; copy before changing (`loss_fn_config_defaults()` gives copies).
"""

MINDLAB_TOOLKIT_VERSION = "0.2.0"
TINKER_VERSION = "0.22.0"  # what mindlab-toolkit 0.2.0 pins
# The newest tinker-cookbook that resolves next to tinker 0.22.0 (0.4.2+ needs tinker >= 0.22.3).
TINKER_COOKBOOK_MAX_VERSION = "0.4.1"
# Where `import mint` points the SDK when neither MINT_BASE_URL nor TINKER_BASE_URL is set (its
# sync_env copies MINT_BASE_URL over TINKER_BASE_URL, else only setdefaults: an existing
# TINKER_BASE_URL survives `import mint`).
MINT_DEFAULT_BASE_URL = "https://mint.macaron.xin"
# The only checkpoint scheme tinker 0.22.0 accepts client-side: create_sampling_client(model_path=)
# and RestClient's *_from_tinker_path raise ValueError on anything else (mint:// included).
CHECKPOINT_SCHEME = "tinker://"

# --- losses -------------------------------------------------------------------------------------

# tinker.types.LossFnType in 0.22.0, in its order. Every one sums over tokens; none has a KL term.
LOSS_NAMES: tuple[str, ...] = ("cross_entropy", "importance_sampling", "ppo", "cispo", "dro")
RL_LOSSES: tuple[str, ...] = ("importance_sampling", "ppo", "cispo", "dro")
# Loss names of later SDKs (tinker 0.38) that 0.22.0 rejects.
LATER_SDK_LOSSES: tuple[str, ...] = ("gspo", "stable_reinforce", "custom")
# The loss_fn_config keys each loss reads (ppo/cispo: ratio bounds, not epsilons).
LOSS_FN_CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "cross_entropy": (),
    "importance_sampling": (),
    "ppo": ("clip_low_threshold", "clip_high_threshold"),
    "cispo": ("clip_low_threshold", "clip_high_threshold"),
    "dro": ("beta",),
}

# PPO: Tinker's documented default ratio bounds, [1 - 0.2, 1 + 0.2].
PPO_CLIP: dict[str, float] = {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
# CISPO: the one-sided default of Tinker's tutorial 202 (no lower bound, weight capped at 4).
CISPO_CLIP: dict[str, float] = {"clip_low_threshold": 0.0, "clip_high_threshold": 4.0}
# DRO's beta (the weight of the quadratic penalty 0.5 * beta * (logp - logp_sampler)^2). Neither
# tinker 0.22.0 nor Tinker's or MinT's docs state the server's default when loss_fn_config omits
# it: the SDK sends None and the server picks. The one value Tinker's docs show is 0.05 (the
# "Custom beta" example on the DRO loss page), so mint-migrate uses it everywhere: the scaffolds
# always send it explicitly (a run never depends on an undocumented server default), and
# mint-local falls back to it, so a script that omits beta trains the same locally as a scaffold
# that sends it. (An earlier mint-local used 1.0, a value no Tinker or MinT source gives.)
DRO_BETA = 0.05

# What a scaffold sends as loss_fn_config for each RL loss unless the caller gives one.
_LOSS_FN_CONFIG_DEFAULTS: dict[str, dict[str, float] | None] = {
    "importance_sampling": None,
    "ppo": PPO_CLIP,
    "cispo": CISPO_CLIP,
    "dro": {"beta": DRO_BETA},
}


def loss_fn_config_defaults() -> dict[str, dict[str, float] | None]:
    """A fresh copy of the loss_fn_config each RL loss gets by default (None: no config)."""
    return {loss: dict(config) if config is not None else None for loss, config in _LOSS_FN_CONFIG_DEFAULTS.items()}


# --- the LoRA learning-rate policy (evidence in the docstring) ---------------------------------

# LoRA rate = LORA_LR_FACTOR x the full fine-tuning rate (tinker-cookbook's fixed factor).
LORA_LR_FACTOR = 10
# The lowest LoRA rate: below it a rate is a full fine-tune's (MINT023 flags it; migrate raises to it).
LORA_LR_FLOOR = 1e-5
# The LoRA rates MinT's and Tinker's material use, by kind of training.
LORA_LR_TYPICAL: dict[str, tuple[float, float]] = {"sft": (1e-4, 5e-4), "rl": (1e-5, 1e-4)}


def rate_text(rate: float) -> str:
    """A learning rate as the docs write it: 1e-5, 2e-4 (not 1e-05, 0.0002)."""
    mantissa, exponent = f"{rate:.1e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


# How the docs say it, word for word (tests/test_sdk_facts.py finds this in every agent-facing file).
LORA_LR_RULE = f"{LORA_LR_FACTOR}x a full fine-tune's"


# --- clients, optimizer, sampling ---------------------------------------------------------------

# mint-migrate's default base model: one MinT's own material names and its cookbook uses.
DEFAULT_BASE_MODEL = "Qwen/Qwen3-4B-Instruct-2507"
# Models MinT's own material names (mint-cookbook, mindlab-toolkit TESTING.md); preflight uses the
# list only when the endpoint cannot be asked: get_server_capabilities is the authority.
MINT_DOCUMENTED_MODELS: tuple[str, ...] = (
    "Qwen/Qwen3-0.6B",
    DEFAULT_BASE_MODEL,
    "Qwen/Qwen3-4B-Thinking-2507",
    "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "Qwen/Qwen3-235B-A22B-Instruct-2507",
    "Qwen/Qwen3.6-35B-A3B",
)
# create_lora_training_client(rank=32, train_mlp=True, train_attn=True, train_unembed=True).
DEFAULT_LORA_RANK = 32
LORA_SWITCHES: tuple[str, ...] = ("train_mlp", "train_attn", "train_unembed")
# types.AdamParams field defaults (not torch's 0.999 / 1e-8 / 0.01).
ADAM_DEFAULTS: dict[str, float] = {
    "learning_rate": 1e-4,
    "beta1": 0.9,
    "beta2": 0.95,
    "eps": 1e-12,
    "weight_decay": 0.0,
    "grad_clip_norm": 0.0,
}
# types.SamplingParams fields; it ignores any other keyword silently (extra="ignore").
SAMPLING_PARAMS_FIELDS: frozenset[str] = frozenset({"max_tokens", "seed", "stop", "temperature", "top_k", "top_p"})
# loss_fn_inputs keys a Datum converts from raw Python lists (others raise KeyError).
RAW_LIST_INPUT_KEYS: frozenset[str] = frozenset(
    {"target_tokens", "weights", "advantages", "logprobs", "clip_low_threshold", "clip_high_threshold"}
)
# The only loss_fn_inputs keys forward_backward_custom accepts (others raise ValueError).
CUSTOM_LOSS_INPUT_KEYS: frozenset[str] = frozenset({"target_tokens", "weights"})

# Keyword parameters of the 0.22.0 calls people most often pass newer or foreign keywords to
# (for create_sampling_client: ServiceClient's and TrainingClient's together).
KEYWORDS: dict[str, frozenset[str]] = {
    name: frozenset(params)
    for name, params in {
        "create_lora_training_client": (
            "base_model", "rank", "seed", "train_mlp", "train_attn", "train_unembed", "user_metadata"
        ),
        "create_training_client_from_state": ("path", "user_metadata", "weights_access_token"),
        "create_training_client_from_state_with_optimizer": ("path", "user_metadata", "weights_access_token"),
        "create_sampling_client": ("model_path", "base_model", "retry_config"),
        "save_weights_and_get_sampling_client": ("name", "retry_config"),
        "save_state": ("name", "ttl_seconds", "overwrite"),
        "save_weights_for_sampler": ("name", "ttl_seconds"),
        "load_state": ("path", "weights_access_token"),
        "load_state_with_optimizer": ("path", "weights_access_token"),
        "forward": ("data", "loss_fn", "loss_fn_config"),
        "forward_backward": ("data", "loss_fn", "loss_fn_config"),
        "forward_backward_custom": ("data", "loss_fn", "loss_type_input"),
        "optim_step": ("adam_params",),
        "sample": ("prompt", "num_samples", "sampling_params", "include_prompt_logprobs", "topk_prompt_logprobs"),
        "compute_logprobs": ("prompt",),
        "AdamParams": tuple(ADAM_DEFAULTS),
        "LoraConfig": ("rank", "seed", *LORA_SWITCHES),
    }.items()
}

__all__ = [name for name in dir() if not name.startswith("_")]
