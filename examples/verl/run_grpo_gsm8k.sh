#!/usr/bin/env bash
# verl GRPO on GSM8K: Qwen2.5-3B-Instruct, LoRA rank 64, vLLM rollouts, a custom reward function.
set -xeuo pipefail

GPUS=8
MODEL=Qwen/Qwen2.5-3B-Instruct
TRAIN_PROMPTS=$((GPUS * 64))

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=$TRAIN_PROMPTS \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path=$MODEL \
    actor_rollout_ref.model.lora_rank=64 \
    actor_rollout_ref.model.lora_alpha=32 \
    actor_rollout_ref.actor.optim.lr=3e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.temperature=1.0 \
    custom_reward_function.path=gsm8k_reward.py \
    trainer.n_gpus_per_node=$GPUS \
    trainer.nnodes=1 \
    trainer.total_epochs=15
