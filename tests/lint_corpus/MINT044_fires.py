import mint  # noqa: F401 - a MinT script
from transformers import AutoTokenizer


def load(base_model):
    tokenizer = AutoTokenizer.from_pretrained(base_model)  # expect: MINT044
    other = AutoTokenizer.from_pretrained("Qwen/Qwen3-0.6B", local_files_only=False)  # expect: MINT044
    return tokenizer, other
