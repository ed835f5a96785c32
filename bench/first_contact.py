"""First contact with the next suites of the pool (/work/shared/realworld/POOL.md), before any code
is changed for them.

Usage: .venv/bin/python bench/first_contact.py [--only NAME,...] [--affidavit PATH] [--explore N]
       .venv/bin/python bench/first_contact.py --retally   (the JSON again from the kept sessions)
       --record KEY writes the suites' results under that key of the JSON instead of `after` (a record
       with its own commit, date and machine: the third contact is --only NAME,... --record first_contact_3)

For each entry of POOL below, in the pool's order, skipping those already in bench/suites.py
SUITES: its sdist is fetched (`pip download --no-deps --no-binary :all: PIN`); one that ships no test
file is recorded as skipped. Otherwise it is installed with what its suite needs (bench/
requirements-suites.txt and the entry's own extras) into its own venv, build/bench-env/fc/NAME/venv
(its own: looptime, pyleak and pytest-trio are pytest plugins that would reach every other suite),
and its suite runs once each plain (-p no:affidavit), inactive (the plugin installed, no option)
and with --affidavit-explore=N, through bench/suites.py's session() (JUnit XML per test, the
plugin's summary lines, the explore documents of .affidavit/explore/*.jsonl). A suite with tests
none of which pass plainly is recorded as skipped.

Per suite, written to the `after` record of bench/suites_first_contact.json: tests, passed plainly;
each test red under explore that passed plainly, with the explore document's verdict, failing run,
schedule, failure text and a reading of why (READINGS below: written by hand after reading the
test, never by this script); the tests the plugin kept green but listed apart (timing_sensitive,
unconfirmed, abstained), from the per-test status the plugin records in the JUnit XML; the tests not
explored with the plugin's reason; explore/plain and inactive/plain wall time (one session each: a
first-contact figure, not bench/suites.py's median of interleaved pairs). The `before` record
(commit 355b9ad, an earlier run) is kept as it is in the file.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional

import suites

ROOT = suites.ROOT
BASE = os.path.join(ROOT, "build", "bench-env", "fc")
OUT = os.path.join(ROOT, "bench", "suites_first_contact.json")
PROP = "affidavit_explore"  # the JUnit property the plugin records each test's status in

# The pool's first entries, in its order: the PyPI pin (the newest version that installs on Python
# 3.11), the test paths and arguments the command line adds (why, beside each), and what the suite
# needs beyond bench/requirements-suites.txt (from the sdist's own test requirements).
POOL: List[Dict[str, Any]] = [
    {"name": "looptime", "pin": "looptime==0.9", "args": ["tests"], "extras": ["async-timeout==5.0.1"]},
    {"name": "aiodebug", "pin": "aiodebug==2.2.1"},
    # pyleak's trio tests need pytest-trio; its FastAPI tests need fastapi and httpx
    {"name": "pyleak", "pin": "pyleak==0.2.0", "args": ["tests"],
     "extras": ["trio==0.35.0", "pytest-trio==0.8.0", "fastapi==0.163.2", "httpx==0.28.1"]},
    # its test_posix.py runs every case with and without uvloop
    {"name": "aiorun", "pin": "aiorun==2025.1.1", "args": ["tests"], "extras": ["uvloop==0.23.0"]},
    # the tests ship inside the package (later/tests)
    {"name": "later", "pin": "later==26.8.1", "args": ["later/tests"], "extras": []},
    {"name": "unsync", "pin": "unsync==1.4.0", "args": ["test"], "extras": []},
    {"name": "cachettl", "pin": "cachettl==1.0.4"},
    {"name": "py-memoize", "pin": "py-memoize==3.1.1"},
    {"name": "aiopath", "pin": "aiopath==0.6.11"},
    # The third contact (entries 10-13, bench/first_contact.py --only ... --record first_contact_3).
    # its UDP tests bind and connect on 127.0.0.1 / ::1 / a Unix socket; its dev group asks only pytest
    # and pytest-asyncio
    {"name": "asyncio-dgram", "pin": "asyncio-dgram==3.0.0", "args": ["test"], "extras": []},
    # every sdist (0.0.1 to 17.4.8; 17.6.1 on are wheels only) imports pip.req in its setup.py: none
    # builds with a pip of the last years, so none installs on Python 3.11 (recorded as skipped)
    {"name": "aioprometheus", "pin": "aioprometheus==17.4.8"},
    # aiohttp is its own requirement (pinned here); test_with_aiohttp_client.py needs pytest-aiohttp's
    # aiohttp_client. test_foo and test_passthrough make a real request to httpstat.us (a network
    # service, through aresponses.passthrough): deselected. The suite has no pytest configuration, so
    # the rootdir is src/ (fetch's pytest.ini) and node ids start at the sdist's directory: the first
    # contact ran with "tests/test_server.py::..." (the args in its record), which matched nothing, so
    # the two ran and failed plainly (the name does not resolve here), not counted
    {"name": "aresponses", "pin": "aresponses==3.0.0",
     "args": ["tests", "--deselect", "aresponses-3.0.0/tests/test_server.py::test_foo",
              "--deselect", "aresponses-3.0.0/tests/test_server.py::test_passthrough"],
     "extras": ["aiohttp==3.14.5", "pytest-aiohttp==1.1.1"]},
    # its testpaths (tests, and mocket for --doctest-modules). The tests that need its docker services
    # (httpbin.local, redis) are skipped by its own switches SKIP_TRUE_HTTP / SKIP_TRUE_REDIS (env);
    # test_asyncio_record_replay connects to google.com:80 unguarded: deselected. Its addopts carry -x,
    # which would end a session at its first failure: --maxfail=0 lifts it. Extras: what its tests import
    # from its `test` extra (asgiref, fastapi, gevent, httpx, psutil, redis<8, requests, sure, xxhash,
    # aiohttp), and pook for test_pook.py (its `pook` extra)
    {"name": "mocket", "pin": "mocket==3.15.0",
     "args": ["tests", "mocket", "--maxfail=0", "--deselect", "tests/test_asyncio.py::test_asyncio_record_replay"],
     "env": {"SKIP_TRUE_HTTP": "1", "SKIP_TRUE_REDIS": "1"},
     "extras": ["aiohttp==3.14.5", "asgiref==3.13.0", "gevent==26.9.0", "psutil==7.2.2", "redis==7.4.1",
                "requests==2.34.2", "sure==2.0.1", "xxhash==4.1.0", "pook==2.1.6"]},
    # The fourth contact (entries 14 on, bench/first_contact.py --only ... --record first_contact_4).
    # its one requirement (wrapt) comes with it; its tests are unittest cases and plain pytest functions
    {"name": "aiounittest", "pin": "aiounittest==1.5.0", "args": ["tests"], "extras": []},
    # the newest sdists of these three ship no test file (recorded as skipped)
    {"name": "asyncinotify", "pin": "asyncinotify==4.4.4"},
    {"name": "aioprocessing", "pin": "aioprocessing==2.0.1"},
    # its requirements-dev.txt: hypothesis, aiosmtpd (the SMTP server its tests talk to on 127.0.0.1),
    # trustme (its TLS certificates); pytest-xdist and coverage are not needed to run it
    {"name": "aiosmtplib", "pin": "aiosmtplib==5.1.3", "args": ["tests"],
     "extras": ["hypothesis==6.170.27", "aiosmtpd==1.4.6", "trustme==1.2.1"]},
    # its dev group: aiomisc-pytest (the pytest plugin that runs its async tests on aiomisc's loop
    # fixture); markdown-pytest only tests README.md, not collected from tests/
    {"name": "aiofile", "pin": "aiofile==3.12.3", "args": ["tests"], "extras": ["aiomisc-pytest==2.0.0"]},
    {"name": "backoff", "pin": "backoff==2.2.1"},
    # its tests group (pytest, anyio, dirty-equals) and what its tests import from its dev group
    # (prometheus-client, structlog); trio (bench/requirements-suites.txt) adds its trio-backend cases
    {"name": "stamina", "pin": "stamina==26.1.0", "args": ["tests"],
     "extras": ["dirty-equals==0.11", "prometheus-client==0.26.0", "structlog==26.1.0"]},
    # its requirements (cronsim, python-dateutil, tzlocal) come with it; its test extra asks pytest
    # and pytest-cov (addopts --cov)
    {"name": "aiocron", "pin": "aiocron==2.1", "args": ["tests"], "extras": []},
    # The fifth contact (entries 22 on, bench/first_contact.py --only ... --record first_contact_5).
    # its suite is `python -m aiosqlite.tests` (aiosqlite/tests/__init__.py imports SmokeTest, an
    # IsolatedAsyncioTestCase): smoke.py, named explicitly (no file is named test_*.py; perf.py is its
    # separate `make perf` benchmark, not run). Its dev extra is linters, coverage and build tools only
    {"name": "aiosqlite", "pin": "aiosqlite==0.22.1", "args": ["aiosqlite/tests/smoke.py"], "extras": []},
    # The sdist ships no pytest configuration and its async tests carry no marker (pytest-aiohttp's
    # aiohttp_client): -o asyncio_mode=auto. bench/suites.py's plugin_args blocks the pytest-aiohttp
    # entry point (-p no:aiohttp, aresponses' plugin kept to its own suite): -p pytest_aiohttp.plugin
    # loads it by its module name. test_redis_storage.py and test_memcached_storage.py need redis and
    # memcached servers in docker containers (conftest's docker fixtures): ignored. Extras: its
    # extras_require (redis, aiomcache, cryptography, pynacl) and what conftest.py imports (docker,
    # pytest-mock's from requirements-suites.txt); aiohttp is its own requirement
    {"name": "aiohttp-session", "pin": "aiohttp-session==2.12.1",
     "args": ["tests", "-o", "asyncio_mode=auto", "-p", "pytest_aiohttp.plugin",
              "--ignore=tests/test_redis_storage.py", "--ignore=tests/test_memcached_storage.py"],
     "extras": ["aiohttp==3.14.5", "pytest-aiohttp==1.1.1", "redis==7.4.1", "aiomcache==0.8.2",
                "cryptography==50.0.2", "pynacl==1.6.2", "docker==7.2.0"]},
    # the newest sdist ships no test file (its tests directory is not in the sdist; recorded as skipped)
    {"name": "async-asgi-testclient", "pin": "async-asgi-testclient==1.4.11"},
    # its pyproject's pytest options (asyncio_mode auto) apply. The sdist ships tests/test_*.py but not
    # tests/conftest.py (its state-resetting fixtures), tests/anyio_compat.py nor examples/: test_sse.py
    # and test_issue167.py import tests.anyio_compat and would stop the session at collection, so they
    # are ignored; the rest run as they came (some fail plainly without conftest/examples: not counted).
    # Extras: what its tests import from its dev group (httpx2, uvicorn); asgi-lifespan and
    # testcontainers are imported by none of them
    {"name": "sse-starlette", "pin": "sse-starlette==3.7.1",
     "args": ["tests", "--ignore=tests/test_sse.py", "--ignore=tests/test_issue167.py"],
     "extras": ["httpx2==2.17.0", "uvicorn==0.55.0"]},
    # the newest sdist ships no test file (and its tests need a memcached server; recorded as skipped)
    {"name": "aiomcache", "pin": "aiomcache==0.8.2"},
    # The sdist ships tests/test_*.py but not tests/__init__.py, conftest.py, common.py, fixtures/ nor
    # profiles/: 9 of its 10 modules import .conftest or .common and fail at collection (which stops the
    # session); test_ssdp.py, the one that imports neither, is run. setup.cfg's pytest options
    # (asyncio_mode auto) apply; nothing beyond its own requirements is imported
    {"name": "async-upnp-client", "pin": "async-upnp-client==0.49.0", "args": ["tests/test_ssdp.py"],
     "extras": []},
    # The sdist ships tests/test_*.py but not tests/__init__.py, fixtures.py nor common.py: the 19
    # modules that import them (or test_server's) fail at collection; the 7 that import none are run.
    # Upstream's tox runs plain pytest with no extras or with all; extras here: the sdist's `oscore`
    # extra (cbor2, cryptography, filelock, ge25519, lakers-python, cbor-diag), without which
    # test_oscore.py and test_util_cryptography.py skip (`all` adds DTLSSocket, websockets: no module
    # run imports them)
    {"name": "aiocoap", "pin": "aiocoap==0.4.17",
     "args": ["tests/test_credentials.py", "tests/test_doctest.py", "tests/test_encoding.py",
              "tests/test_oscore.py", "tests/test_timeoutdict.py", "tests/test_uri_handling.py",
              "tests/test_util_cryptography.py"],
     "extras": ["cbor2==6.3.0", "cryptography==50.0.2", "filelock==4.3.2", "ge25519==2.0.0",
                "lakers-python==0.6.2", "cbor-diag==1.2.0"]},
    # The sixth contact (entries 29 on, bench/first_contact.py --only ... --record first_contact_6).
    # the newest sdist ships the package only, no test file (recorded as skipped)
    {"name": "amqtt", "pin": "amqtt==0.12.1"},
    # The sdist ships tests/test_*.py but not tests/utils/ (FakeApplication, ensure_folder,
    # modified_env), tests/examples/ nor tests/files*/ (data), and no pytest configuration (upstream's
    # pytest.ini, not shipped, sets asyncio_mode=auto: its async tests carry no marker, so
    # -o asyncio_mode=auto). The 16 modules that import tests.utils or .examples fail at collection
    # (which stops the session): ignored; the other 29 run as they came (those that read tests/files
    # fail plainly: not counted). Extras: what the modules run import beyond its requirements
    # (pydantic) and its `full` extra (cryptography, PyJWT, websockets, Jinja2, defusedxml: test_bindings
    # imports defusedxml), pinned to the newest its ranges allow. Its sdists (2.5.1 to 2.6.4 checked)
    # ship the Cython sources' .pyx but not the .c files setup.py compiles, so the build fails
    # ('blacksheep/url.c: No such file or directory') unless BLACKSHEEP_NO_EXTENSIONS=1, its setup.py's
    # own switch for the pure-Python package: set in the environment of the invocation that installed
    # it (install() does not read an entry's env) and, below, for its sessions
    {"name": "blacksheep", "pin": "blacksheep==2.6.4", "env": {"BLACKSHEEP_NO_EXTENSIONS": "1"},
     "args": ["tests", "-o", "asyncio_mode=auto"] + [f"--ignore=tests/{m}.py" for m in (
         "test_application", "test_auth", "test_auth_api_key", "test_auth_basic", "test_controllers",
         "test_csrf", "test_encodings", "test_file_buffer", "test_forwarding", "test_multipart",
         "test_piccolo_admin_compat", "test_router", "test_scheme", "test_templating", "test_url_resolver",
         "test_websocket")],
     "extras": ["pydantic==2.14.4", "cryptography==46.0.7", "PyJWT==2.15.1", "websockets==15.0.1",
                "Jinja2==3.1.6", "defusedxml==0.7.1"]},
    # Its pyproject's pytest options apply (-p anyio, anyio_mode auto, timeout 20, -p no:asyncio,
    # filterwarnings error). Every test runs on three backends (asyncio, asyncio+uvloop, trio) and its
    # ~1000 test functions would take the explore session far past 25 minutes: the first 5 of its test
    # files in the order test_files() lists them (sorted paths): tests/streams/test_buffered.py,
    # test_file.py, test_memory.py, test_stapled.py, test_text.py. Extras: its `test` dependency group
    # (blockbuster, hypothesis, psutil, trustme, truststore; pytest-mock, pytest-timeout, coverage and
    # uvloop are in requirements-suites.txt); its trio extra is trio, also there
    {"name": "anyio", "pin": "anyio==4.16.0",
     "args": ["tests/streams/test_buffered.py", "tests/streams/test_file.py", "tests/streams/test_memory.py",
              "tests/streams/test_stapled.py", "tests/streams/test_text.py"],
     "extras": ["blockbuster==1.5.29", "hypothesis==6.170.27", "psutil==7.2.2", "trustme==1.2.1",
                "truststore==0.10.5"]},
    # the newest sdist ships src/websockets only, no test file (recorded as skipped)
    {"name": "websockets", "pin": "websockets==17.4"},
    # Its pyproject's pytest options apply (filterwarnings error); the whole suite (54 async test
    # functions, run by anyio's plugin, the rest sync tests through TestClient). pytest-asyncio (not
    # its requirement: requirements-suites.txt's) warns on an unset fixture loop scope, which its
    # filterwarnings turns into an INTERNALERROR at startup: -o asyncio_default_fixture_loop_scope=
    # function, as bench/suites.py does for async-lru. Extras: its `full` extra (itsdangerous, jinja2, opentelemetry-api,
    # python-multipart, pyyaml, httpx, httpx2) and what its tests use from its dev group (blockbuster,
    # conftest's autouse fixture; opentelemetry-sdk for test_opentelemetry.py; trio, in
    # requirements-suites.txt)
    {"name": "starlette", "pin": "starlette==1.10.0",
     "args": ["tests", "-o", "asyncio_default_fixture_loop_scope=function"],
     "extras": ["itsdangerous==2.2.0", "Jinja2==3.1.6", "opentelemetry-api==1.45.2", "python-multipart==0.0.34",
                "PyYAML==6.0.4", "httpx==0.28.1", "httpx2==2.17.0", "blockbuster==1.5.29",
                "opentelemetry-sdk==1.45.2"]},
    # Its pyproject's pytest options apply (asyncio_mode strict, asyncio_debug, filterwarnings error).
    # The whole suite (77 test files, 3864 tests, ~790 async test functions, mock-based: blacksheep's
    # 204 and anyio's 82 explored tests took under a minute, so this is not clearly past 25 minutes).
    # Extras: its pytest dependency group's mock (pytest-asyncio is in requirements-suites.txt;
    # pytest-randomly, which shuffles the order, and pytest-cov / coverage are not needed to run it)
    {"name": "hikari", "pin": "hikari==2.7.0", "args": ["tests"], "extras": ["mock==5.2.0"]},
    # the newest sdist ships the package only, no test file (recorded as skipped)
    {"name": "aiogithubapi", "pin": "aiogithubapi==25.5.0"},
]

# Why each test red under explore failed, read by hand from the test's source and its failure
# (suite -> JUnit key -> reading). A red test not named here is recorded as "not read yet".
_LATER_SLEEP_500 = (
    "The test watches a task sleeping asyncio.sleep(500) (a 'forever' sleep), leaves the Watcher (by "
    "raising / by later.timeout(0.2)) and asserts the watcher cancelled that task. In the failing schedule "
    "(replayed with --events) one step of the watcher's exit costs 499,999 ms of virtual time, capped by "
    "the below-deadlines half to 1 ms (AFD_PCT_MARGIN_NS) short of the sleep's wake-up; the sleep's timer "
    "is then within AFD_WAKE_BATCH_NS, so afd_deadline_horizon (src/runtime/deadlines.c) no longer counts "
    "it as a threshold, and the next step's 10 ms cost carries the clock 9 ms past it unrecorded: the "
    "sleep(500) task completes normally before the watcher cancels it, task.cancelled() is False. Stock "
    "asyncio gives this only if the test stalls 500 s between watch() and the cancel: a time threshold "
    "outlasted, not a race. No AFD_EV_DEADLINE_LATE is recorded (the first step stops 1 ms short, more "
    "than AFD_REACH_NS), so the timing check never runs and the verdict is failure, not timing_sensitive: "
    "the product's bug (two steps together outlast what each is capped below)."
)
_AIORUN_STOCK_LOOP = (
    "A sync test calls aiorun.run(main(), stop_on_unhandled_errors=True), which sets asyncio's "
    "DefaultEventLoopPolicy, makes a stock loop with asyncio.new_event_loop() and runs it forever until "
    "main's error (or the exception handler) stops it; main first awaits asyncio.sleep(0.01) / (0.1). "
    "Red under the zero schedule (run 1 of 1), a 10 s hang whose only event is 'an event loop affidavit "
    "does not control ran'; py-spy shows the run's process in BaseEventLoop._run_once's select, the "
    "stock loop. The run is controlled, so src/runtime/clocks.c makes time.monotonic() on the run's "
    "thread read the virtual clock (asyncio's own files included), and with no controlled loop to jump "
    "it, that clock moves only AFD_CLOCK_READ_NS (100 ns) per read: the stock loop's time() barely "
    "moves, select waits the real 10 ms it computed, and the sleep's timer never comes due. Stock "
    "asyncio never does this (plain and inactive sessions pass): the product's bug -- an uncontrolled "
    "loop on the run's thread reads the virtual clock. At 355b9ad these 4 were not explored (misnamed "
    "'own loop class'); now they are run and hang."
)
_PYLEAK_SLEEP_10 = (
    "The test runs code that leaks a task sleeping asyncio.sleep(10) (leaky_function, create_named_task) "
    "while the test itself sleeps 0.1 s, then pyleak's no_task_leaks exit (after its own "
    "asyncio.sleep(0.01)) must find the leaked task still pending. In the failing schedule (each replayed "
    "with --events) the step that wakes the test's sleep(0.1) costs 9,898.999 ms (9,997.999 ms in "
    "Decorator::test_action_raise): capped by the below-deadlines half 1 ms (AFD_PCT_MARGIN_NS) short of "
    "the leaked task's sleep(10) wake-up; pyleak's own sleep(0.01) then carries the clock past it, the "
    "leaked task finishes, and no leak is found (0 warnings, no TaskLeakError, not cancelled). Stock "
    "asyncio gives this only if one step stalls ~9.9 s: a time threshold (two sleeps of different "
    "lengths raced), not a race. The cap is 1 ms short of the wake-up, more than AFD_REACH_NS, so no "
    "AFD_EV_DEADLINE_LATE is recorded and the timing check never runs: verdict failure instead of "
    "timing_sensitive (listed apart, green) -- the product's bug, as in later's two."
)
_PYLEAK_TRIO = (
    "A trio test (pytest-trio, @pytest.mark.trio) that pyleak's no_leaks marker keeps an async function, "
    "so the plugin explores it; it only awaits trio.sleep(0.01). Red under the zero schedule: a 10 s hang "
    "with no event at all (no asyncio loop ran). py-spy: the run's process waits in trio's "
    "EpollIOManager.get_events under trio.run. trio's clock is `from time import perf_counter`, which in "
    "a controlled run is src/runtime/clocks.c's hook: virtual on the run's thread, advancing only 100 ns "
    "a read with no controlled loop to jump it, so trio's 10 ms deadline never comes. Stock asyncio and "
    "plain pytest never do this (it passes plain and inactive): the product's bug -- a test that runs no "
    "asyncio loop at all is explored, and its foreign loop's clock is virtualised. (The other 6 trio "
    "tests, test_trio_event_loop_blocking.py, whose item.obj pytest-trio replaces with a sync runner, "
    "are neither explored nor listed as not explored.)"
)
_LT_IGNORED = (
    "looptime.patch_event_loop(asyncio.new_event_loop()) (the looptime_loop fixture, or looptime's plugin "
    "for a @pytest.mark.looptime test) turns the loop, here affidavit's ControlledLoop, into a dynamic "
    "subclass (LoopTimeEventLoop, ControlledLoop) whose time() returns looptime's own fake clock, and "
    "replaces loop._selector.select on the instance with one that moves that clock and raises at end=. "
    "The controlled loop's C iteration (src/runtime/loop.c) keeps timers on its own virtual clock, not "
    "self.time(), and polls the selector only when a real fd besides the self-pipe is registered "
    "(fds_active), so looptime's select is never called: looptime's clock never moves (time() stays at "
    "start: 'assert 0.0 == 10', '0.2 == 0.29'), end= never fires (DID NOT RAISE LoopTimeoutError; the "
    "never-set Event of test_the_end_of_time becomes a deadlock), and a timeout armed from looptime's "
    "time() (10 s after 0) is already past on the controlled clock (TimeoutError at once). Red under the "
    "zero schedule; stock asyncio runs BaseEventLoop._run_once, which calls self.time() and "
    "self._selector.select, and passes: the product's bug (the controlled loop ignores a loop subclass's "
    "time() and selector; named 'own loop class' nowhere, explored as if controlled)."
)
_LT_CHRONO = (
    "looptime's Chronometer (clock=time.perf_counter, affidavit's hook in a controlled run) must measure "
    "almost no time across two asyncio.sleep(1) under @pytest.mark.looptime(start=100); it measured "
    "2.0000025 s: the virtual perf_counter of src/runtime/clocks.c follows the controlled loop's clock, "
    "which jumped 2 s for the sleeps, plus 25 reads x 100 ns. On stock asyncio looptime compacts the "
    "sleeps and the real clock moves microseconds. Red under the zero schedule: the product's bug (the "
    "same ignored time()/select as test_time_moves, seen through the virtualised real clock)."
)
_LT_TRUE_TIME = (
    "With looptime disabled (setup_looptime(_enabled=False)) loop.time() is the loop's own; the test "
    "asserts it equals time.monotonic() within 1 s ('we know that asyncio uses this clock'). Under "
    "affidavit, ControlledLoop.time() (loop_time in src/runtime/loop.c) returns the raw virtual clock "
    "(epoch 1000 s: 1001.0) while the hooked time.monotonic() (src/runtime/clocks.c) returns the virtual "
    "clock plus the run's fixed offset (the real reading at the run's start: 10438.8). Stock asyncio's "
    "loop.time() is time.monotonic(): never. Red under the zero schedule: the product's bug (the loop's "
    "clock and the program's monotonic clock differ by the offset)."
)
_LT_THREAD_WAIT = (
    "A sender thread sleeps time.sleep(0.1) (real) and writes to a socketpair the loop reads; the test "
    "asserts 0.1 <= chronometer.seconds (time.perf_counter, virtual in a controlled run). Under the zero "
    "schedule the chronometer read 0.0996 / 0.0995 s: the controlled loop waited for the real fd in real "
    "time (closure: uncontrolled, 'a real file descriptor became ready'), but its virtual clock, which "
    "perf_counter reads, advanced less than the 100 ms the thread slept (in test_stepping_with_no_limit "
    "the fd became ready at virtual +91.3 ms). Stock asyncio gives < 0.1 only if the main thread stalls "
    "0.4-0.5 ms between thread.start() and entering the chronometer while the thread already sleeps: "
    "possible on a loaded machine but not what happened here; the deficit is the product's (its virtual "
    "clock lags the real time it waited for another thread). Not abstained although a thread worked in "
    "real time (confirm.thread is null)."
)
_LT_REAL_THRESHOLD = (
    "looptime's idle stepping over a socket nobody writes: the test asserts the chronometer "
    "(time.perf_counter, virtual in a controlled run) measured under 1.02 s (end_of_idle) / 1.01 s "
    "(end_of_time) for 1 s of 0.1 s idle steps. The pct schedule gave one step a 10 ms cost "
    "(_set_result_unless_cancelled in end_of_idle, the test's first step in end_of_time), which the "
    "chronometer counts: 1.0235 / 1.0114 s. Stock asyncio gives the same on a machine that stalls a step "
    "10 ms (a real-time threshold of the test, not a timer the program armed): reachable, but not a "
    "race, so verdict failure is the wrong name (timing_sensitive would be right); the product cannot "
    "see a threshold written as an assert on a clock difference."
)
_ARESP_TOTAL_TIMEOUT = (
    "The test makes one request through aiohttp.ClientSession to a host aresponses' fixture serves (its "
    "server on the same loop, the bytes through a real loopback socket) under aiohttp's default "
    "ClientTimeout(total=300, sock_connect=30), which aiohttp rounds up to whole seconds: the events "
    "show deadline #1 of 300,999.999 ms and #2 of 30,999.999 ms armed at the session.get line. Replayed "
    "with --events (1 run each; test_https 10/10 failed, test_simple 4/10, 'uncontrolled source: real "
    "file descriptors'): the schedule's one delay makes the test task's step after the connection is "
    "made (it writes the request, then waits for the response) cost 300,999.96 ms, ending within 10 us "
    "of the total-timeout deadline (8 us short of it to 2 us past it in the five replays); the loop then "
    "waits for the response on the real socket, the virtual clock is past the deadline when it comes, "
    "aiohttp's TimeoutHandle cancels the test task and "
    "TimerContext.__exit__ raises TimeoutError (helpers.py:759). Stock asyncio gives this only if that "
    "request takes 301 s (a step stalled 5 minutes): aiohttp's own time threshold, reachable on a "
    "stalled machine but not a race. The product names the suite's 6 other tests of the same kind "
    "(same timers, same one-delay schedules) timing_sensitive, listed apart; these 5 got verdict failure "
    "with no timing check (timing null; in 2 of the 5 replays the events say a task 'outlasted deadline "
    "#1', in 3 they say nothing of it): the product's bug (a delay capped microseconds below a deadline, "
    "then real waiting carries the clock past it, is called a race)."
)
_SMTP_HANG = (
    "The test's client (aiosmtplib) talks to aiosmtpd's server on the same loop over a real loopback "
    "socket; aiosmtplib resolves its local hostname with asyncio.to_thread(socket.getfqdn), a thread. "
    "Red as a hang (no result within 10 s) at virtual +1.4 ms, the last events a real fd ready and 'a "
    "thread called back into the loop' while the server's STARTTLS awaits the handshake (tests/smtpd.py:"
    "103, SSLProtocol's 60 s handshake timer armed); confirmed 3/3 alone. Replayed once with --events "
    "it hung the same way before its one delay ran (affidavit: 'stale schedule: 1 of its 1 delays never "
    "ran'): the hang does not come from the schedule. Stock asyncio passes it (plain, inactive); no "
    "virtual time passed, so no timer of the program is involved: the tool's false red, a controlled "
    "run that stops waiting for a real fd / a thread's callback -- cause not established (not bisected)."
)
_SMTP_HANDSHAKE_60 = (
    "As test_send_with_login: red as a hang at virtual +2 ms right after 'a thread called back into "
    "the loop', while the server's STARTTLS awaits the TLS handshake; confirmed 3/3. Replayed once with "
    "--events the schedule's one delay did run, and the run failed otherwise: the server's step "
    "suspended at tests/smtpd.py:103 cost 59,999.978 ms, capped 22 us below deadline #8 (SSLProtocol's "
    "60 s ssl_handshake_timeout), then 'a real wait, after a stall, outlasted deadline #8': the "
    "handshake is aborted and the client raises SMTPServerDisconnected('Connection lost'). Neither is a "
    "race: the hang is the tool's (as test_send_with_login), and the replay's failure is a time "
    "threshold (stock asyncio needs one step stalled 60 s) given verdict failure instead of "
    "timing_sensitive, the product's bug as aresponses' 5."
)
_SMTP_IDLE_300 = (
    "Seven commands gathered on one client (its protocol Lock orders them). Red as a hang at virtual "
    "+2 ms right after a Lock hand-off (SMTP.helo to SMTP.noop) and 'a thread called back into the "
    "loop'; confirmed 3/3. Replayed once with --events the delay ran and the run failed otherwise: "
    "step SMTP.helo#0 cost 299,999.992 ms, capped 8 us below deadline #7 (aiosmtpd's 300 s idle "
    "timeout of the server's connection), then a real fd wait carried the clock past it ('a real wait, "
    "after a stall, outlasted deadline #7'): the server's _timeout_cb closes the connection and the "
    "client raises SMTPServerDisconnected('Unexpected EOF received'). Not a race: the hang is the "
    "tool's (as test_send_with_login); the replay's failure is a time threshold (a step stalled 300 s) "
    "named failure instead of timing_sensitive, the product's bug as aresponses'."
)
_AS_TOTAL_TIMEOUT = (
    "The test makes one GET through pytest-aiohttp's aiohttp_client (aiohttp's test server on the same "
    "loop, the bytes through a real loopback socket) under aiohttp's default ClientTimeout(total=300, "
    "sock_connect=30): the events show deadline #1 of 300,999.999 ms and #2 of 30,999.999 ms armed at "
    "the client.get line (tests/test_path_domain.py:49). Replayed with --events (5 runs: 5 failed, traces "
    "differ): the schedule's one delay makes the server's RequestHandler.start step cost 300,999.965 ms "
    "('outlasted deadline #2'), just below deadline #1; then 'a real wait, after a stall, outlasted "
    "deadline #1': the socket's answer comes with the virtual clock past aiohttp's total timeout, which "
    "cancels the request, and the client raises TimeoutError (aiohttp/helpers.py:759). Stock asyncio "
    "gives this only if one step stalls ~301 s: aiohttp's own time threshold, not a race. The product "
    "names 15 tests of the suite with the same timers timing_sensitive (listed apart, green; among them "
    "test_invalidate_with_same_path_domain, the same body with one more request) but gave this one "
    "verdict failure with no timing check (timing null; confirmed 3/3): the product's bug, as "
    "aresponses' 5 (a delay capped just below a deadline, then a real wait carrying the clock past it, "
    "is called a race)."
)
_SSE_FAIL_AFTER = (
    "The test drives EventSourceResponse with an in-process ASGI receive/send pair (no socket, no "
    "thread) inside anyio.fail_after(1) (fail_after(2) in test_exitSignal_whenClosingSendStalls), and "
    "its interruption path then waits for a short timer of the library or of the test: sse-starlette's "
    "50 ms cleanup deadline (cleanup_timeout=0.05, sse.py:421), its 100 ms send_timeout (sse.py:387) or "
    "the cleanup's own anyio.sleep(0.05). Replayed with --events (3 runs each of the asyncio-disconnect, "
    "asyncio-shutdown, CleanupFinishesInTime[asyncio-None] and [trio-None], ClosingSendStalls[asyncio] "
    "and SwallowsDeadlineCancellation[trio] cases: all failed, traces identical): the pct schedule makes "
    "one step cost 998.999-999 ms (989 + 10 ms in CleanupFinishesInTime; 1,999 ms under fail_after(2)), "
    "ending 1 ms short of the fail_after deadline #1; with every task waiting, the clock then jumps to "
    "that deadline before the 50/100 ms timer comes due, fail_after's scope cancels the test and anyio "
    "raises TimeoutError (anyio/_core/_tasks.py:155). Stock asyncio gives this only if one step stalls "
    "~0.95 s (the plugin's own cause line for SwallowsDeadlineCancellation[trio]: 'fails when "
    "TaskHandle._run_coro#0 step 0 is delayed by more than 949997.0 us'): a time threshold of the test, "
    "not a race. The delay stops 1 ms short of the deadline and the program's own timer carries the "
    "clock past it, so the events say nothing 'outlasted' it and no timing check runs (timing null): "
    "verdict failure instead of timing_sensitive -- the product's bug, the class of later's two and "
    "pyleak's 12. (The [trio] cases are not trio runs: the suite's own asyncio_mode = auto makes "
    "pytest-asyncio run anyio's trio-parametrized cases on asyncio, in plain pytest too -- checked "
    "outside the record: trio.lowlevel.start_guest_run is never called and sniffio reports asyncio -- so "
    "each [trio] case is its [asyncio] twin, same token.)"
)
_BS_OUT_RMTREE = (
    "tests/test_files_handler.py's module-scoped fixture temp_files_folder makes tests/.out (os.makedirs) "
    "and removes it at the module's teardown (shutil.rmtree); test_write_file, test_write_file_text_mode "
    "and test_write_file_with_iterable write a file into it. The session's instance of the fixture is set "
    "up once, before test_write_file; the plugin then explored test_write_file (30 runs, closure "
    "uncontrolled; its document notes copies.shared 'wrote .../tests/.out/<uuid>.txt'), and each explore "
    "run sets up and tears down the module fixture itself, so a run's rmtree deletes the directory on the "
    "shared filesystem while the session's instance still holds it. The next two tests' own plain runs in "
    "the explore session then fail (FileNotFoundError on tests/.out/<uuid>.txt: 'not explored: it failed "
    "in its plain run'), and the session's module teardown, attributed to the module's last test "
    "test_file_context_raises_if_file_is_not_open (a test that uses no fixture and passed), errors: "
    "rmtree of a tests/.out that is gone (no affidavit status recorded for it: listed in "
    "async_passed_without_status). Checked outside the record: --affidavit-explore=30 -k test_write_file "
    "gives the same 2 failed + 1 error; -k 'test_write_file_text_mode or test_file_context' passes both "
    "tests and errors at the module teardown. Stock asyncio never does this (plain and inactive pass): "
    "the product's bug -- explore runs execute a wider-scoped fixture's teardown, whose effect on disk "
    "(shared between the copies and the session) breaks the session's own instance of that fixture. Not a "
    "race, not a threshold."
)
READINGS: Dict[str, Dict[str, str]] = {
    "blacksheep": {
        f"blacksheep-2.6.4.tests.test_files_handler::{t}": _BS_OUT_RMTREE for t in (
            "test_file_context_raises_if_file_is_not_open", "test_write_file_text_mode",
            "test_write_file_with_iterable")},
    "aiohttp-session": {
        "aiohttp_session-2.12.1.tests.test_path_domain::test_with_same_path_domain": _AS_TOTAL_TIMEOUT,
    },
    "sse-starlette": {
        **{f"tests.test_issue217::{t}[{b}{p}]": _SSE_FAIL_AFTER for b in ("asyncio", "trio") for t, ps in (
            ("test_send_whenCleanupFinishesInTime_thenCompletesWithoutWarning", ("-None", "-0.5")),
            ("test_send_whenCleanupSwallowsDeadlineCancellation_thenStillWarns", ("",)),
            ("test_send_whenInterruptedAndCleanupStuck_thenDeadlineCancelsCleanup",
             ("-cancel", "-disconnect", "-shutdown"))) for p in ps},
        **{f"tests.test_response_completion::test_exitSignal_whenClosingSendStalls_thenSendTimeoutEndsResponse"
           f"AndBackgroundRuns[{b}]": _SSE_FAIL_AFTER for b in ("asyncio", "trio")},
    },
    "aiosmtplib": {
        "tests.test_api::test_send_with_login": _SMTP_HANG,
        "tests.test_api::test_send[mime_message]": _SMTP_HANDSHAKE_60,
        "tests.test_asyncio::test_many_commands_with_gather": _SMTP_IDLE_300,
    },
    "aresponses": {
        f"aresponses-3.0.0.tests.{t}": _ARESP_TOTAL_TIMEOUT for t in (
            "test_examples::test_simple", "test_server::test_bad_redirect", "test_server::test_history",
            "test_server::test_https", "test_server::test_regex")},
    "looptime": {
        **{f"tests.test_time_moves::{t}": _LT_IGNORED for t in (
            "test_end_of_time_allows_zerotime_finalizers", "test_end_of_time_cancels_realtime_finalizers",
            "test_end_of_time_injects_into_coros", "test_end_of_time_reached", "test_execution_takes_near_zero_time",
            "test_floating_point_precision_fixed[0.2-0.09-0.29]", "test_floating_point_precision_fixed[0.2-0.21-0.41]",
            "test_real_time_is_ignored", "test_timeout_does_happen_according_to_schedule",
            "test_timeout_doesnt_happen_before_entered_the_code")},
        "tests.test_readme::test_async_timeout": _LT_IGNORED,
        "tests.test_readme::test_the_end_of_time": _LT_IGNORED,
        "tests.test_chronometers::test_readme_example": _LT_CHRONO,
        "tests.test_time_moves::test_execution_takes_true_time_when_disabled": _LT_TRUE_TIME,
        "tests.test_time_on_io_idle::test_no_idle_configured": _LT_THREAD_WAIT,
        "tests.test_time_on_io_idle::test_stepping_with_no_limit": _LT_THREAD_WAIT,
        "tests.test_time_on_io_idle::test_end_of_idle": _LT_REAL_THRESHOLD,
        "tests.test_time_on_io_idle::test_end_of_time": _LT_REAL_THRESHOLD,
    },
    "pyleak": {
        **{f"tests.test_task_leaks.{t}": _PYLEAK_SLEEP_10 for t in (
            "TestNoTaskLeaksContextManager::test_action_cancel", "TestNoTaskLeaksContextManager::test_action_log",
            "TestNoTaskLeaksContextManager::test_action_raise", "TestNoTaskLeaksContextManager::test_action_warn",
            "TestNoTaskLeaksContextManager::test_enable_creation_tracking",
            "TestNoTaskLeaksContextManager::test_invalid_regex_fallback",
            "TestNoTaskLeaksContextManager::test_multiple_leaks",
            "TestNoTaskLeaksContextManager::test_name_filter_exact_match",
            "TestNoTaskLeaksContextManager::test_name_filter_regex", "TestNoTaskLeaksDecorator::test_action_raise",
            "TestNoTaskLeaksDecorator::test_action_warn", "TestNoTaskLeaksDecorator::test_decorator_with_name_filter")},
        "tests.test_plugin::test_trio_no_leaks": _PYLEAK_TRIO,
        "tests.test_plugin::test_trio_no_leaks_threads_and_blocking": _PYLEAK_TRIO,
    },
    "aiorun": {
        "tests.test_stop_on_errors::test_call_exception_handler[context0-None]": _AIORUN_STOCK_LOOP,
        "tests.test_stop_on_errors::test_call_exception_handler[context1-_TestException]": _AIORUN_STOCK_LOOP,
        "tests.test_stop_on_errors::test_exc_stop": _AIORUN_STOCK_LOOP,
        "tests.test_stop_on_errors::test_stop_must_be_obeyed": _AIORUN_STOCK_LOOP,
    },
    "later": {
        "later-26.8.1.later.tests.test_task.WatcherTests::test_watcher_canceled_parent_aexit": _LATER_SLEEP_500,
        "later-26.8.1.later.tests.test_task.WatcherTests::test_watcher_raise_in_body": _LATER_SLEEP_500,
    },
}


# What else the first contact showed, read by hand (suite -> note).
NOTES: Dict[str, str] = {
    "unsync": "Every test is a sync unittest test; unsync runs its one loop in its own daemon thread, made "
              "lazily by the first test that needs it (test_call_blocking), so that is the only test seen "
              "driving a loop, and it is not explored. Its reason names 'its own loop class "
              "asyncio.unix_events._UnixSelectorEventLoop' (asyncio's stock class) under "
              "test_custom_event_loop.EventLoopTestPolicy, a policy another module sets at import: right "
              "not to explore, but the true reason is a loop run in a thread of the library's own that "
              "outlives the test. At 355b9ad that loop was controlled and 1 test went red; now none.",
    "later": "2 tests fail plainly on Python 3.11 (asyncio.eager_task_factory is 3.12+); not counted.",
    "aiorun": "test_posix.py's 48 cases run aiorun in spawned processes: no loop in the test's process, "
              "nothing to explore, nothing listed (right). test_stop_on_errors.py's 4 are explored and hang.",
    "pyleak": "The 6 trio tests of test_trio_event_loop_blocking.py (pytest-trio replaces their item.obj with "
              "a sync runner) are neither explored nor listed as not explored (async_passed_without_status), "
              "as at 355b9ad; the 2 trio tests of test_plugin.py (kept async by pyleak's marker) are explored "
              "and hang. 3 blocking tests are abstained (pyleak's _monitor_loop thread works in real time), "
              "listed apart and green; test_sync_client's exploration did not end within 120 s. Its explore "
              "session took 12 min (about 10 min past one plain session).",
    "asyncio-dgram": "22 tests, all async, all explored and green (18 closure 'uncontrolled': real UDP and Unix "
                     "sockets; 4 closed). Nothing red, listed apart or not explored.",
    "aresponses": "test_foo and test_passthrough (a real request to httpstat.us: 'Name or service not known' "
                  "here) were meant to be deselected, but the --deselect spelling matched no node id (see "
                  "the POOL comment): they ran, failed plainly, and are the 2 'not explored: it failed in "
                  "its plain run' (right: they did not pass plainly). Every other test is one or more "
                  "requests through aiohttp's client to aresponses' server; all 26 were explored and 24 had a "
                  "failing schedule. 5 are red with verdict failure (READINGS) and 6 are named timing_sensitive "
                  "(listed apart, green), all 11 failing with aiohttp's TimeoutError (its 31 s or 301 s "
                  "default timeout) under one-delay schedules; 13 are unconfirmed (the failing schedule failed "
                  "0-2 of 3 times replayed alone), listed apart, green: 7 of them with a timing summary naming "
                  "the same 31 s / 301 s timers, 6 with no failure text recorded (not read). The explore "
                  "session took 84.5 s for a 1.2 s suite (649 runs).",
    "mocket": "255 tests, 232 pass plainly (23 skipped, all by SKIP_TRUE_HTTP / SKIP_TRUE_REDIS, its switches "
              "for tests that need its docker services), 1 deselected; 8 async tests, all explored. "
              "test_aiohttp is unconfirmed (a schedule failed once, then 2/3 replayed alone, with the thread "
              "'Thread-1 (_do_shutdown)' noted), listed apart, green; not read. Not explored: "
              "test_no_dangling_fds, skipped plainly by SKIP_TRUE_HTTP (right). And 4 sync tests whose "
              "coroutines run on a loop in a thread of a library's own: test_body[http], test_body[https] "
              "and test_httprettish_session (asgiref's async_to_sync runs asyncio.run in a "
              "ThreadPoolExecutor thread) and test_call_from_fastapi (starlette's TestClient runs its app "
              "through anyio's start_blocking_portal, a loop in a thread of its own). Not exploring them is "
              "right, but the reason given, 'the test brings its own loop class "
              "asyncio.unix_events._UnixSelectorEventLoop under the event loop policy "
              "affidavit.loop.ControlledPolicy', names asyncio's stock class as the test's own: a misleading "
              "reason, as unsync's. tests/test_http_gevent.py calls gevent's monkey.patch_socket() when "
              "collected, for the whole session (plain, inactive and explore alike).",
    "aioprometheus": "Its sdists are 0.0.1 to 17.4.8 (17.6.1 on are wheels only). The setup.py of each imports pip: "
                     "in pip's isolated build environment there is no pip (No module named 'pip'), and with "
                     "--no-build-isolation it fails on No module named 'pip.req' (gone since pip 10); checked for "
                     "every sdist version: none installs on Python 3.11.",
    "aiounittest": "12 tests: 10 pass plainly, 2 xfail (expectedFailure: not explored, right). Its tests are "
                   "unittest cases whose coroutines aiounittest runs from a sync method on a loop of its own "
                   "making (asyncio.new_event_loop / get_event_loop, the policy's, so controlled): 9 explored "
                   "and green (3 closed, 6 ran all 30 schedules); test_sync_add ran no loop. Nothing red or "
                   "listed apart.",
    "aiosmtplib": "414 tests, 389 pass plainly; 25 fail plainly on this interpreter (Python 3.11.7: "
                  "email.utils.parseaddr still parses 'a@b.com> AUTH=<c@d.com' leniently to 'a@b.com', so "
                  "its injection tests' ValueError never comes; the strict parser arrived in later 3.11 "
                  "patch releases), not counted; 19 of them are async and 'not explored: it failed in its "
                  "plain run' (right). 302 explored over real loopback sockets to aiosmtpd's server on the "
                  "same loop (221 closure 'uncontrolled'), 6549 runs: 3 red with verdict failure (READINGS: "
                  "all three hung in explore right after a thread's callback, aiosmtplib's "
                  "asyncio.to_thread(socket.getfqdn)); 135 timing_sensitive, 33 unconfirmed (24 of them "
                  "failed 0/3 replayed alone) and 15 abstained, listed apart and green, not read one by "
                  "one: the failure texts seen name the same timers (the client's 60 s command timeout, "
                  "aiosmtpd's 300 s idle timeout, the 60 s TLS handshake timeout) and 'Connection lost' / "
                  "SMTPConnectTimeoutError / hangs after a thread's callback. The explore session took "
                  "34.7 min for a 9.3 s suite (224x): many runs end in the 10 s hang limit.",
    "aiofile": "479 tests, all pass plainly; 478 async, none explored: 'the test brings its own loop class "
               "uvloop.Loop'. Right: aiomisc-pytest's event_loop fixture makes a uvloop loop whenever uvloop "
               "is importable (AIOMISC_USE_UVLOOP defaults on), and uvloop is in every fc venv from "
               "bench/requirements-suites.txt (aiorun's), not from aiofile's own requirements; with "
               "AIOMISC_USE_UVLOOP=0 its tests would run on asyncio's loop (not tried: a first contact runs "
               "as it came). test_default_context_closed_with_event_loop (sync) ran no loop. explore/plain 2.8x is the cost of the plugin "
               "looking at 478 tests it then declines.",
    "stamina": "443 tests, 437 pass plainly (6 skipped by its own skipif: TestLogging is skipped when "
               "structlog IS installed). 275 async tests (anyio marker, backends asyncio and trio: trio is "
               "in every fc venv from bench/requirements-suites.txt): the 137 asyncio cases explored, all "
               "green (closure 119 clock_read, 18 random: tenacity reads time.monotonic and random for its "
               "waits); the 137 trio cases and TestAsyncRetryingCaller::test_repr (a sync method in an "
               "anyio-marked module) 'not explored: the test ran no asyncio event loop' (right; unlike "
               "pyleak's trio tests, none is explored or hangs); 4 'pytest skipped it'. Nothing red or "
               "listed apart; explore/plain 31x (4110 runs in 41 s).",
    "aiosqlite": "30 tests (smoke.py's SmokeTest, an IsolatedAsyncioTestCase), 29 pass plainly; "
                 "test_enable_load_extension skips itself (this Python's sqlite3 has no extension loading): "
                 "'not explored: pytest skipped it' (right). All 29 explored and green, closure "
                 "'uncontrolled' for every one (each aiosqlite connection runs sqlite3 in a thread of its "
                 "own), 870 runs; nothing red, listed apart or abstained. explore/plain 19x (21 s for a "
                 "1.1 s suite). Its sessions began after waiting 11 min for a wt-test run to end.",
    "aiohttp-session": "52 tests (test_redis_storage.py and test_memcached_storage.py ignored: docker services), "
                       "51 pass plainly; test_cookie_storage::test_clear_cookie_on_session_invalidation fails "
                       "plainly (aiohttp 3.14.5 puts DOMAIN=127.0.0.1 in the cleared cookie the test compares "
                       "against) and is 'not explored: it failed in its plain run' (right). 37 async tests "
                       "explored over real loopback sockets (closure 28 uncontrolled, 8 closed, 1 clock_read), "
                       "878 runs; 14 sync tests ran no loop. 1 red (READINGS: aiohttp's 301 s total timeout). "
                       "15 timing_sensitive (12 naming aiohttp's 31 s sock_connect timer, 3 its 301 s total "
                       "timer) and 11 unconfirmed (a schedule failed once, then 0-2 of 3 replayed alone), "
                       "listed apart and green, not read one by one. explore/plain 19x (211 s for 11 s).",
    "async-asgi-testclient": "1.4.11's sdist ships the package only (async_asgi_testclient/testing.py is the "
                             "client itself, not a test): no tests directory.",
    "sse-starlette": "121 tests (test_sse.py and test_issue167.py ignored: they import tests/anyio_compat.py, "
                     "not in the sdist), 100 pass plainly; 13 fail and 8 error plainly, not counted: "
                     "test_broadcasting_example's 8 errors are FileNotFoundError for examples/02_broadcasting.py "
                     "(not shipped), and the first failure read (test_issue152) relies on tests/conftest.py's "
                     "reset of the module-global shutdown state (not shipped); the others not read. 59 "
                     "explored (the 58 async tests that passed plainly and test_same_thread_shares_state, a sync "
                     "test driving loops of its own; closure 20 slot, 18 clock_read, 11 closed, 10 uncontrolled), "
                     "1159 runs: 14 red, all one class (READINGS: one step capped 1 ms below anyio.fail_after's "
                     "deadline, then a 50/100 ms timer of the program carries the clock past it); 2 "
                     "timing_sensitive (test_issue218's head-send cases: the 0.1 s send_timeout), listed apart, "
                     "green. Not explored: 13 failed plainly, 5 whose setup failed plainly, and "
                     "test_multi_loop::TestMultiLoopSafety::test_thread_isolation ('a loop in another thread', "
                     "right). The suite's asyncio_mode = auto runs anyio's [trio] cases on asyncio, in plain "
                     "pytest as under the plugin (see the reading). explore/plain 21x (175 s for 8.4 s).",
    "aiomcache": "0.8.2's sdist ships the package only, no tests (its upstream tests also need a memcached "
                 "server).",
    "async-upnp-client": "14 tests (test_ssdp.py only: the sdist's other 9 modules import tests/conftest.py or "
                         "tests/common.py, not shipped), all pass plainly; the 1 async test "
                         "(test_ssdp_protocol_handles_broken_headers) explored and closed by its zero schedule, "
                         "green; the 13 sync ran no loop. explore/plain 2.5x (2.1 s for 0.8 s).",
    "aiocoap": "79 tests (the 7 modules that import none of tests/fixtures.py, common.py, test_server.py: "
               "not shipped), 76 pass plainly; 2 skip themselves (TestOSCOAAsymmetric) and "
               "test_credentials::test_oscore_filebased fails plainly (FilesystemSecurityContext.LoadError: "
               "'Configuration key missing: sender-id'; not read), not counted. The 1 async test "
               "(test_timeoutdict, an IsolatedAsyncioTestCase over real-time sleeps of its timeouts) "
               "explored, 30 runs, green; the 75 others ran no loop. explore/plain 2.1x (3.6 s for 1.7 s).",
    "amqtt": "0.12.1's sdist ships the package only (amqtt/ and pyproject.toml): no tests directory.",
    "blacksheep": "Installed pure-Python (BLACKSHEEP_NO_EXTENSIONS=1: its sdists ship no .c files; see POOL). "
                  "1056 tests (the 29 modules that import neither tests/utils nor tests/examples, not "
                  "shipped), 673 pass plainly; 137 fail and 246 error plainly, not counted: those read fail "
                  "for lack of tests/files and tests/res data (FileNotFoundError, 'The given root path does "
                  "not exist') or with SharedRouterError ('the same router is used in more than one "
                  "Application object', the default router shared across tests; upstream's conftest.py, not "
                  "shipped, is not known here). 204 explored (202 closed by the zero schedule, 2 "
                  "uncontrolled), 262 runs, all no_failure; nothing listed apart. 3 red, one cause (READINGS: "
                  "explore runs tear down the module fixture that removes tests/.out, under the session's own "
                  "instance). Not explored: 243 'its setup failed in its plain run' and 130 'it failed in its "
                  "plain run' (right: they did not pass plainly), and 8 async tests that passed plainly, "
                  "'not explored: cannot collect tests/test_files_serving.py (5) / tests/test_responses.py "
                  "(3): ModuleNotFoundError: No module named tests' -- plain pytest collects and passes them "
                  "(python -m pytest puts the suite's directory on sys.path; test_responses.py imports "
                  "tests.test_files_serving; test_files_serving.py calls get_resource_file_path('tests', ...) at "
                  "import, which imports the package tests): 8 tests the plugin could have explored and did "
                  "not. The plugin runs its collection with cwd = pytest's rootdir (python/affidavit/"
                  "pytest_plugin.py: cwd=config.rootpath), here the sources' directory where this script "
                  "writes pytest.ini, one level above the suite directory the session was started in and "
                  "put on sys.path; checked outside the record: plain pytest started from that rootdir fails "
                  "to collect test_files_serving.py the same way. A suite with its own pytest configuration "
                  "(rootdir = its directory) would not meet this; a session started below its rootdir "
                  "would. "
                  "explore/plain 2.2x (38 s for 17.6 s).",
    "anyio": "The first 5 test files (tests/streams/test_buffered, test_file, test_memory, test_stapled, "
             "test_text: the restriction was set before any session, on an estimate of the whole suite's "
             "explore time that blacksheep's and this session's speed later showed too high). 250 tests "
             "(each on asyncio, asyncio+uvloop and trio), all pass plainly. The 82 asyncio cases explored "
             "(closure 51 closed, 17 slot, 14 uncontrolled), 981 runs, all no_failure; nothing red or listed "
             "apart. Not explored: 82 asyncio+uvloop cases, 'the test brings its own loop class uvloop.Loop' "
             "(right: anyio's loop_factory), and 81 trio cases, 'the test ran no asyncio event loop' (right); "
             "5 sync tests ran no loop. explore/plain 7.0x (50.7 s for 7.2 s).",
    "starlette": "The whole suite: 1416 tests, 1408 pass plainly; 6 fail plainly, not counted "
                 "(test_request_headers and test_websocket_headers [asyncio, trio]: the headers dict differs "
                 "from the expected -- not read further; test_staticfiles_with_invalid_dir_permissions_returns_"
                 "401 [asyncio, trio]: 200 == 401, chmod does not deny root), 2 xfail. 80 async tests explored "
                 "(closure 36 closed, 36 uncontrolled, 4 clock_read, 3 slot, 1 random), 1356 runs: 61 "
                 "no_failure and 19 timing_sensitive (listed apart, green: test_responses' file/streaming "
                 "response cancellation and disconnect cases, each naming the test's own anyio.fail_after / "
                 "move_on_after timer of 1 s or 5 s); nothing red, nothing unconfirmed or abstained. Not "
                 "explored: 533 sync tests through TestClient, 'the test's coroutines run on a loop in another "
                 "thread (a library's or its own), on real time' (right: anyio's blocking portal), and 76 trio "
                 "cases, 'the test ran no asyncio event loop' (right). The explore session took 1147 s for a "
                 "12.3 s suite (93x) on an idle machine (wt-test's run had ended; load ~0.1 during it): its "
                 "workers used ~1% CPU, and one py-spy dump of a run showed the main thread idle in "
                 "BaseEventLoop.run_forever under anyio's TestRunner.run_test while an 'AnyIO worker thread' "
                 "waited on its queue. No run hung (0 hang outcomes); the JUnit times of the session add up to "
                 "10.7 s and the explore documents carry no durations, so which tests' runs waited, and for "
                 "what, is not established.",
    "websockets": "17.4's sdist ships src/websockets only (its tests directory is not in the sdist): no test "
                  "file.",
    "aiogithubapi": "25.5.0's sdist ships the package only (aiogithubapi/, pyproject.toml): no test file.",
    "hikari": "The whole suite: 3864 tests, 3770 pass plainly, 94 skip themselves (PyNacl / ZSTD not present, "
              "TODO). None explored: all 809 async tests that passed plainly are 'not explored: the test "
              "brings its own loop class asyncio.unix_events._UnixSelectorEventLoop under the event loop "
              "policy tests.hikari.TestingPolicy; the project sets the event loop policy "
              "tests.hikari.TestingPolicy'. tests/hikari/__init__.py, imported at collection, calls "
              "asyncio.set_event_loop_policy(TestingPolicy()), a DefaultEventLoopPolicy subclass whose only "
              "change is closing the old loop in set_event_loop: the policy the plugin installs is replaced, "
              "every loop is stock asyncio's. The second half of the reason is right; the first names "
              "asyncio's stock class as the test's own (misleading, as for unsync and mocket). 39 + 1 + 1 "
              "'pytest skipped it'; 7 'the test was not collected (no test of that node id)' and 100 keys in "
              "missing_under_explore: the suite's parametrize ids are repr() of Mock objects (its "
              "tests/hikari/__init__.py sets ids=repr), which carry the object's address, so node ids differ "
              "between sessions and between the session and the plugin's own collection -- the suite's "
              "unstable ids, not lost tests. Nothing red or listed apart. explore/plain 3.3x (42 s for 12.8 "
              "s: the cost of looking at 809 tests it then declines).",
    "looptime": "16 of the 18 reds are under the zero schedule (a difference between the controlled loop and "
                "stock asyncio, never a race); the explore session took 7.7 min for a 6.6 s suite.",
}


# Each record's own header note and pool range (the `after` record: entries 1-9).
RECORD_NOTES: Dict[str, str] = {
    "after": "Ratios are one session each, on a 2-core machine another session was also "
             "using (its make test ran during aiorun's and pyleak's sessions): first-contact "
             "figures, not medians. `commit` is the branch's head when this record was last "
             "written; src/ and python/ are those of 952efa8 throughout.",
    "first_contact_3": "The third first contact: POOL.md entries 10-13 in order, met at `commit` (src/ and "
                       "python/ those of main 9f129d1; bench/first_contact.py as committed with this record, "
                       "but for aresponses' --deselect spelling, fixed after the run: each suite's args here "
                       "are those its sessions ran with), "
                       "each suite in its own venv (build/bench-env/fc/NAME). Ratios are one session each "
                       "(plain, inactive, explore in that order), on a 2-core machine: first-contact figures, "
                       "not medians. Red tests' `why` written by hand after the run (READINGS).",
    "first_contact_4": "The fourth first contact: POOL.md entries 14-20 in order, met at `commit` (src/ and "
                       "python/ those of main 50c7bbc), each suite in its own venv (build/bench-env/fc/NAME); "
                       "written by --retally from the kept sessions (build/bench-env/fc/NAME/sessions.json), "
                       "so `date` and `machine` are the retally's: machine_before beside each suite is the "
                       "load when its sessions began. Before each suite's sessions the script waited while "
                       "another test run of /work/wt-test was going, at most 40 minutes in all: it waited "
                       "35 min before aiounittest (those runs then ended; the others began at load 0.4-2.6 "
                       "with none going). A first attempt (the brief's pgrep pattern, which does not match "
                       "that worktree's relative '.venv/bin/python -m pytest') ran aiounittest's three "
                       "sessions at load ~8 without waiting (explore: 9 explored, 0 red, 2 not explored, "
                       "4.4 s) and was stopped during aiosmtplib's; the sessions recorded here are the second "
                       "attempt's. The fifth suite that passes plainly, aiocron (entry 21, aiocron==2.1: 9 "
                       "sync tests, 9 pass plainly in 392 s in a check outside the record, each waiting for "
                       "the next whole minute of a '* * * * *' crontab), was not met: the run was stopped "
                       "while it waited for another wt-test run, at the brief's time limit. Ratios are one "
                       "session each (plain, inactive, explore in that order), on a 2-core machine: "
                       "first-contact figures, not medians. Red tests' `why` written by hand after the run "
                       "(READINGS).",
    "first_contact_5": "The fifth first contact: POOL.md entries 22-28 in order, met at `commit` (src/ and "
                       "python/ those of main 317f167), each suite in its own venv (build/bench-env/fc/NAME), "
                       "by two invocations (--only aiosqlite,aiohttp-session,async-asgi-testclient,"
                       "sse-starlette,aiomcache, then --only async-upnp-client,aiocoap: entries 24 and 26 "
                       "ship no test file) and a --retally for the readings; `date` and `machine` are those "
                       "of the second invocation's start (machine_before beside each suite is the load when "
                       "its sessions began). Before aiosqlite's sessions the script waited 11 min for a "
                       "wt-test run to end; the others began with none going. The sdists of sse-starlette, "
                       "async-upnp-client and aiocoap ship their tests/test_*.py without the conftest / "
                       "helper modules / data they import: the modules that cannot be collected are left "
                       "out by the args (see POOL), the rest run as they came. run_suite now counts the "
                       "files an entry's args name when no file is named test_*.py (aiosqlite's smoke.py); "
                       "nothing else in the script changed. Ratios are one session each (plain, inactive, "
                       "explore in that order), on a 2-core machine: first-contact figures, not medians. "
                       "Red tests' `why` written by hand after the run (READINGS), from replays with "
                       "--events outside the record.",
    "first_contact_6": "The sixth first contact: POOL.md entries 29-35 in order (the list ran out with four suites "
                       "whose tests pass plainly: amqtt, websockets and aiogithubapi ship no test file), met at "
                       "`commit` (the fc6 branch head when the record was last written; src/ and python/ those of "
                       "main ed1b835, unchanged), each suite in its "
                       "own venv (build/bench-env/fc/NAME), by one invocation per suite (--only amqtt,blacksheep; "
                       "anyio; starlette; hikari; websockets,aiogithubapi) and a --retally --only of all seven for "
                       "the readings; `date` and `machine` are those of the last invocation (websockets,aiogithubapi), "
                       "machine_before beside each suite is the load when its sessions began. Each invocation ran "
                       "main() from a wrapper that set WAIT_MOST_S = 0 (no other change): another person's long "
                       "test run of /work/wt-test (pytest -n 2 and an --affidavit-explore session) was going when "
                       "blacksheep's and anyio's sessions began (machine_before: other_runs_at_start 3 and 2, "
                       "load 5.8 and 3.4) and the brief asked to run under it; it had ended before starlette's and "
                       "hikari's (load 0.7 and 0.0). blacksheep was installed with BLACKSHEEP_NO_EXTENSIONS=1 "
                       "(its sdist ships no .c files; see POOL). anyio ran its first 5 test files only, a "
                       "restriction set before any session on a too-high estimate of its explore time; starlette "
                       "and hikari ran whole. Ratios are one session each (plain, inactive, explore in that "
                       "order), on a 2-core machine, blacksheep's and anyio's under that load: first-contact "
                       "figures, not medians. Red tests' `why` written by hand after the run (READINGS), from "
                       "the test source and checks outside the record.",
}
RECORD_POOL: Dict[str, str] = {
    "first_contact_6": "/work/shared/realworld/POOL.md, entries 29-35 in order, meant to run until five suites whose "
                       "tests pass plainly without a network service; the list ran out at four: blacksheep, "
                       "anyio, starlette, hikari (amqtt, websockets and aiogithubapi skipped: their newest sdists "
                       "ship no test file)",
    "first_contact_3": "/work/shared/realworld/POOL.md, entries 10-13 in order, until three suites whose "
                       "tests pass plainly without a network service: asyncio-dgram, aresponses, mocket "
                       "(aioprometheus skipped: no sdist installs on Python 3.11)",
    "first_contact_4": "/work/shared/realworld/POOL.md, entries 14-20 in order, meant to run until five suites "
                       "whose tests pass plainly without a network service; four met: aiounittest, aiosmtplib, "
                       "aiofile, stamina (asyncinotify, aioprocessing and backoff skipped: their newest sdists "
                       "ship no test file); the fifth, aiocron (entry 21), not run (see note)",
    "first_contact_5": "/work/shared/realworld/POOL.md, entries 22-28 in order, until five suites whose tests "
                       "pass plainly without a network service: aiosqlite, aiohttp-session, sse-starlette, "
                       "async-upnp-client, aiocoap (async-asgi-testclient and aiomcache skipped: their newest "
                       "sdists ship no test file)",
}


def log(msg: str) -> None:
    print(f"first_contact: {msg}", file=sys.stderr, flush=True)


def use(name: str) -> None:
    """bench/suites.py's helpers, pointed at this suite's own venv and source directory."""
    suites.ENV = os.path.join(BASE, name, "venv")
    suites.SRC = os.path.join(BASE, name, "src")
    suites.LINK = os.path.join(BASE, "affidavit-link")


def fetch(s: Dict[str, Any]) -> str:
    """The sdist, unpacked under the suite's source directory; its directory."""
    os.makedirs(suites.SRC, exist_ok=True)
    if not glob.glob(os.path.join(suites.SRC, "*.tar.gz")):
        suites.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                    "--no-binary", ":all:", s["pin"], "-d", suites.SRC])
        for sdist in glob.glob(os.path.join(suites.SRC, "*.tar.gz")):
            suites.tarfile.open(sdist).extractall(suites.SRC)
    # pytest's search for a configuration file stops here, not in this repository's pyproject.toml
    with open(os.path.join(suites.SRC, "pytest.ini"), "w", encoding="utf-8") as f:
        f.write("[pytest]\n")
    return suites.suite_dir(s)


