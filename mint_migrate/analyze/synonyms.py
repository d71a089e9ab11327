"""What a setting's name means, whatever framework wrote it: one synonym table.

`meaning("actor_rollout_ref.actor.optim.weight_decay")` is `optimizer.weight_decay`;
`meaning("--adam-beta2")` is `optimizer.beta2`; `meaning("trainer.n_gpus_per_node")` is a GPU
setting the MinT service owns. The harvest (harvest.py) collects names; the ledger (ledger.py)
asks this table what each one is. A name is matched on its last dotted part; the parts before it
say whose setting it is (a critic's or a reference model's learning rate is not the policy's).

Concepts are the canonical plan settings (plan.Settings: `learning_rate`, `kl_coef`, `lora.rank`
...) or the settings train.py carries beside them (`optimizer.*`, `schedule.*`, `seed`,
`save_every`), or a family of settings with one fate on MinT (`server`, `logging`, `eval`, ...).
"""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Meaning:
    concept: str
    family: str  # setting | algorithm | lora | optimizer | schedule | run | data | sampling | kl | server | logging | output | eval | other_model


def _table(family: str, rows: dict[str, str]) -> dict[str, Meaning]:
    out = {}
    for concept, names in rows.items():
        for name in names.split():
            out[name] = Meaning(concept, family)
    return out


