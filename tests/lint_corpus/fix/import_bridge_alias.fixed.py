import os, mint as tk

client = tk.ServiceClient(base_url=os.environ.get("MINT_BASE_URL"))