def test_files(d: str) -> List[str]:
    found = [os.path.relpath(p, d) for p in glob.glob(os.path.join(d, "**", "*.py"), recursive=True)
             if os.path.basename(p).startswith("test_") or os.path.basename(p).endswith("_test.py")]
    return sorted(found)


def install(s: Dict[str, Any], engine: str) -> str:
    py = os.path.join(suites.ENV, "bin", "python")
    want = json.dumps([open(suites.REQ, encoding="utf-8").read(), s["pin"], s.get("extras", [])])
    stamp = os.path.join(suites.ENV, ".stamp")
    if not (os.path.exists(stamp) and open(stamp, encoding="utf-8").read() == want):
        venv_py = os.path.join(os.path.dirname(engine), "python")
        base = suites.run([venv_py, "-c", "import sys; print(sys._base_executable)"]).stdout.strip()
        shutil.rmtree(suites.ENV, ignore_errors=True)
        log(f"{s['name']}: creating {suites.ENV}")
        suites.run([base, "-m", "venv", suites.ENV])
        pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        suites.run(pip + ["-r", suites.REQ, *s.get("extras", [])])
        suites.run(pip + [suites.suite_dir(s)])
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(want)
    suites.link_affidavit(py, os.path.join(os.path.dirname(engine), "python"), engine)
    return py


