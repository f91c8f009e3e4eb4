# Two commands work on a fresh machine (README.md):
#   make serve   install, build both languages, serve on http://127.0.0.1:8000
#   make test    install, run every test
# `make build` builds site/ alone.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8000
export NO_MKDOCS_2_WARNING := 1
export PYTHONDONTWRITEBYTECODE := 1
# Reproducible builds: dates in the sitemap and the wheel come from the last commit.
export SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 315532800)

.PHONY: install build serve test check bench clean chromium

install: $(VENV)/.installed node_modules/.installed chromium

# Python environment: pinned build and test tools, the project itself (editable).
$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-build-isolation --no-deps -e .
	touch $@

# The Pyodide runtime, vendored into the site from the pinned npm package (no CDN).
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Debian's Chromium for the browser tests (Playwright's own download does not work
# offline); skipped when a chromium is already on PATH or $$CHROMIUM is set.
chromium:
	@if [ -n "$$CHROMIUM" ] || command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "Install Chromium (e.g. sudo apt-get install chromium) or set CHROMIUM=/path/to/chrome" >&2; exit 1; fi

build: $(VENV)/.installed node_modules/.installed
	$(PY) -m mkdocs build --strict

serve: build
	$(PY) tools/serve.py --dir site --port $(PORT)

check: $(VENV)/.installed
	$(PY) -m i18n check

test: install
	$(PY) -m pytest

# Speed figures (prints a table; record them in bench/RESULTS.md).
bench: install
	$(PY) bench/run.py

clean:
	rm -rf site .pytest_cache build *.egg-info
