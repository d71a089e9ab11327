#!/usr/bin/env python
"""Imports names from tinker without importing mint first."""
from __future__ import annotations

import os

import mint  # noqa: F401  (applies MinT's patches to tinker)
from tinker import ServiceClient, types  # the SDK

client = ServiceClient(base_url=os.environ.get("MINT_BASE_URL"))
params = types.SamplingParams(max_tokens=8)
