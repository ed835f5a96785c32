"""Where a run's time goes in a warm worker: fork, copy-on-write faults, pytest's run protocol.

Usage: python bench/forkcost.py NODEID -> one JSON line. It prepares a worker exactly as
affidavit.worker does (collection, warm-up, gc.freeze, heap trim), then times, over 200 forks each:
fork + _exit; fork + the run protocol; and the protocol alone, timed inside the child.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import time
from typing import Any, Callable, Dict

import pytest

from affidavit import _runtime, worker
from affidavit.loop import install

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
        install()
        worker._warm_up()
        gc.collect()
        gc.freeze()
        _runtime.trim_heap()
        RESULT["fork_exit"] = forked(lambda: None)
        RESULT["fork_protocol"] = forked(lambda: worker._run_protocol(item) and None)
        # The protocol alone, timed inside fresh children (a second run in one process would not be
        # a fresh run: pytest-asyncio's session state is torn down after the first).
        r, w = os.pipe()

        def timed_protocol() -> None:
            t0 = time.perf_counter()
            worker._run_protocol(item)
            os.write(w, f"{time.perf_counter() - t0}\n".encode())

        forked(timed_protocol, 50)
        os.close(w)
        with os.fdopen(r) as f:
            times = [float(x) for x in f.read().split()]
        RESULT["protocol_in_child_ms"] = sum(times) / len(times) * 1e3
        with open("/proc/self/status") as f:
            RESULT["worker_rss_kb"] = next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
        return True


if __name__ == "__main__":
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1)
    os.dup2(devnull, 1)
    pytest.main([sys.argv[1], "-q", "-p", "no:cacheprovider", "--capture=sys"], plugins=[Probe()])
    os.dup2(saved, 1)
    print(json.dumps(RESULT))
