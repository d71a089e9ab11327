#!/usr/bin/env python
"""Imports names from tinker without importing mint first."""
from __future__ import annotations

import os

from tinker import ServiceClient, types  # the SDK

client = ServiceClient(base_url=os.environ.get("MINT_BASE_URL"))
params = types.SamplingParams(max_tokens=8)