def statuses(xml: str) -> Dict[str, str]:
    """JUnit key -> the status the plugin recorded for the test (explored, failure, not explored: ...)."""
    out: Dict[str, str] = {}
    if not os.path.exists(xml):
        return out
    for case in suites.ET.parse(xml).getroot().iter("testcase"):
        for prop in case.iter("property"):
            if prop.get("name") == PROP:
                out[f"{case.get('classname')}::{case.get('name')}"] = prop.get("value") or ""
    return out


def run_suite(s: Dict[str, Any], engine: str, explore: int) -> Dict[str, Any]:
    try:
        d = fetch(s)
    except subprocess.CalledProcessError as e:
        # no sdist of the pin builds here (pip download prepares its metadata)
        why = next((l.strip() for l in reversed(e.stderr.splitlines()) if "Error:" in l), "").strip()
        return {"pin": s["pin"], "skipped": f"pip download fails: the sdist does not build on Python 3.11 ({why})"}
    files = test_files(d)
    if not files:
        # a suite whose test modules are not named test_*.py (aiosqlite's aiosqlite/tests/smoke.py):
        # the files its args name
        files = [a for a in s.get("args", []) if a.endswith(".py") and os.path.isfile(os.path.join(d, a))]
    if not files:
        return {"pin": s["pin"], "skipped": "the sdist ships no test file (no test_*.py or *_test.py)"}
    # the suite's own switches (mocket's SKIP_TRUE_*, blacksheep's BLACKSHEEP_NO_EXTENSIONS), for its
    # install and its sessions only
    saved = dict(os.environ)
    os.environ.update(s.get("env", {}))
    try:
        py = install(s, engine)
        got: Dict[str, Any] = {"pin": s["pin"], "args": s["args"], "extras": s.get("extras", []), "test_files": files}
        if s.get("env"):
            got["env"] = s["env"]
        return sessions(s, py, explore, got)
    finally:
        os.environ.clear()
        os.environ.update(saved)


