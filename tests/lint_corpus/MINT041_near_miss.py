import os

import mint

api_key = os.environ["MINT_API_KEY"]
base_url = os.getenv("MINT_BASE_URL")
os.environ.setdefault("TINKER_TELEMETRY", "0")
print("TINKER_API_KEY is what tinker reads; we set MINT_API_KEY")
# TINKER_ as an explicit fallback for what `import mint` defaulted is fine
fallback_url = os.environ.get("MINT_BASE_URL") or os.environ["TINKER_BASE_URL"]
fallback_key = os.environ.get("MINT_API_KEY", os.environ.get("TINKER_API_KEY"))
