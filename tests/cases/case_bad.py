"""Input for tests/test_bad_input.py: tests that misbehave in every way a run must survive.

Every process these start inherits the environment, so the matrix finds any survivor by the
marker it puts there (AFD_BAD_MARKER).
"""

import asyncio
import os
import resource
import subprocess
import sys
import threading
import time

import pytest

import affidavit


def _sleeper(**kwargs) -> subprocess.Popen:
    return subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, **kwargs)


@pytest.mark.asyncio
async def test_os_exit_zero() -> None:
    await asyncio.sleep(0)
    os._exit(0)


@pytest.mark.asyncio
async def test_kills_its_worker() -> None:
    await asyncio.sleep(0)
    os.kill(os.getppid(), 9)
    await asyncio.sleep(3600)


@pytest.mark.asyncio
async def test_keyboard_interrupt() -> None:
    await asyncio.sleep(0)
    raise KeyboardInterrupt


@pytest.mark.asyncio
async def test_fork_bomb() -> None:
    """A bounded bomb: every process forks twice, six levels deep (127 processes), and the leaves
    sleep; the test returns at once and passes, leaving them all behind."""
    await asyncio.sleep(0)
    pid = os.fork()
    if pid == 0:
        for _ in range(6):
            if os.fork() == 0:
                continue
            if os.fork() == 0:
                continue
            break
        time.sleep(300)
        os._exit(0)


@pytest.mark.asyncio
async def test_fork_bomb_hangs() -> None:
    """The bomb again, with the test waiting for it: the run's time budget ends it."""
    await asyncio.sleep(0)
    for _ in range(6):
        if os.fork() == 0:
            continue
        if os.fork() == 0:
            continue
        break
    await asyncio.to_thread(time.sleep, 300)


@pytest.mark.asyncio
async def test_subprocess_left_running() -> None:
    _sleeper()
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_subprocess_in_its_own_session() -> None:
    """A child that leaves the run's process group: setsid, as a daemon does."""
    _sleeper(start_new_session=True)
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_double_fork_daemon() -> None:
    await asyncio.sleep(0)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(300)
        os._exit(0)
    os.wait()


@pytest.mark.asyncio
async def test_asyncio_subprocess_hangs() -> None:
    proc = await asyncio.create_subprocess_exec("sleep", "300")
    await proc.wait()


@pytest.mark.asyncio
async def test_thread_never_ends() -> None:
    """A non-daemon thread that runs forever: the run still ends when the test does."""
    threading.Thread(target=time.sleep, args=(3600,)).start()
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_thread_calls_back() -> None:
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    threading.Thread(target=lambda: loop.call_soon_threadsafe(done.set)).start()
    await done.wait()


@pytest.mark.asyncio
async def test_prints_megabytes() -> None:
    line = "x" * 1023 + "\n"
    for _ in range(8 * 1024):
        print(line, end="")
        sys.stderr.write(line)
    await asyncio.sleep(0)
    os.write(1, line.encode() * 8192)
    os.write(2, line.encode() * 8192)


@pytest.mark.asyncio
async def test_fails_with_megabytes() -> None:
    await asyncio.sleep(0)
    assert False, "y" * (4 << 20)


@pytest.mark.asyncio
async def test_huge_trace_events() -> None:
    """More events than the trace holds: a million recorded accesses."""
    await asyncio.sleep(0)
    for _ in range(1_000_000):
        affidavit.access("counter", "read")


@pytest.mark.asyncio
async def test_huge_trace_strings() -> None:
    """More text than the trace's string table holds: 100 resources with 60 KB names."""
    await asyncio.sleep(0)
    for i in range(100):
        affidavit.access(f"{i}:" + "r" * 60_000, "write")


@pytest.mark.asyncio
async def test_ping_pong_forever() -> None:
    """Two tasks that hand a token back and forth forever: only the step limit ends it."""
    q1: asyncio.Queue = asyncio.Queue()
    q2: asyncio.Queue = asyncio.Queue()

    async def bounce(inbox: asyncio.Queue, outbox: asyncio.Queue) -> None:
        while True:
            outbox.put_nowait(await inbox.get())

    q1.put_nowait(1)
    await asyncio.gather(bounce(q1, q2), bounce(q2, q1))


@pytest.mark.asyncio
async def test_eats_memory() -> None:
    """Holds 64 MB more at a time until the memory limit stops it (or 16 GB, without one)."""
    await asyncio.sleep(0)
    held = []
    for _ in range(256):
        held.append(bytearray(64 << 20))


@pytest.mark.asyncio
async def test_reports_its_limits() -> None:
    """Fails with the limits it runs under, so the matrix can read them."""
    await asyncio.sleep(0)
    limits = {
        name: resource.getrlimit(getattr(resource, name))
        for name in ("RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_CORE")
    }
    with open("/proc/self/status") as f:
        data_kb = next(int(line.split()[1]) for line in f if line.startswith("VmData:"))
    assert False, f"limits {limits} vmdata_kb {data_kb}"


@pytest.mark.asyncio
async def test_burns_cpu_past_its_limit() -> None:
    """Lowers its own CPU limit to one second and spins: SIGXCPU, as the run's own limit gives."""
    await asyncio.sleep(0)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (1, hard))
    while True:
        pass


@pytest.mark.asyncio
async def test_counts_runs() -> None:
    """Passes after a real 0.1 s, leaving a file per run in AFD_BAD_RUNS: the matrix interrupts
    an investigation once some runs are done."""
    await asyncio.sleep(0.1)
    with open(os.path.join(os.environ["AFD_BAD_RUNS"], f"run-{os.getpid()}"), "w"):
        pass


@pytest.mark.asyncio
async def test_hangs_with_a_subprocess() -> None:
    _sleeper()
    await asyncio.sleep(3600)