# another full test run on the same 2 cores (a pytest of /work/wt-test, the other worktree: its make
# test runs ".venv/bin/python -m pytest" from that directory, which the brief's
# `pgrep -f 'wt-test/.venv/bin/python -m pytest'` does not match, so the process's directory is read
# too): a suite's sessions wait for it to end, polled every 30 s, at most 40 minutes in all for one
# invocation (then they go on, and the record says so beside each suite)
OTHER = "/work/wt-test"
WAIT_MOST_S = 40 * 60
_waited = [0.0]


def other_runs() -> List[str]:
    found = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            args = open(os.path.join(d, "cmdline"), "rb").read().split(b"\0")
            cwd = os.readlink(os.path.join(d, "cwd"))
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args if a]
        line = " ".join(words)
        if ".venv/bin/python -m pytest" in line and (OTHER + "/" in line or cwd == OTHER or cwd.startswith(OTHER + "/")):
            found.append(f"{os.path.basename(d)}: {line[:120]}")
    return found


def wait_quiet(name: str, poll_s: int = 30) -> Dict[str, Any]:
    import time
    t0 = time.monotonic()
    seen = other_runs()
    while other_runs() and _waited[0] + time.monotonic() - t0 < WAIT_MOST_S:
        log(f"{name}: another test run is going ({len(other_runs())} pytest of {OTHER}); waiting")
        time.sleep(poll_s)
    waited = time.monotonic() - t0
    _waited[0] += waited
    return {"waited_s": round(waited, 1), "other_runs_at_start": len(seen), "other_runs_going": len(other_runs()),
            "loadavg": open("/proc/loadavg").read().split()[:3]}


