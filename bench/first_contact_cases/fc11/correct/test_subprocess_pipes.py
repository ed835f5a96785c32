"""Driving helper processes over pipes, as build tools and language-server
clients do (pre-commit, tox, pylsp clients): ``create_subprocess_exec`` with
``PIPE``, ``communicate``, return codes, closing stdin to signal end of input, and
killing a child that would run too long.
"""
import asyncio
import signal
import sys

import pytest

pytestmark = pytest.mark.asyncio

PIPE = asyncio.subprocess.PIPE


async def run_py(code, *, stdin=None, **kw):
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdin=stdin, stdout=PIPE, stderr=PIPE, **kw
    )


async def test_communicate_with_input():
    proc = await run_py("import sys; sys.stdout.write(sys.stdin.read().upper())", stdin=PIPE)
    out, err = await asyncio.wait_for(proc.communicate(b"lint ok\n"), 60)
    assert out == b"LINT OK\n"
    assert err == b""
    assert proc.returncode == 0


async def test_stderr_and_exit_code():
    proc = await run_py("import sys; print('partial'); print('E501 line too long', file=sys.stderr); sys.exit(3)")
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert out.strip() == b"partial"
    assert b"E501" in err
    assert proc.returncode == 3
    assert await proc.wait() == 3


async def test_closing_stdin_ends_the_childs_input():
    code = "import sys\nn = 0\nfor line in sys.stdin:\n    n += 1\nprint(n)"
    proc = await run_py(code, stdin=PIPE)
    for i in range(100):
        proc.stdin.write(f"record {i}\n".encode())
    await proc.stdin.drain()
    proc.stdin.close()
    await proc.stdin.wait_closed()
    out = await asyncio.wait_for(proc.stdout.read(), 60)
    assert out.strip() == b"100"
    assert await asyncio.wait_for(proc.wait(), 60) == 0
    await proc.stderr.read()


async def test_kill_a_hung_child():
    proc = await run_py("import time; print('ready', flush=True); time.sleep(60)")
    assert await asyncio.wait_for(proc.stdout.readline(), 60) == b"ready\n"
    assert proc.returncode is None
    proc.kill()
    rc = await asyncio.wait_for(proc.wait(), 60)
    assert rc == -signal.SIGKILL
    assert proc.returncode == rc


async def test_parallel_children_results_by_key():
    async def square(n):
        proc = await run_py(f"print({n} * {n})")
        out, _ = await proc.communicate()
        return n, int(out), proc.returncode

    results = await asyncio.wait_for(asyncio.gather(*(square(n) for n in range(4))), 60)
    assert {n: (sq, rc) for n, sq, rc in results} == {n: (n * n, 0) for n in range(4)}
