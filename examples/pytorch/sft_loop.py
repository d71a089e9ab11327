"""SFT written by hand in PyTorch: the loop most people have before they pick a framework."""

import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
LR = 1e-5
EPOCHS = 2
BATCH = 8
ACCUMULATION_STEPS = 4
MAX_LENGTH = 1024

tokenizer = AutoTokenizer.from_pretrained(MODEL)
model = AutoModelForCausalLM.from_pretrained(MODEL)
rows = load_dataset("HuggingFaceH4/no_robots", split="train")


def collate(batch):
    texts = [tokenizer.apply_chat_template(r["messages"], tokenize=False) for r in batch]
    enc = tokenizer(texts, max_length=MAX_LENGTH, truncation=True, padding=True, return_tensors="pt")
    enc["labels"] = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
    return enc


loader = DataLoader(rows, batch_size=BATCH, shuffle=True, collate_fn=collate)
optimizer = torch.optim.AdamW(model.parameters(), lr=LR)

for epoch in range(EPOCHS):
    for i, batch in enumerate(loader):
        loss = model(**batch).loss / ACCUMULATION_STEPS
        loss.backward()
        if (i + 1) % ACCUMULATION_STEPS == 0:
            optimizer.step()
            optimizer.zero_grad()
    model.save_pretrained(f"checkpoints/epoch-{epoch}")