def sessions(s: Dict[str, Any], py: str, explore: int, got: Dict[str, Any]) -> Dict[str, Any]:
    got["machine_before"] = wait_quiet(s["name"])
    for mode in ("plain", "inactive", "explore"):
        log(f"{s['name']}: {mode}")
        r = suites.session(py, s, mode, explore, f"fc-{mode}")
        r["statuses"] = statuses(os.path.join(ROOT, "build", "bench-env", f"junit-{s['name']}-fc-{mode}.xml"))
        got[mode] = r
        log(f"{s['name']}: {mode}: {r['wall_s']:.1f} s, exit {r['exit']}, {r['last_line']}")
    got["asyncs"] = suites.async_tests(py, s)
    got["freeze"] = suites.run([py, "-m", "pip", "freeze", "--exclude-editable"]).stdout.split()
    return got


def tally(name: str, got: Dict[str, Any]) -> Dict[str, Any]:
    if "skipped" in got:
        return {**got, **({"note": NOTES[name]} if name in NOTES else {})}
    plain, inactive, exp = got["plain"], got["inactive"], got["explore"]
    passed = sorted(k for k, v in plain["outcomes"].items() if v == "passed")
    if not passed:
        return {"pin": got["pin"], "skipped": f"no test passes plainly (plain session: {plain['last_line']})"}
    t = suites.tally(plain, inactive, exp, got["asyncs"])
    docs = {suites.key_of(d.get("nodeid", "")): d for d in exp["explore_docs"]}
    st = exp["statuses"]
    red = []
    for k in passed:
        if exp["outcomes"].get(k) not in ("failed", "error"):
            continue
        d = docs.get(k) or {}
        red.append({"test": k, "verdict": d.get("verdict") or ("failure" if d.get("found") else None),
                    "status": st.get(k), "failing_run": d.get("failing_run"), "runs": d.get("runs"),
                    "schedule": d.get("schedule"), "failure": (d.get("failure") or exp["failures"].get(k, ""))[:400],
                    "why": READINGS.get(name, {}).get(k, "not read yet")})
    apart: Dict[str, List[Dict[str, str]]] = {"timing_sensitive": [], "unconfirmed": [], "abstained": []}
    not_explored: Dict[str, List[str]] = {}
    for k, v in sorted(st.items()):
        if v.startswith("not explored: "):
            not_explored.setdefault(v[len("not explored: "):], []).append(k)
        elif v.startswith("timing_sensitive: "):
            apart["timing_sensitive"].append({"test": k, "why": v[len("timing_sensitive: "):]})
        elif v.startswith("unconfirmed: abstained: "):
            apart["abstained"].append({"test": k, "why": v[len("unconfirmed: abstained: "):]})
        elif v.startswith("unconfirmed: "):
            apart["unconfirmed"].append({"test": k, "why": v[len("unconfirmed: "):]})
    return {
        "pin": got["pin"], "args": got["args"], "extras": got["extras"],
        **({"env": got["env"]} if "env" in got else {}),
        "tests": t["tests"], "passed_plain": t["passed_plain"], "async_passed_plain": t["async_passed_plain"],
        "explored": t["explored"], "explore_verdicts": t["explore_verdicts"], "closure": t["closure"],
        "red": red, "listed_apart": apart,
        "not_explored": {r: {"count": len(ks), "tests": ks} for r, ks in not_explored.items()},
        # async tests that passed plainly with neither a status nor an explore result: must be empty
        "async_passed_without_status": sorted({suites.key_of(n) for n in got["asyncs"]} & set(passed) - set(st)),
        "missing_under_explore": t["missing_under_explore"], "internal_error": t["internal_error"],
        "summary_lines": t["summary_lines"],
        "plain_s": t["plain_s"], "inactive_s": t["inactive_s"], "explore_s": t["explore_s"],
        "explore_over_plain": t["explore_over_plain"], "inactive_over_plain": t["inactive_over_plain"],
        "runs": t["runs"], "exits": {m: got[m]["exit"] for m in ("plain", "inactive", "explore")},
        **({"machine_before": got["machine_before"]} if "machine_before" in got else {}),
        "note": NOTES.get(name, ""),
        "installed": got["freeze"],
    }