# Exact names (the last dotted part, lower case, dashes as underscores).
_NAMES: dict[str, Meaning] = {
    **_table("setting", {
        "base_model": "model_name_or_path model_name model_path pretrain pretrained_model_name_or_path base_model "
                      "model_id policy_model_path sft_model_path hf_assets_path policy_model model_name_or_id",
        "dataset": "dataset dataset_name dataset_path train_files train_file train_data data_path dataset_id "
                   "prompt_data train_dataset datasets dataset_mixture data_files train_file_dir data_file_paths "
                   "train_filename train_data_path train_path train_jsonl train_json train_set",
        "learning_rate": "learning_rate lr actor_learning_rate policy_learning_rate optim_lr",
        "per_device_batch_size": "per_device_train_batch_size micro_train_batch_size micro_batch_size per_device_training_batch_size batch_size_training "
                                 "ppo_micro_batch_size_per_gpu micro_batch_size_per_gpu local_batch_size "
                                 "train_micro_batch_size_per_gpu per_device_batch_size "
                                 "micro_batch_size_per_device_for_update micro_batch batch_size_per_gpu "
                                 "batch_size_per_device per_gpu_train_batch_size per_gpu_batch_size",
        "global_batch_size": "train_batch_size global_batch_size batch_size groups_per_batch rollout_batch_size "
                             "prompts_per_step num_prompts_per_step total_batch_size total_batch",
        "gradient_accumulation_steps": "gradient_accumulation_steps grad_accum_steps accumulation_steps "
                                       "gradient_accumulation grad_accum accum_steps grad_accumulation_steps",
        "num_epochs": "num_train_epochs num_epochs epochs total_epochs max_epochs n_epochs",
        "max_steps": "max_steps total_training_steps num_steps total_steps train_steps max_train_steps "
                     "num_training_steps all_steps num_batches steps n_steps training_steps "
                     "n_grpo_steps num_grpo_steps grpo_steps num_rollout_steps n_rollout_steps num_rl_steps",
        "max_seq_length": "max_length max_seq_length max_len seq_len cutoff_len model_max_length max_seq_len "
                          "max_sequence_length context_length seq_length block_size",
        "max_prompt_length": "max_prompt_length prompt_max_len max_prompt_len max_req_tokens max_prompt_tokens "
                             "max_input_length source_max_len max_source_length max_prompt_seq_len prompt_length",
        "max_response_length": "max_response_length max_completion_length generate_max_len max_new_tokens "
                               "max_tokens response_length max_res_tokens max_gen_len max_generation_length "
                               "target_max_len max_response_len max_target_length max_answer_seq_len",
        "lora.rank": "lora_rank lora_r r rank lora_dim",
        "lora.alpha": "lora_alpha alpha",
        "lora.target_modules": "target_modules lora_target_modules lora_target",
        "beta": "dpo_beta orpo_beta",
        "num_generations": "num_generations n_samples_per_prompt group_size num_samples_per_prompt "
                           "num_return_sequences generations_per_sample num_samples samples_per_prompt "
                           "responses_per_prompt num_rollouts n",
        "kl_coef": "kl_coef init_kl_coef kl_loss_coef kl_penalty_coef kl_coefficient kl_beta kl_weight",
        "clip_ratio": "clip_ratio clip_ratio_low eps_clip epsilon clip_param cliprange clip_range "
                      "eps_clip_low_high clip_eps clip_epsilon",
        "temperature": "temperature",
        "reward_functions": "reward_funcs reward_functions reward_fn reward_func reward_function",
    }),
    **_table("algorithm", {
        "algorithm.estimator": "adv_estimator advantage_estimator estimator loss_type policy_loss_type",
        "algorithm.loss_agg": "loss_agg_mode",
        "algorithm.gae": "gamma lam gae_lambda lambd vf_coef value_clip cliprange_value critic_warmup",
        "algorithm.ppo_updates": "ppo_epochs num_ppo_epochs ppo_mini_batch_size mini_batch_size num_mini_batches "
                                 "num_iterations",
        "algorithm.entropy": "entropy_coeff entropy_coef ent_coef",
        "algorithm.clip_high": "clip_ratio_high clip_ratio_c epsilon_high",
        "algorithm.normalize": "norm_adv_by_std_in_grpo scale_rewards advantage_normalization normalize_advantages "
                               "norm_adv",
    }),
    **_table("lora", {
        "lora.other": "lora_dropout bias task_type use_rslora use_dora modules_to_save init_lora_weights "
                      "lora_bias layers_to_transform fan_in_fan_out inference_mode",
    }),
    **_table("optimizer", {
        "optimizer.beta1": "adam_beta1 beta1",
        "optimizer.beta2": "adam_beta2 beta2",
        "optimizer.betas": "betas adam_betas",
        "optimizer.eps": "adam_epsilon adam_eps eps epsilon_adam",
        "optimizer.weight_decay": "weight_decay l2 wd adam_weight_decay",
        "optimizer.grad_clip_norm": "max_grad_norm grad_clip clip_grad max_norm gradient_clipping clip_grad_norm "
                                    "grad_clip_norm grad_norm_clip max_grad_norm_value",
        "optimizer.name": "optim optimizer optimizer_type optim_type",
    }),
    **_table("schedule", {
        "schedule.lr_schedule": "lr_scheduler_type lr_scheduler warmup_style lr_schedule scheduler lr_decay_style "
                                "scheduler_type",
        "schedule.warmup_steps": "warmup_steps lr_warmup_steps num_warmup_steps warmup",
        "schedule.warmup_ratio": "warmup_ratio lr_warmup_ratio lr_warmup_steps_ratio warmup_proportion",
        "schedule.min_lr_ratio": "min_lr_ratio min_lr_rate",
        "schedule.min_lr": "min_lr",
    }),
    **_table("input", {
        "input.config": "config config_file config_path config_name cfg recipe",
    }),
    **_table("run", {
        "seed": "seed random_seed data_seed",
        "save_every": "save_steps save_freq save_every save_interval checkpoint_interval save_every_n_steps "
                      "interval",
        "resume": "resume_from_checkpoint resume_mode resume load_checkpoint_path",
    }),
    **_table("data", {
        "data.system_prompt": "system_prompt system_message",
        "data.prompt_template": "prompt_template template instruction_template prompt_format format_prompt",
        "data.prompt_key": "prompt_key dataset_text_field input_key text_field prompt_field question_key "
                           "prompt_column",
        "data.answer_key": "answer_key label_key output_key response_key completion_key chosen_key rejected_key "
                           "answer_field target_key ground_truth_key",
        "data.split": "split dataset_split train_split dataset_train_split",
        "data.apply_chat_template": "apply_chat_template chat_template",
        "data.shuffle": "shuffle",
        "data.max_samples": "max_samples max_train_samples num_samples_train",
        "data.loader": "num_workers dataloader_num_workers pin_memory dataloader_pin_memory num_proc "
                       "dataset_num_proc remove_unused_columns drop_last",
        "data.packing": "packing",
        "data.assistant_only_loss": "assistant_only_loss completion_only_loss train_on_inputs",
    }),
    **_table("sampling", {
        "sampling.top_p": "top_p",
        "sampling.top_k": "top_k",
        "sampling.stop": "stop stop_token_ids stop_strings",
        "sampling.min_p": "min_p",
        "sampling.repetition_penalty": "repetition_penalty",
        "sampling.do_sample": "do_sample",
    }),
    **_table("kl", {
        "kl.use_kl_loss": "use_kl_loss use_kl_in_reward disable_kl",
        "kl.kl_type": "kl_loss_type kl_penalty kl_estimator kl_type",
        "kl.target": "target_kl kl_target",
        "kl.horizon": "horizon kl_horizon",
    }),
    **_table("logging", {
        "logging": "logging_steps log_every logging_strategy report_to logger project_name experiment_name run_name "
                   "wandb_project wandb_run_name wandb_entity use_wandb log_level logging_dir log_interval "
                   "disable_tqdm print_every log_freq logging_first_step wandb_group use_tensorboard",
    }),
    **_table("output", {
        "output": "output_dir save_path default_local_dir ckpt_path save_dir checkpoint_dir log_path "
                  "default_hdfs_dir save_total_limit overwrite_output_dir push_to_hub hub_model_id "
                  "save_strategy save_only_model save_safetensors hub_strategy save_hf_ckpt "
                  "disable_ds_ckpt max_ckpt_to_keep",
    }),
    **_table("eval", {
        "eval": "val_freq eval_freq eval_steps eval_strategy evaluation_strategy test_freq val_files eval_dataset eval_every "
                "val_before_train per_device_eval_batch_size eval_batch_size val_batch_size eval_interval "
                "do_eval eval_accumulation_steps eval_split test_split val_data eval_data eval_temperature "
                "val_kwargs num_eval_samples validation_split eval_on_start",
    }),
    **_table("server", {
        "server": "bf16 fp16 tf32 torch_dtype dtype param_dtype reduce_dtype buffer_dtype mixed_precision "
                  "hybrid_engine strategy gradient_checkpointing enable_gradient_checkpointing use_remove_padding flash_attn "
                  "attn_implementation use_flash_attention_2 n_gpus_per_node nnodes num_nodes nproc_per_node "
                  "num_processes num_machines gpus world_size tensor_model_parallel_size tensor_parallel_size "
                  "pipeline_model_parallel_size sequence_parallel_size ulysses_sequence_parallel_size "
                  "gpu_memory_utilization enforce_eager free_cache_engine param_offload optimizer_offload "
                  "grad_offload offload_policy fsdp fsdp_config zero_stage deepspeed deepspeed_config "
                  "zero_optimization use_vllm vllm_mode vllm_gpu_memory_utilization vllm_tensor_parallel_size "
                  "vllm_num_engines vllm_sync_backend vllm_enable_sleep colocate_all_models "
                  "colocate_actor_ref colocate_critic_reward ref_num_nodes ref_num_gpus_per_node "
                  "actor_num_nodes actor_num_gpus_per_node critic_num_nodes critic_num_gpus_per_node "
                  "reward_num_nodes reward_num_gpus_per_node adam_offload load_in_4bit load_in_8bit "
                  "bnb_4bit_compute_dtype bnb_4bit_quant_type bnb_4bit_use_double_quant use_dynamic_bsz "
                  "ppo_max_token_len_per_gpu log_prob_micro_batch_size_per_gpu log_prob_micro_batch_size "
                  "log_prob_max_token_len_per_gpu log_prob_use_dynamic_bsz max_num_batched_tokens "
                  "max_num_seqs enable_chunked_prefill enable_prefix_caching packing_samples "
                  "ds_tensor_parallel_size ring_attn_size use_liger_kernel device device_map "
                  "local_rank ddp_find_unused_parameters ddp_backend ddp_timeout micro_rollout_batch_size "
                  "micro_forward_batch_size forward_micro_batch_size forward_micro_batch_size_per_gpu "
                  "fused_kernel_options use_fused_kernels use_torch_compile torch_compile "
                  "tensor_parallel_degree data_parallel_shard_degree data_parallel_replicate_degree "
                  "expert_parallel_degree context_parallel_degree procs hosts with_gpus num_replicas "
                  "use_cpu cpu_offload zero3_init_flag zero3_save_16bit_model gradient_checkpointing_kwargs "
                  "remove_padding use_shm load_format layered_summon async_engine engine_kwargs "
                  "rollout_engine name_engine mode distributed_type machine_rank main_training_function "
                  "same_network rdzv_backend downcast_bf16 use_reentrant",
    }),
}
# Names too generic to tell a setting from a loop variable when they are a function's local.
_GENERIC = {"n", "r", "rank", "alpha", "template", "mode", "device", "dtype", "interval", "warmup", "stop",
            "scheduler", "logger", "split", "shuffle", "epochs", "gpus", "hosts", "procs", "name_engine", "eps",
            "optimizer", "optim", "seed"}
