import mint
from mint import types
from peft import LoraConfig


def setup(service_client: mint.ServiceClient, base_model, accelerator, out_dir):
    training_client = service_client.create_lora_training_client(
        base_model=base_model, rank=32, seed=0, train_mlp=True, train_attn=True, train_unembed=False,
        user_metadata={"run": "sft"},
    )
    training_client.save_state("step-10", ttl_seconds=3600, overwrite=True)
    adam = types.AdamParams(learning_rate=1e-4, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.0, grad_clip_norm=1.0)
    peft_config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj"])
    accelerator.save_state(out_dir, safe_serialization=True)
    return adam, peft_config
