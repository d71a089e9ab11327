import os

import mint

client = mint.ServiceClient(api_key=os.environ["MINT_API_KEY"])
EXAMPLE = "export MINT_API_KEY=sk-your-key-here"
os.environ.setdefault("MINT_API_KEY", "sk-test-local-only-0000000")
