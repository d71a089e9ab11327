"""The pinned SDK's facts and mint-migrate's own defaults, in one place.

Facts: what mindlab-toolkit 0.2.0 / tinker 0.22.0 accept (loss names, loss_fn_config keys,
keyword parameters, AdamParams and LoRA defaults, SamplingParams fields). Defaults: what
mint-migrate picks where the SDK leaves a choice (the base model, the loss_fn_config each RL
loss gets). render, the analyzer's choices, lint, preflight, mint-local and the docs generator
read them from here; tests/test_sdk_facts.py checks every fact against the installed SDK
(`typing.get_args(LossFnType)`, `inspect.signature`, the pydantic fields), so an SDK change
shows up there first instead of as a wrong doc.

Plain data and the standard library only: mint-local and the torch-free CLI import it freely.
Nothing here may be mutated; copy before changing (`loss_fn_config_defaults()` gives copies).
"""

MINDLAB_TOOLKIT_VERSION = "0.2.0"
TINKER_VERSION = "0.22.0"  # what mindlab-toolkit 0.2.0 pins
# The newest tinker-cookbook that resolves next to tinker 0.22.0 (0.4.2+ needs tinker >= 0.22.3).
TINKER_COOKBOOK_MAX_VERSION = "0.4.1"
# Where `import mint` points the SDK when MINT_BASE_URL is unset.
MINT_DEFAULT_BASE_URL = "https://mint.macaron.xin"

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
