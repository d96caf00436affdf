# Two commands on a fresh machine (only Python 3.11+ needed):
#   make demo   set up .venv, simulate, sweep, write the report under reports/demo
#   make test   set up .venv, lint, type-check, run the test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Bytecode is compiled at install time: with PYTHONDONTWRITEBYTECODE set (containers often
# set it) every start would otherwise recompile numpy, polars, numba, ... (seconds).
# 2 cores on CI: run the suite on both
PYTEST_WORKERS ?= 2

.PHONY: demo test lint typecheck bench clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev]'
	$(BIN)/python -m compileall -q cogstats
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check cogstats tests benchmarks docs/scripts
	$(BIN)/ruff format --check cogstats tests benchmarks docs/scripts

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) tests cogstats --doctest-modules

demo: $(STAMP)
	$(BIN)/cogstats demo --out reports/demo

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) reports/demo .pytest_cache .mypy_cache .ruff_cache