# Whose setting: a dotted part, or a prefix of the name, that says it is not the policy's
# (verl's `actor_rollout_ref` is the policy's: whole parts are compared, not substrings).
_OTHER_MODELS = {"critic", "ref", "reference", "reward_model", "rm", "teacher", "value", "judge", "value_model",
                 "ref_model"}
# Dotted parts that put a setting under the evaluation (`--eval.temperature 1.0`).
_EVAL_PARTS = {"eval", "evaluation", "val", "validation", "test", "val_kwargs", "eval_kwargs"}
# Dotted endings whose meaning the last part alone does not tell.
_SUFFIXES: dict[str, Meaning] = {
    "rollout.name": Meaning("server", "server"), "rollout.mode": Meaning("server", "server"),
    "kl_ctrl.type": Meaning("kl.kl_type", "kl"), "actor.strategy": Meaning("server", "server"),
    "critic.strategy": Meaning("server", "server"), "model.path": Meaning("base_model", "setting"),
    "data.path": Meaning("dataset", "setting"), "dataset.path": Meaning("dataset", "setting"),
    "dataset.name": Meaning("dataset", "setting"), "model.model": Meaning("base_model", "setting"),
    "dataset.dataset": Meaning("dataset", "setting"), "model.name_or_path": Meaning("base_model", "setting"),
    "data.name": Meaning("dataset", "setting"), "kl.init_coef": Meaning("kl_coef", "setting"),
    "kl.coef": Meaning("kl_coef", "setting"),
    # the DPO reference implementation's layout: `model=pythia28 model.archive=.../LATEST/policy.pt`,
    # the SFT checkpoint the trained policy starts from
    "model.archive": Meaning("base_model", "setting"),
}
# Samples per prompt, however a loop words it: `NUM_ANSWERS_PER_QUESTION`, `responses_per_problem`.
_PER_PROMPT = re.compile(r"^(num_|n_)?(answers?|responses?|completions?|generations?|samples?|rollouts?|outputs?)"
                         r"_per_(question|prompt|problem|query|input|instance|example|task)s?$")
