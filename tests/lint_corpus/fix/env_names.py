import os

import mint

api_key = os.environ["TINKER_API_KEY"]
base_url = os.environ.get('TINKER_BASE_URL')
if "TINKER_API_KEY" not in os.environ:
    raise SystemExit("set MINT_API_KEY")
# a write is reported, not renamed: after `import mint`, tinker reads TINKER_BASE_URL
os.environ["TINKER_BASE_URL"] = base_url or os.environ["MINT_BASE_URL"]
client = mint.ServiceClient(api_key=api_key, base_url=base_url)
