# Two commands on a fresh machine (see README):
#   make demo   set up, then migrate an example TRL script -> lint -> 2-step smoke run on mint-local
#   make test   set up, then run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# torch first and pinned: this machine carries the 2.13.0 CPU wheel; an open range would pull CUDA.
TORCH  ?= torch==2.13.0
DEMO_SRC ?= examples/trl/sft_trl.py
DEMO_OUT ?= demo-out

.PHONY: demo test setup inspector clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e ".[local,sdk,dev,parity]"
	touch $@

# The MCP Inspector CLI: a real MCP client from npm, used by one test.
inspector: node_modules/.bin/mcp-inspector

node_modules/.bin/mcp-inspector:
	npm install --no-save --no-audit --no-fund --loglevel=error @modelcontextprotocol/inspector@2.12.0

demo: setup
	$(BIN)/mint-migrate migrate $(DEMO_SRC) --out $(DEMO_OUT) --force
	$(BIN)/mint-migrate lint $(DEMO_OUT)/train.py
	$(BIN)/mint-migrate smoke $(DEMO_OUT)/train.py --steps 2

test: setup inspector
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) node_modules $(DEMO_OUT) .pytest_cache
