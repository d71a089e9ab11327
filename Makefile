# Two commands on a fresh machine (see README):
#   make demo   set up, then migrate an example TRL script -> lint -> 2-step smoke run on mint-local
#   make test   set up, then run the whole test suite
#   make test-cookbook   tinker-cookbook's loops, recipes and weight tests against mint-local
#                        (nightly-style: its own venv, about 3 hours on 2 busy cores; not part of make test;
#                        SMOKE_TEST_TIMEOUT=N raises the 3600 s limit per recipe: tests/cookbook/README.md)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# torch first and pinned (an open range pulls a multi-GB CUDA build): scripts/torch_install_args.py
# picks the default index with CUDA, PyTorch's CPU wheel index without it, and the plain pin when
# that index does not answer (offline: pip takes the 2.13.0 CPU wheel its own configuration finds).
TORCH  ?= $(shell $(PYTHON) scripts/torch_install_args.py)
DEMO_SRC ?= examples/trl/sft_trl.py
DEMO_OUT ?= demo-out

# tinker-cookbook 0.4.1 caps transformers at 5.5.3, below the main venv's, hence its own venv.
COOKBOOK_VENV  ?= .venv-cookbook
COOKBOOK_SDIST := .cookbook-sdist/tinker_cookbook-0.4.1

.PHONY: demo test setup inspector clean setup-cookbook test-cookbook

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

# ruff first (seconds), then the suite where only loopback exists: tests never leave the machine,
# and the session fails if anything tried (scripts/loopback-only, tests/netfence.py).
test: setup inspector
	$(BIN)/ruff check .
	scripts/loopback-only $(BIN)/python -m pytest

setup-cookbook: $(COOKBOOK_VENV)/.installed $(COOKBOOK_SDIST)/PKG-INFO

$(COOKBOOK_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(COOKBOOK_VENV)
	$(COOKBOOK_VENV)/bin/pip install -q --upgrade pip
	$(COOKBOOK_VENV)/bin/pip install -q $(TORCH)
	$(COOKBOOK_VENV)/bin/pip install -q -e ".[local,sdk,dev,cookbook]"
	touch $@

# The cookbook's own tests ship only in its sdist (from PyPI; never committed here).
$(COOKBOOK_SDIST)/PKG-INFO: $(COOKBOOK_VENV)/.installed
	mkdir -p .cookbook-sdist
	$(COOKBOOK_VENV)/bin/pip download -q --no-deps --no-binary :all: tinker-cookbook==0.4.1 -d .cookbook-sdist
	tar -xzf .cookbook-sdist/tinker_cookbook-0.4.1.tar.gz -C .cookbook-sdist
	touch $@

test-cookbook: setup-cookbook
	$(COOKBOOK_VENV)/bin/python -m pytest tests/cookbook -m cookbook

clean:
	rm -rf $(VENV) $(COOKBOOK_VENV) .cookbook-sdist node_modules $(DEMO_OUT) .pytest_cache
