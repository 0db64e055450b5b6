# tieaudit: two commands for a newcomer, `make demo` and `make test`.
# Both create .venv on first use and install the project into it (editable) with what it needs.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CORES  ?= 2
CENSUS_JOBS ?= 4
CENSUS_PROBE_JOBS ?= 2
# Snakemake with a progress line, warnings and errors in full, its whole output in a log file
QUIET  := $(BIN)/python -m tieaudit.pipeline.quiet
# the test suite runs on every core (pytest-xdist); a module's tests stay on one worker, so its
# fixtures (a pipeline run the module's tests share) are set up once; modules in the order
# tests/conftest.py gives (the end-to-end ones first), not largest first
PYTEST := $(BIN)/python -m pytest -q -n auto --dist loadscope --no-loadscope-reorder

.PHONY: help venv test test-fast test-mutations test-adapters test-spark test-slurm census lint docs demo paper screenshot bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

# torch 2.13.0 is pinned (a CPU build: about 2 min and 750 MB here) for tieaudit.torchmetrics'
# tests, so they run in make test; install it first so that the extra does not pick another build.
# cffconvert validates CITATION.cff (tests/test_citation.py); it pins jsonschema<4, which would
# break Snakemake's config validation, and validates fine with jsonschema 4: so without its pins.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[pipeline,test,bench,probe,docs,torch,ir_measures]"
	$(BIN)/python -m pip install --quiet --no-deps cffconvert==2.0.0 pykwalify==1.8.0 \
		docopt==0.6.2 "ruamel.yaml>=0.17" "click>=7"
	touch $(STAMP)

venv: $(STAMP)  ## create .venv and install the project

test: $(STAMP)  ## run the whole test suite (library, CLI, downloads, workflow); lists the slowest tests
	$(PYTEST) -m "not jit and not spark" --durations=15

test-fast: $(STAMP)  ## between edits: the library, CLI and docs tests, without Snakemake (runs or dry runs); a quarter of each property test's examples
	TIEAUDIT_TEST_EXAMPLES=0.25 $(PYTEST) -m "not slow and not workflow and not jit and not spark"

test-mutations: $(STAMP)  ## apply each deliberate defect to a scratch copy; make test must fail on each
	$(BIN)/python -m tests.mutations $(MUTATIONS)

test-adapters: $(STAMP)  ## probe the torch and jit adapters (installs RecBole beside the venv's torch and torchmetrics)
	$(BIN)/python -m pip install --quiet -e ".[probe-torch]"
	$(BIN)/python -m pytest -q -m "torch or jit" tests/probe

test-spark: $(STAMP)  ## tieaudit.spark on a local Spark against the default engine (installs pyspark; needs a Java runtime, which .ci/run installs)
	$(BIN)/python -m pip install --quiet -e ".[spark]"
	$(BIN)/python -m pytest -q -p no:cacheprovider -W ignore::FutureWarning -m spark tests/test_spark.py

# every adapter's library in an environment of its own under .census/ (pins from
# src/tieaudit/probe/adapters/census.toml), probed there; never part of make test
# CENSUS_JOBS environments are installed at once (installing mostly waits on indexes and disk);
# the run is published to docs/census/ (the CSV and its date and duration), which the site's
# census page is made from
census: $(STAMP)  ## probe every adapter's library in its own environment; results/census/evaluators.{csv,md}, published to docs/census/
	nice -n 10 $(BIN)/python -m tieaudit.probe.census --cache .census --out results/census \
		--jobs $(CENSUS_JOBS) --probe-jobs $(CENSUS_PROBE_JOBS) --publish docs/census

test-slurm: $(STAMP)  ## run a small configuration (one job of every rule) through a throw-away one-node Slurm cluster (root; about 8 min)
	bash tests/slurm/run_slurm_test.sh

lint: $(STAMP)  ## ruff on the library, tests and scripts
	$(BIN)/ruff check src tests scripts benchmarks

docs: $(STAMP)  ## the documentation site into site/ (offline; any warning fails the build)
	$(BIN)/python -m sphinx -b html -W --keep-going -q -E docs site

demo: $(STAMP)  ## run the whole pipeline offline on generated demo data (minutes: the README says how long)
	@$(QUIET) --log results/logs/make-demo.log --label demo -- \
		$(BIN)/snakemake --configfile config/demo.yaml --cores $(CORES)
	@$(QUIET) --log results/logs/make-demo-report.log --label report -- \
		$(BIN)/snakemake --configfile config/demo.yaml --report results/report.html
	@echo
	@echo "Demo done. Results page: $(CURDIR)/results/paper/index.html  (open it in a browser)"
	@echo "           Tables:   results/paper/*.csv, *.md, *.tex (compare.md, checklist.md)"
	@echo "           Figures:  results/paper/figures/"
	@echo "           Report:   results/report.html"
	@echo "           Per dataset and scorer: results/demo_*/sampled/<scorer>/{metrics.csv,audit/}"
	@echo "           Full catalogue:         results/demo_*/full/<scorer>/{metrics.csv,audit/}"
	@echo
	@echo "The commands are in $(VENV)/bin, not on your PATH: run them as"
	@echo "    $(BIN)/tieaudit evaluate examples/candidates.csv --metrics nDCG@10"
	@echo "    $(BIN)/snakemake --cores 2 --configfile my_study.yaml"
	@echo "or activate the environment first (then tieaudit, snakemake):"
	@echo "    source $(BIN)/activate"
	@echo "Your own data: docs/tutorials/your-dataset.md; installing: docs/install.md"

paper: $(STAMP)  ## download the real data (about 1 GB) and regenerate the paper's tables
	@$(QUIET) --log results/logs/make-paper.log --label paper -- $(BIN)/snakemake --cores $(CORES)
	@$(QUIET) --log results/logs/make-paper-report.log --label report -- \
		$(BIN)/snakemake --report results/report.html
	@echo "Results page: $(CURDIR)/results/paper/index.html"
	@echo "Tables: results/paper/   Report: results/report.html"

screenshot: demo  ## docs/results_page.png: the demo's results page in headless Chromium
	$(BIN)/python docs/screenshot.py results/paper/index.html docs/results_page.png

bench: $(STAMP)  ## run the benchmarks (minutes; prints ratios measured side by side)
	$(BIN)/python benchmarks/bench_evaluate.py

clean:  ## remove the virtualenv and caches (never data/ or results/)
	rm -rf $(VENV) .census .pytest_cache .hypothesis .ruff_cache site docs/reference/_generated
