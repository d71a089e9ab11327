"""Small local stand-ins for what tinker-cookbook's recipes load from the Hugging Face hub.

Written by this project, deterministic, and tiny: each dataset is a few dozen arithmetic rows in
the column layout its recipe reads. The cookbook code is not changed; it finds these because
both `datasets.load_dataset(NAME)` and `AutoTokenizer.from_pretrained(NAME)` take a local
folder of that name (relative to the working directory) before they try the hub. So a recipe
run from `workspace/` with `model_name=Qwen/Qwen3-8B` tokenizes with `workspace/Qwen/Qwen3-8B`,
a copy of mint-local's built-in tiny model folder (Qwen chat template and special tokens, so the
cookbook's `qwen3` renderers work), and mint-local serves that name with `--serve-any-model`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

# Hub names the recipes use for tokenizers (and weights export) -> stand-in model folders.
MODEL_NAMES = ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B-Base", "Qwen/Qwen3-4B-Instruct-2507", "Qwen/Qwen3.5-4B")
# The cookbook loads every meta-llama/Llama-3* tokenizer from this name (an ungated copy).
LLAMA3_TOKENIZER = "thinkingmachineslabinc/meta-llama-3-instruct-tokenizer"
# In the order of the tiny tokenizer's specials (<|endoftext|>, <|im_start|>, <|im_end|>, <think>,
# </think>): <|eot_id|> takes <|im_end|>'s id, the served model's EOS, as in Llama 3 instruct.
LLAMA3_SPECIALS = ("<|end_of_text|>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>")


def llama3_tokenizer(model_dir: Path, target: Path) -> None:
    """The tiny tokenizer with Llama 3's special tokens, for the cookbook's llama3 renderer: they
    take the ids of the tiny tokenizer's own five special tokens (Qwen's), so every id stays
    inside the served model's vocabulary."""
    data = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    assert len(data["added_tokens"]) == len(LLAMA3_SPECIALS)
    for token, content in zip(data["added_tokens"], LLAMA3_SPECIALS, strict=True):
        token["content"] = content
    target.mkdir(parents=True, exist_ok=True)
    (target / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    (target / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<|begin_of_text|>",
                "eos_token": "<|eot_id|>",
                "pad_token": "<|end_of_text|>",
                "model_max_length": 32768,
                "clean_up_tokenization_spaces": False,
            }
        ),
        encoding="utf-8",
    )


def _problems(n: int, offset: int = 0) -> list[tuple[str, int, str]]:
    rows = []
    for i in range(offset, offset + n):
        a, b = 3 + (i * 7) % 40, 2 + (i * 11) % 30
        question = f"Sam has {a} apples and buys {b} more. How many apples does Sam have?"
        rows.append((question, a + b, f"Sam has {a} plus {b} apples, that is {a + b}."))
    return rows


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _chat(question: str, reply: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": reply}]


def build_workspace(root: Path, model_dir: Path, sft_rows: int = 2048) -> Path:
    """Write the stand-in models and datasets under `root`; run recipes with cwd=root.

    `sft_rows`: conversations in HuggingFaceH4/no_robots. The cookbook's chat_sl tests need 2,048
    (default batch 256, up to 6 steps); sl_loop trains a whole epoch, so it gets a smaller set."""
    root.mkdir(parents=True, exist_ok=True)
    for name in MODEL_NAMES:
        target = root / name
        if not target.exists():
            shutil.copytree(model_dir, target)
    if not (root / LLAMA3_TOKENIZER).exists():
        llama3_tokenizer(model_dir, root / LLAMA3_TOKENIZER)
    train, test = _problems(64), _problems(16, offset=64)

    # SFT: HuggingFaceH4/no_robots (sl_loop, chat_sl) and allenai/tulu-3-sft-mixture (weights tests,
    # distillation prompts): a "messages" column. chat_sl's default batch is 256 rows and its
    # resume test runs 6 steps, so no_robots has 2,048.
    for split, rows in (("train", _problems(sft_rows)), ("test", test)):
        chats = [{"messages": _chat(q, f"{r} #### {a}"), "prompt": q, "category": "math"} for q, a, r in rows]
        _write_jsonl(root / "HuggingFaceH4/no_robots" / f"{split}.jsonl", chats)
    _write_jsonl(
        root / "allenai/tulu-3-sft-mixture/train.jsonl",
        [{"id": f"m{i}", "messages": _chat(q, r), "source": "standin"} for i, (q, a, r) in enumerate(train)],
    )
    # RL: openai/gsm8k, config "main" (rl_loop, math recipes): question / answer "... #### N".
    for split, rows in (("train", train), ("test", test)):
        _write_jsonl(root / "openai/gsm8k/main" / f"{split}.jsonl", [{"question": q, "answer": f"{r}\n#### {a}"} for q, a, r in rows])
    (root / "openai/gsm8k/README.md").write_text(
        "---\nconfigs:\n- config_name: main\n  data_files:\n  - split: train\n    path: main/train.jsonl\n"
        "  - split: test\n    path: main/test.jsonl\n---\n",
        encoding="utf-8",
    )
    # Off-policy reasoning SFT: open-thoughts/OpenThoughts3-1.2M (streamed), "conversations" of
    # {"from": "human" | "gpt", "value"}. Its recipe test reads max_prompts=128 rows.
    _write_jsonl(
        root / "open-thoughts/OpenThoughts3-1.2M/train.jsonl",
        [
            {"conversations": [{"from": "human", "value": q}, {"from": "gpt", "value": f"<think>\n{r}\n</think>\n\n#### {a}"}]}
            for q, a, r in _problems(128)
        ],
    )
    # Distillation prompts: zwhe99/DeepMath-103K, a "question" column.
    _write_jsonl(root / "zwhe99/DeepMath-103K/train.jsonl", [{"question": q, "final_answer": str(a)} for q, a, _ in train])
    # DPO: Anthropic/hh-rlhf, "chosen" / "rejected" transcripts that differ in the last reply
    # (1,024 pairs: the DPO recipe's default batch is 256).
    for split, rows in (("train", _problems(1024)), ("test", test)):
        pairs = [
            {
                "chosen": f"\n\nHuman: {q}\n\nAssistant: {r} #### {a}",
                "rejected": f"\n\nHuman: {q}\n\nAssistant: I do not know.",
            }
            for q, a, r in rows
        ]
        _write_jsonl(root / "Anthropic/hh-rlhf" / f"{split}.jsonl", pairs)
    return root
