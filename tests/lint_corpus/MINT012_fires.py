import mint
from mint import types


def setup(service_client: mint.ServiceClient, base_model, optimizer_config):
    training_client = service_client.create_lora_training_client(
        base_model=base_model,
        rank=32,
        target_modules=["q_proj", "v_proj"],  # expect: MINT012
    )
    resumed = service_client.create_lora_training_client(base_model=base_model, rank=32, optimizer=optimizer_config)  # expect: MINT012
    training_client.save_state("step-10", user_metadata={"step": "10"})  # expect: MINT012
    adam = types.AdamParams(lr=1e-4)  # expect: MINT012
    lora = types.LoraConfig(rank=8, alpha=16)  # expect: MINT012
    return resumed, adam, lora
