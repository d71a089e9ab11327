#!/bin/bash
# OpenRLHF >= 0.10.2 (dotted flags): GRPO-style group_norm advantages, Ray + vLLM, a Python reward.
set -x

ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"working_dir": "."}' \
   -- python3 -m openrlhf.cli.train_ppo_ray \
   --actor.model_name_or_path Qwen/Qwen2.5-7B-Instruct \
   --actor.num_gpus_per_node 8 \
   --vllm.num_engines 4 \
   --reward.remote_url math_reward.py \
   --data.prompt_dataset OpenRLHF/prompt-collection-v0.1 \
   --data.input_key context_messages \
   --data.label_key label \
   --data.apply_chat_template \
   --rollout.batch_size 128 \
   --rollout.n_samples_per_prompt 8 \
   --rollout.max_new_tokens 1024 \
   --rollout.temperature 1.0 \
   --train.batch_size 1024 \
   --train.micro_batch_size 4 \
   --actor.adam.lr 5e-7 \
   --actor.eps_clip 0.2 \
   --algo.advantage.estimator group_norm \
   --algo.kl.init_coef 1e-3 \
   --algo.kl.use_loss \
   --ds.zero_stage 3 \
   --ckpt.output_dir ./checkpoint/qwen2.5-7b-grpo
