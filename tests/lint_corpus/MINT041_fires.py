import os

import mint

api_key = os.environ["TINKER_API_KEY"]  # expect: MINT041
base_url = os.getenv("TINKER_BASE_URL")  # expect: MINT041
if "TINKER_API_KEY" not in os.environ:  # expect: MINT041
    raise SystemExit("set the key")
os.environ["TINKER_BASE_URL"] = "http://localhost:8000"  # expect: MINT041, MINT042