def commit() -> str:
    return suites.run(["git", "-C", ROOT, "rev-parse", "HEAD"]).stdout.strip()


def main(argv: List[str]) -> int:
    explore = 30
    only: Optional[List[str]] = None
    retally = False
    record = "after"
    engine = os.path.join(ROOT, ".venv", "bin", "affidavit")
    it = iter(argv)
    for a in it:
        if a == "--only":
            only = next(it).split(",")
        elif a == "--affidavit":
            engine = os.path.abspath(next(it))
        elif a == "--explore":
            explore = int(next(it))
        elif a == "--retally":
            retally = True
        elif a == "--record":
            record = next(it)
        else:
            print(f"usage: first_contact.py [--only NAME,...] [--affidavit PATH] [--explore N] [--retally] "
                  f"[--record KEY] (not {a!r})",
                  file=sys.stderr)
            return 2
    # the pool's rule: an entry already in bench/suites.py is skipped, unless named by --only or
    # re-tallied (the five this file met first are in SUITES since)
    known = set() if retally or only else {s["name"] for s in suites.SUITES}
    doc: Dict[str, Any] = {}
    if os.path.exists(OUT):
        with open(OUT, encoding="utf-8") as f:
            doc = json.load(f)
    after = doc.setdefault(record, {})
    # the header names the commit, date and machine of the run that wrote it: a record of suites met at
    # another commit (the `after` record: entries 1-9, src/ of 952efa8) keeps its own, so a later
    # contact is written under a record of its own (--record first_contact_3), not into `after`
    after["commit"] = commit()
    if not (retally and "machine" in after):  # a retally keeps the date and machine of the sessions
        after.update({"date": datetime.date.today().isoformat(), "explore": explore, "machine": suites.machine()})
    after["note"] = RECORD_NOTES.get(record, after.get("note", ""))
    if record in RECORD_POOL:
        after["pool"] = RECORD_POOL[record]
    res = after.setdefault("suites", {})
    for s in POOL:
        if s["name"] in known or (only and s["name"] not in only):
            continue
        use(s["name"])
        raw = os.path.join(BASE, s["name"], "sessions.json")
        if retally:
            if not os.path.exists(raw):
                continue
            with open(raw, encoding="utf-8") as f:
                got = json.load(f)
        else:
            got = run_suite(s, engine, explore)
            with open(raw, "w", encoding="utf-8") as f:
                json.dump(got, f)
        res[s["name"]] = tally(s["name"], got)
        r = res[s["name"]]
        if "skipped" in r:
            log(f"{s['name']}: skipped: {r['skipped']}")
        else:
            log(f"{s['name']}: {r['passed_plain']}/{r['tests']} pass plainly; {len(r['red'])} red under explore; "
                f"not explored {sum(v['count'] for v in r['not_explored'].values())}; "
                f"explore/plain {r['explore_over_plain']:.1f}x")
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
