# Two commands work on a fresh machine (README.md):
#   make serve   install, build both languages and their PDFs, serve on http://127.0.0.1:8000
#   make test    install, run every test
# `make build` builds site/ alone; `make pdf` builds it and prints the two PDFs.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8000
export NO_MKDOCS_2_WARNING := 1
export PYTHONDONTWRITEBYTECODE := 1
# Reproducible builds: dates in the sitemap and the wheel come from the last commit.
export SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 315532800)

.PHONY: install build pdf serve test check bench clean chromium cjk-font

install: $(VENV)/.installed node_modules/.installed chromium cjk-font

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

# A Chinese font for the zh PDF (and the browser's Chinese pages): Debian's fonts-noto-cjk
# when fontconfig knows none.
cjk-font:
	@if ! command -v fc-list >/dev/null 2>&1 || [ -n "$$(fc-list :lang=zh 2>/dev/null)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null; \
	else echo "No Chinese font: the zh PDF needs one (e.g. sudo apt-get install fonts-noto-cjk)" >&2; fi

build: $(VENV)/.installed node_modules/.installed
	$(PY) -m mkdocs build --strict

# The whole book as one PDF per language, printed by Chromium into site/pdf/ (the home
# pages link to them); an unchanged book is copied from build/pdf-cache/, not printed again.
pdf: build chromium cjk-font
	$(PY) tools/pdf.py --site site --cache build/pdf-cache

serve: pdf
	$(PY) tools/serve.py --dir site --port $(PORT)

check: $(VENV)/.installed
	$(PY) -m i18n check

# The labs' tests run under torchrun: PyTorch's CPU build, pinned (a plain `torch`
# would fetch a CUDA build of several GB), and numpy, which torch 2.13's
# torch.distributed.tensor.debug (CommDebugMode, used by the labs) imports.
# transformers (tests only; calc never imports it): tests/calc/test_models_recent.py
# builds each preset's Hugging Face model on the meta device and compares its count.
# The step reruns when this file changes, so a new pin reaches an existing venv.
TORCH := torch==2.13.0 numpy==2.4.6 transformers==5.24.0
$(VENV)/.torch: $(VENV)/.installed Makefile
	$(PY) -c "import torch, numpy, transformers" 2>/dev/null || $(PY) -m pip install --quiet $(TORCH)
	touch $@

test: install $(VENV)/.torch
	$(PY) -m pytest

# Speed figures (prints two tables, the site's and the labs'; record them in bench/RESULTS.md).
bench: install $(VENV)/.torch
	$(PY) bench/run.py
	$(PY) bench/labs.py

clean:
	rm -rf site .pytest_cache build *.egg-info
