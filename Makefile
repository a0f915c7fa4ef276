# Two commands matter: `make run` serves the app, `make test` runs the whole suite.
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
	&& echo $$p && break; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
RUN_STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install lint lock bench evals worker

# Everything is installed from the committed lock (uv.lock, exported with hashes to
# requirements/*.txt so that plain pip on a fresh machine installs exactly it; see
# docs/dependencies.md). `make lock` refreshes both after a change to pyproject.toml.
PIP := $(BIN)/python -m pip --disable-pip-version-check --quiet
PIP_LOCKED := $(PIP) install --require-hashes --no-deps

# The app alone for `make run`; the app plus test tools for everything else.
$(RUN_STAMP): requirements/app.txt pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.11 or newer is needed and none was found on PATH."; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_LOCKED) -r requirements/app.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	@touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP) requirements/dev.txt
	$(PIP_LOCKED) -r requirements/dev.txt
	@touch $(STAMP)

install: $(STAMP)

run: $(RUN_STAMP)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py ensure_demo_account
	@echo "Serving Deep Research on http://$(HOST):$(PORT)/"
	$(BIN)/daphne -b $(HOST) -p $(PORT) config.asgi:application

test: $(STAMP)
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .

# Re-resolve the lock after editing pyproject.toml (needs the package index).
lock: $(STAMP)
	$(BIN)/uv lock
	$(BIN)/uv export --frozen --no-emit-project --group build --format requirements-txt -q -o requirements/app.txt
	$(BIN)/uv export --frozen --no-emit-project --group build --extra dev --format requirements-txt -q -o requirements/dev.txt

bench: $(STAMP)
	$(BIN)/python evals/bench_engine.py
	$(BIN)/python -m evals.bench

# The research benchmark with its gates on all three task sets (see docs/evaluation.md).
evals: $(STAMP)
	$(BIN)/python -m evals run --set fictional --backend extractive --backend scripted --backend baseline
	$(BIN)/python -m evals run --set tune --set heldout --backend extractive --backend baseline

# Production-style background worker (needs REDIS_URL; see docs/deployment.md).
worker: $(STAMP)
	$(BIN)/python manage.py rundramatiq --processes 1 --threads 4
