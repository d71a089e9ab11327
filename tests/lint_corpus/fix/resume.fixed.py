import argparse

import mint


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-model", default="Qwen/Qwen3-0.6B")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--resume")
    args = parser.parse_args()
    service_client = mint.ServiceClient()
    if args.resume:
        # pick up where the last run stopped
        training_client = service_client.create_lora_training_client(base_model=args.base_model, rank=args.rank)
        training_client.load_state_with_optimizer(args.resume).result()
    else:
        training_client = service_client.create_lora_training_client(base_model=args.base_model, rank=args.rank)
    return training_client


async def main_async(service_client, base_model: str, rank: int, path: str | None):
    if path:
        training_client = await service_client.create_lora_training_client_async(base_model=base_model, rank=rank, user_metadata={"resumed": "1"})
        await training_client.load_state_with_optimizer(path)
    else:
        training_client = await service_client.create_lora_training_client_async(base_model=base_model, rank=rank)
    return training_client
