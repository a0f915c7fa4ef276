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

.PHONY: run test install lint bench evals worker

# The app alone for `make run`; the app plus test tools for everything else.
$(RUN_STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.11 or newer is needed and none was found on PATH."; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	@touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
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

bench: $(STAMP)
	$(BIN)/python evals/bench_engine.py
	$(BIN)/python -m evals.bench

# The frozen-corpus research benchmark with its gates (see docs/evaluation.md).
evals: $(STAMP)
	$(BIN)/python -m evals run --backend extractive
	$(BIN)/python -m evals run --backend scripted

# Production-style background worker (needs REDIS_URL; see docs/deployment.md).
worker: $(STAMP)
	$(BIN)/python manage.py rundramatiq --processes 1 --threads 4
