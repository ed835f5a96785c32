"""Where a run's time goes in a warm worker: fork, copy-on-write faults, pytest's run protocol.

Usage: python bench/forkcost.py NODEID -> one JSON line. It prepares a worker exactly as
affidavit.worker does (arenas on huge pages unless AFFIDAVIT_WORKER_HEAP=0, collection, warm-up,
gc.freeze, heap trim), then times, over 200 forks each: fork + _exit; fork + the run protocol (the
pytest_runtest_protocol hook, as the worker calls it); and the protocol alone, timed inside the
child. Python's os.fork runs the interpreter's after-fork hooks in the parent while the child
lives, which the fork server does not, so the worker's own forks cost a little less than these.
"""

from __future__ import annotations

import os

os.environ.setdefault("AFFIDAVIT_WORKER_HEAP", "1")  # as the engine starts its workers
from affidavit import _runtime  # noqa: E402  (first: its init places the arenas)

import gc  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Any, Callable, Dict  # noqa: E402

import pytest  # noqa: E402
from _pytest.runner import get_reraise_exceptions  # noqa: E402

from affidavit import worker  # noqa: E402
from affidavit.loop import install  # noqa: E402

RESULT: Dict[str, Any] = {}


def forked(fn: Callable[[], None], n: int = 200) -> Dict[str, float]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            fn()
            os._exit(0)
        os.waitpid(pid, 0)
    wall = (time.perf_counter() - t0) / n
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall_ms": wall * 1e3,
        "child_user_ms": (r1.ru_utime - r0.ru_utime) / n * 1e3,
        "child_sys_ms": (r1.ru_stime - r0.ru_stime) / n * 1e3,
        "child_page_faults": (r1.ru_minflt - r0.ru_minflt) / n,
    }


class Probe:
    def pytest_runtestloop(self, session: Any) -> bool:
        item = session.items[0]
        server = worker._Server(item.nodeid, -1, -1)
        server.reraise = get_reraise_exceptions(session.config)
        session.config.pluginmanager.register(server, "affidavit-worker")

        def protocol() -> None:
            item.ihook.pytest_runtest_protocol(item=item, nextitem=None)

        install()
        worker._warm_up()
        gc.collect()
        gc.freeze()
        RESULT["huge_pages_kb"] = _runtime.trim_heap()
        RESULT["fork_exit"] = forked(lambda: None)
        RESULT["fork_protocol"] = forked(protocol)
        # The protocol alone, timed inside fresh children (a second run in one process would not be
        # a fresh run: pytest-asyncio's session state is torn down after the first).
        r, w = os.pipe()

        def timed_protocol() -> None:
            t0 = time.perf_counter()
            protocol()
            os.write(w, f"{time.perf_counter() - t0}\n".encode())

        forked(timed_protocol, 50)
        os.close(w)
        with os.fdopen(r) as f:
            times = [float(x) for x in f.read().split()]
        RESULT["protocol_in_child_ms"] = sum(times) / len(times) * 1e3
        with open("/proc/self/status") as f:
            RESULT["worker_rss_kb"] = next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
        with open("/proc/self/smaps_rollup") as f:
            RESULT["worker_anon_huge_kb"] = next((int(l.split()[1]) for l in f if l.startswith("AnonHugePages")), 0)
        return True


if __name__ == "__main__":
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1)
    os.dup2(devnull, 1)
    pytest.main([sys.argv[1], "-q", "-p", "no:cacheprovider", "--capture=sys"], plugins=[Probe()])
    os.dup2(saved, 1)
    print(json.dumps(RESULT))
