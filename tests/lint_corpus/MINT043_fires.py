import os

import mint

client = mint.ServiceClient(api_key="sk-mint-9f3b2c7d1e8a4f60b5c2")  # expect: MINT043
os.environ["MINT_API_KEY"] = "Zq8v2LmN4pR7tX1y"  # expect: MINT043
# old key: sk-7Hq2Lw9Xv3Np5Rt8Zk4Mb6 -- expect: MINT043
