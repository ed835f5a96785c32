"""asyncio subprocesses running the real Python interpreter."""
import asyncio
import sys
import time

import pytest


@pytest.mark.asyncio
async def test_communicate_stdout():
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "print('hello from child')",
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=20)
    assert out.decode().strip() == "hello from child"
    assert proc.returncode == 0


@pytest.mark.asyncio
async def test_stdin_roundtrip_and_exit_code():
    code = "import sys; data=sys.stdin.read(); print(data.upper()); sys.exit(3)"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(b"abc"), timeout=20)
    assert out.decode().strip() == "ABC"
    assert proc.returncode == 3


@pytest.mark.asyncio
async def test_child_sleep_takes_real_time():
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; time.sleep(0.2); print('ok')",
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=20)
    assert out.strip() == b"ok"
    assert time.monotonic() - t0 >= 0.19


@pytest.mark.asyncio
async def test_streaming_lines_while_child_runs():
    code = "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.03)\n"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE,
    )
    lines = []
    while True:
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=20)
        if not line:
            break
        lines.append(int(line))
    assert await proc.wait() == 0
    assert lines == [0, 1, 2]
