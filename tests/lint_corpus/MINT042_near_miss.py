"""Talks to MinT (https://mint.macaron.xin by default in the SDK; set MINT_BASE_URL)."""

import os

import mint

client = mint.ServiceClient(base_url=os.environ.get("MINT_BASE_URL", "https://mint.macaron.xin"))
print("Get a key at https://macaron.im/mindlab")
