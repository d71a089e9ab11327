import os

import mint

client = mint.ServiceClient(base_url="https://mint.macaron.xin")  # expect: MINT042
local = mint.ServiceClient(base_url="http://127.0.0.1:8000")  # expect: MINT042
CHINA = "https://mint-cn.macaron.xin/"  # expect: MINT042
