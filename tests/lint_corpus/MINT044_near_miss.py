import os

import mint
from transformers import AutoModelForCausalLM, AutoTokenizer


def load(base_model, offline, training_client: mint.TrainingClient):
    tokenizer = AutoTokenizer.from_pretrained(base_model, local_files_only=True)
    maybe = AutoTokenizer.from_pretrained(base_model, local_files_only=offline)
    local = AutoTokenizer.from_pretrained("./tokenizer")
    model = AutoModelForCausalLM.from_pretrained(base_model)
    fallback = training_client.get_tokenizer()
    return tokenizer, maybe, local, model, fallback, os.sep
