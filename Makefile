# The two commands of the quick start: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: serve test lint bench crashtest screenshots services clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/kassa serve --demo

services:
	scripts/ensure-services.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check kassa tests bench
	$(VENV)/bin/ruff format --check kassa tests bench
	$(VENV)/bin/mypy

test: $(STAMP) services lint
	$(VENV)/bin/pytest

crashtest: $(STAMP) services
	$(VENV)/bin/python -m tests.crash.crashtest --rounds 20

screenshots: $(STAMP) services
	KASSA_SCREENSHOT_DIR=docs/screenshots $(VENV)/bin/pytest tests/pages/test_hosted_pages.py

bench: $(STAMP) services
	$(VENV)/bin/python -m bench

clean:
	rm -rf $(VENV) var