# Data paths named for the run they feed: `grpo_data_path`, `rm_data_path`, `sft_train_file`.
_DATA_PATH = re.compile(r"^[a-z0-9]+_(train_)?(data|dataset)_(path|file|dir|files|paths)$|^[a-z0-9]+_train_(file|path)s?$"
                        r"|^(sft|dpo|kto|orpo|grpo|ppo|rl|rm|pref|preference|pairs?)_(file|path|jsonl)s?$")
# A prompt's length limit by another name: `model_prompt_length`, `train_prompt_len` (not a minimum).
_PROMPT_LIMIT = re.compile(r"^(?!min_)([a-z0-9]+_)?prompt_(length|len)$")
# A generated answer's length limit by another name: `max_output_length`, `output_max_length`,
# `max_generate_length`.
_RESPONSE_LIMIT = re.compile(r"^(max_)?(output|generate|generation|gen|completion|answer)_(max_)?(length|len)$")
_HELD_OUT = re.compile(r"(^|_)(eval|val|valid|validation|test|dev)(_|$)")
_SERVER_PREFIX = re.compile(r"(^|[._])(ray_init|ray_kwargs|vllm|sglang|fsdp_config|fsdp|megatron|deepspeed|"
                            r"zero_optimization|nccl|cluster|resources|slurm|accelerate|hydra|provisioner)([._]|$)")
_SERVER_ENV = re.compile(r"^(VLLM_|NCCL_|CUDA_|PYTORCH_|TORCH_|OMP_|MKL_|RAY_|HF_HUB|TOKENIZERS_|NVTE_|"
                         r"TRANSFORMERS_|HYDRA_|MASTER_|WORLD_|LOCAL_|NODE_|GLOO_|XFORMERS|TRITON_|PYTHON)")
_LOGGING_ENV = re.compile(r"^(WANDB_|SWANLAB_|MLFLOW_|TENSORBOARD|COMET_)")


def leaf(key: str) -> str:
    return key.lstrip("-+~").replace("-", "_").rsplit(".", 1)[-1].lower()


