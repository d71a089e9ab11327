"""mint-migrate: move LLM post-training code onto MinT and prove it runs.

One engine (concepts, analyze, render, lint, preflight, smoke) with two thin front ends:
the MCP server (`server.py`) and the `mint-migrate` CLI (`cli.py`).
"""

__version__ = "0.1.0"
