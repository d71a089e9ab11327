"""Supervised fine-tuning with TRL: a chat model on conversational data, LoRA adapter.

The kind of script most TRL users start from. Migrate it to MinT with:

    mint-migrate migrate examples/trl/sft_trl.py --out demo-out

Usage (on a GPU box, with TRL installed):

    accelerate launch sft_trl.py --num_train_epochs 1 --learning_rate 2e-4
"""

from dataclasses import dataclass, field

from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoTokenizer, HfArgumentParser
from trl import SFTConfig, SFTTrainer


@dataclass
class ScriptArguments:
    model_name: str = field(default="Qwen/Qwen3-0.6B", metadata={"help": "the model to fine-tune"})
    dataset_name: str = field(default="trl-lib/Capybara", metadata={"help": "a chat dataset with `messages`"})
    lora_rank: int = field(default=16)


def main() -> None:
    parser = HfArgumentParser((ScriptArguments, SFTConfig))
    script_args, training_args = parser.parse_args_into_dataclasses()

    tokenizer = AutoTokenizer.from_pretrained(script_args.model_name)
    dataset = load_dataset(script_args.dataset_name, split="train")

    peft_config = LoraConfig(
        r=script_args.lora_rank,
        lora_alpha=2 * script_args.lora_rank,
        lora_dropout=0.05,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )
    trainer = SFTTrainer(
        model=script_args.model_name,
        args=training_args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    trainer.train()
    trainer.save_model(training_args.output_dir)


if __name__ == "__main__":
    main()