def meaning(key: str, owner: str = "") -> Meaning | None:
    """What the setting `key` is (as the source writes it; `owner`: the call a keyword was given to)."""
    norm = key.lstrip("-+~").replace("-", "_")
    name = norm.rsplit(".", 1)[-1]
    low = name.lower()
    if name.isupper() and (_SERVER_ENV.match(name) or _LOGGING_ENV.match(name)):
        return Meaning("server" if _SERVER_ENV.match(name) else "logging", "server" if _SERVER_ENV.match(name)
                       else "logging")
    prefix = norm[: -len(name)].lower()
    for suffix, known in _SUFFIXES.items():
        if norm.lower() == suffix or norm.lower().endswith("." + suffix):
            return Meaning(known.concept, "other_model") if _other_model(prefix) and known.family == "setting" \
                else known
    found = _NAMES.get(low)
    if found is None:  # `critic_learning_rate`, `ref_num_nodes`: another model's setting by its name
        head, _, rest = low.partition("_")
        if head in _OTHER_MODELS and rest in _NAMES and _NAMES[rest].family != "server":
            return Meaning(_NAMES[rest].concept, "other_model")
    if found is not None and found.family in ("setting", "optimizer", "schedule") and _other_model(prefix):
        return Meaning(found.concept, "other_model")
    if found is None and prefix and _SERVER_PREFIX.search(prefix):
        return Meaning("server", "server")
    if found is None and name.isupper():
        found = _NAMES.get(low.replace("__", "_"))
        if found is None:
            found = _constant_meaning(low)
    if found is None and _PER_PROMPT.match(low):
        found = Meaning("num_generations", "setting")
    if found is None and _PROMPT_LIMIT.match(low) and not _HELD_OUT.search(low):
        found = Meaning("max_prompt_length", "setting")
    if found is None and _RESPONSE_LIMIT.match(low) and ("max" in low or low.endswith("_len")):
        found = Meaning("max_response_length", "setting")
    if found is None and _DATA_PATH.match(low) and not _HELD_OUT.search(low):
        found = Meaning("dataset", "setting")  # `grpo_data_path`, `sft_train_file`: the run's data by another name
    lora_call = any(word in (prefix + owner.lower()) for word in ("lora", "peft", "adapter"))
    if found is not None and found.concept == "lora.rank" and low in ("r", "rank") and not lora_call:
        return None  # a bare `r`/`rank` is a LoRA rank only inside a LoRA config or a get_peft_model call
    if found is not None and found.concept == "lora.alpha" and low == "alpha" and not lora_call:
        return None
    if found is not None and found.family in ("setting", "sampling") and _EVAL_PARTS & set(prefix.strip(".").split(".")):
        return Meaning("eval", "eval")  # `eval.temperature`, `val_kwargs.n`: the evaluation's, not the run's
    if found is not None and found.concept in ("optimizer.eps",) and low == "eps" and owner and owner not in (
            "AdamW", "Adam", "AdamParams", "FusedAdam", "AdamW8bit", "PagedAdamW") and "optim" not in prefix:
        return None  # `eps` of a loss or a norm layer, not Adam's
    return found


def _other_model(prefix: str) -> bool:
    return any(part in _OTHER_MODELS for part in prefix.strip(".").split("."))


def _constant_meaning(low: str) -> Meaning | None:
    """UPPER_CASE constants with a word around the setting's name: `KL_COEFFICIENT`, `LEARNING_RATE_ACTOR`."""
    for name, found in _NAMES.items():
        if len(name) >= 4 and (low.startswith(name + "_") or low.endswith("_" + name)):
            return found
    return None


def looks_like_setting(name: str) -> bool:
    """A local variable whose name says it is a training setting (`learning_rate = 1e-5` in main())."""
    low = name.lower()
    return low not in _GENERIC and (low in _NAMES or name.isupper())


def names_for(concept: str) -> list[str]:
    """The names the table knows for a canonical setting (`lora`: its parts'), longest first; bare
    one-letter names are left out (a reader's search for them would match everything)."""
    names = {concept} | {n for n, m in _NAMES.items()
                         if m.family == "setting" and (m.concept == concept or m.concept.startswith(concept + "."))}
    if concept == "dataset":
        names.add("load_dataset")
    return sorted((n for n in names if len(n) > 2), key=len, reverse=True)
