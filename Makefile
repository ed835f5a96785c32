# affidavit -- the two commands a newcomer needs are `make demo` and `make test`.
# Both install what is missing first (Debian packages, Python packages into .venv), idempotently.

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
VPY := $(VENV)/bin/python
AFD := $(VENV)/bin/affidavit
STAMP_DEPS := $(VENV)/.deps-stamp
STAMP_NPM := node_modules/.affidavit-stamp
CBUILD := build/c
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: all deps build test test-c test-py demo bench clean

all: build

# System packages (compiler, pkg-config) and the virtual environment with pinned Python tools.
$(STAMP_DEPS): requirements-dev.txt scripts/install-deps.sh
	bash scripts/install-deps.sh
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

# The tree-sitter-python grammar's C sources, pinned by package-lock.json; no install scripts run.
$(STAMP_NPM): package.json package-lock.json $(STAMP_DEPS)
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

deps: $(STAMP_DEPS) $(STAMP_NPM)

# The package (engine executable + extension + Python modules) into .venv, and the C unit tests.
build: deps
	$(VPY) -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
	  -Cbuild-dir=build/py .
	@test -f $(CBUILD)/build.ninja || meson setup $(CBUILD) -Dpython=false >/dev/null
	ninja -C $(CBUILD) >/dev/null

test-c: build
	meson test -C $(CBUILD) --print-errorlogs

test-py: build
	$(VPY) -m pytest tests -q

test: test-c test-py

demo: build
	@bash scripts/demo.sh

bench: build
	$(VPY) bench/bench.py

clean:
	rm -rf build
