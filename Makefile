# The two commands of the quick start: `make serve` and `make test`.
PYTHON ?= python3
FUZZ_SECONDS ?= 60
VENV := .venv
PIP := $(VENV)/bin/pip --disable-pip-version-check
LOCKS := requirements/build.txt requirements/dev.txt
# Stamps named by content (not by dates, which a checkout or `make lock` changes): a changed lock rebuilds
# .venv from scratch, so that it holds exactly the locked set (nothing left over from an earlier lock);
# a changed pyproject.toml (the project's or the Python client's) only reinstalls the project and the client.
LOCK_SUM := $(shell cat $(LOCKS) | cksum | cut -d' ' -f1)
LOCKED := $(VENV)/.locked-$(LOCK_SUM)
STAMP := $(VENV)/.installed-$(LOCK_SUM)-$(shell cat pyproject.toml clients/python/pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: serve test lint lock bench crashtest fuzz screenshots services clean

$(LOCKED):
	$(PYTHON) -m venv --clear $(VENV)
	$(PIP) install -q --require-hashes -r requirements/build.txt
	$(PIP) install -q --require-hashes -r requirements/dev.txt
	touch $(LOCKED)

$(STAMP): | $(LOCKED)
	$(PIP) install -q --no-deps --no-build-isolation -e .
	$(PIP) install -q --no-deps --no-build-isolation -e clients/python
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# Re-resolves requirements/*.txt from pyproject.toml; UPGRADE=1 moves every pin to its newest version.
lock: $(STAMP)
	UPGRADE=$(UPGRADE) scripts/lock.sh

# `make serve ACQUIRER_SIM=1`: the demo's payments go over ISO 8583 to the acquirer host simulator on port
# 8583 (docs/acquirers.md); without it, to the built-in sandbox.
serve: $(STAMP)
ifdef ACQUIRER_SIM
	$(VENV)/bin/kassa acquirer-sim --port 8583 & trap 'kill $$!' EXIT; \
	  $(VENV)/bin/kassa serve --demo --demo-acquirer 127.0.0.1:8583
else
	$(VENV)/bin/kassa serve --demo
endif

services:
	scripts/ensure-services.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check kassa tests bench
	$(VENV)/bin/ruff format --check kassa tests bench
	$(VENV)/bin/mypy
	cd clients/python && ../../$(VENV)/bin/ruff check . && ../../$(VENV)/bin/ruff format --check . && ../../$(VENV)/bin/mypy

# Tests start hundreds of gateway and CLI processes: with PYTHONDONTWRITEBYTECODE set (as on this project's
# machines) each would compile Kassa's sources anew, so the bytecode is written once first. pytest keeps the
# test modules it rewrites for assertions only where bytecode may be written: without that, each of its
# workers spent 8 s of CPU rewriting all of them on every run.
test: $(STAMP) services lint
	$(VENV)/bin/python -m compileall -q kassa tests clients/python/src
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest
	cd clients/python && KASSA_EXECUTABLE=$(CURDIR)/$(VENV)/bin/kassa ../../$(VENV)/bin/pytest -p no:cacheprovider

crashtest: $(STAMP) services
	$(VENV)/bin/python -m tests.crash.crashtest --rounds 20

# Schemathesis against the served OpenAPI document of a fresh sandbox gateway for FUZZ_SECONDS (default
# 60); fails on any server error. FUZZ_DATABASE_URL=postgresql://... runs it on an empty PostgreSQL database.
fuzz: $(STAMP)
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

screenshots: $(STAMP) services
	KASSA_SCREENSHOT_DIR=docs/screenshots $(VENV)/bin/pytest tests/pages/test_hosted_pages.py tests/pages/test_hosted_fields.py tests/console/test_every_page.py tests/console/test_an_operators_day.py

bench: $(STAMP) services
	$(VENV)/bin/python -m bench

clean:
	rm -rf $(VENV) var
