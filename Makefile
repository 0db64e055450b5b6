# tieaudit: two commands for a newcomer, `make demo` and `make test`.
# Both create .venv on first use and install the project into it (editable) with what it needs.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CORES  ?= 2

.PHONY: help venv test test-fast lint demo paper bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[pipeline,test,bench]"
	touch $(STAMP)

venv: $(STAMP)  ## create .venv and install the project

test: $(STAMP)  ## run the whole test suite (library, CLI, downloads, workflow)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)  ## the tests without the end-to-end workflow runs
	$(BIN)/python -m pytest -q -m "not slow"

lint: $(STAMP)  ## ruff on the library, tests and scripts
	$(BIN)/ruff check src tests scripts benchmarks

bench: $(STAMP)  ## run the benchmarks (minutes; prints ratios measured side by side)
	$(BIN)/python benchmarks/bench_evaluate.py

clean:  ## remove the virtualenv and caches (never data/ or results/)
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache
