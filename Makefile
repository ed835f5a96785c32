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

.PHONY: all deps build test test-c test-py test-asan asan-build demo bench format format-check clean

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

# Two pytest processes (pytest-xdist): an engine call keeps about two thirds of a core busy (short
# runs, pipe round trips, a worker's start), so two tests at a time fill a 2-core CI machine; the
# whole suite took 1464 s serially and 1132 s with -n 2 on one. Each test's files live in its own tmp_path.
# --dist worksteal: xdist's default hands out the tests up front, and on 2026-12-04 one worker sat idle
# for the second half of the suite while the other worked through its share (CPU half idle).
PYTEST_ARGS := -q -n 2 --dist worksteal --durations=25

test-py: build
	$(VPY) -m pytest tests $(PYTEST_ARGS)

test: test-c test-py

# The same suites under AddressSanitizer and UndefinedBehaviorSanitizer, every report fatal
# (-fno-sanitize-recover=all): the library, the engine and the C tests in build/asan-c, the package
# (engine + runtime extension) into its own venv, .venv-asan, whose tests run its engine. The tests
# marked plain_build run the plain build made for another Python whatever runs them: make test runs
# them, make test-asan leaves them out (they would check the same plain build again).
# CPython itself is not instrumented, so the ASan runtime must be preloaded into every Python
# process that imports the extension, and into nothing else (other programs, pgrep for one, hang
# or fail under it): .venv-asan's python is a script (scripts/asan-python.sh) that preloads it; a .pth
# file takes LD_PRELOAD back out of the environment once the interpreter has started, so what
# Python starts runs without it (another Python of the venv preloads it again). Leaks are
# checked everywhere except where CPython answers for them (tests/lsan.supp: any allocation with
# a libpython frame on its stack), so the engine and the C tests are fully leak-checked.
# allocator_may_return_null makes an allocation past a run's memory limit a MemoryError, as
# without ASan, instead of an ASan abort (see forkserver.c).
ASAN_VENV := .venv-asan
ASAN_VPY := $(ASAN_VENV)/bin/python
ASAN_CBUILD := build/asan-c
ASAN_ARGS := -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
  -Dc_args=-fno-sanitize-recover=all -Dc_link_args=-fno-sanitize-recover=all
ASAN_OPTS := abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=0:strict_string_checks=1
ASAN_ENV := ASAN_OPTIONS=$(ASAN_OPTS):detect_leaks=1:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0

$(ASAN_VENV)/.deps-stamp: requirements-dev.txt scripts/asan-python.sh $(STAMP_DEPS)
	test -e $(ASAN_VENV)/bin/python3.real || $(PYTHON) -m venv $(ASAN_VENV)
	bash scripts/asan-python.sh $(ASAN_VENV) "$$($(CC) -print-file-name=libasan.so)"
	$(ASAN_ENV) $(ASAN_VPY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

asan-build: deps $(ASAN_VENV)/.deps-stamp
	$(ASAN_ENV) $(ASAN_VPY) -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
	  -Cbuild-dir=build/asan-py $(foreach a,$(ASAN_ARGS),-Csetup-args=$(a)) .
	@test -f $(ASAN_CBUILD)/build.ninja || meson setup $(ASAN_CBUILD) -Dpython=false $(ASAN_ARGS) >/dev/null
	ninja -C $(ASAN_CBUILD) >/dev/null

test-asan: asan-build
	$(ASAN_ENV) meson test -C $(ASAN_CBUILD) --print-errorlogs --timeout-multiplier 4
	PATH=$(CURDIR)/$(ASAN_VENV)/bin:$$PATH $(ASAN_ENV) $(ASAN_VPY) -m pytest tests -m "not plain_build" $(PYTEST_ARGS)

# The C sources (src/, tests/c/, fuzz/) against .clang-format, with the pinned clang-format-14:
# format rewrites them, format-check only reports (and fails) what format would change.
format: $(STAMP_DEPS)
	bash scripts/check-format.sh --fix

format-check: $(STAMP_DEPS)
	bash scripts/check-format.sh

demo: build
	@bash scripts/demo.sh

bench: build
	$(VPY) bench/bench.py

clean:
	rm -rf build
