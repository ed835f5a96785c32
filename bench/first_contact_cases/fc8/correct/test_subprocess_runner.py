"""Subprocess management tests, modelled on a task runner / CI agent that
spawns helper processes with ``asyncio.create_subprocess_exec`` and talks to
them over pipes.

Children are always ``sys.executable -c ...`` so the tests are hermetic.  All
waits are bounded by generous ``wait_for`` timeouts and every child is reaped.
"""

import asyncio
import sys
import textwrap

import pytest

PY = sys.executable


async def run(*code_and_args: str, stdin: bytes | None = None, timeout: float = 30):
    proc = await asyncio.create_subprocess_exec(
        PY,
        "-c",
        *code_and_args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout=timeout)
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    return proc.returncode, out, err


@pytest.mark.asyncio
async def test_captures_stdout_and_exit_code():
    code, out, err = await run("import sys; print('hello'); sys.exit(3)")
    assert code == 3
    assert out.decode().strip() == "hello"
    assert err == b""


@pytest.mark.asyncio
async def test_stdin_is_echoed_back_uppercased():
    payload = "\n".join(f"line {i}" for i in range(100)).encode()
    code, out, _ = await run("import sys; sys.stdout.write(sys.stdin.read().upper())", stdin=payload)
    assert code == 0
    assert out == payload.upper()


@pytest.mark.asyncio
async def test_streaming_lines_as_they_are_produced():
    script = textwrap.dedent(
        """
        import sys, time
        for i in range(5):
            print(f"progress {i*25}", flush=True)
            time.sleep(0.01)
        print("done", flush=True)
        """
    )
    proc = await asyncio.create_subprocess_exec(PY, "-c", script, stdout=asyncio.subprocess.PIPE)
    lines = []
    try:
        async with asyncio.timeout(30):
            while line := await proc.stdout.readline():
                lines.append(line.decode().strip())
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert lines == [f"progress {i*25}" for i in range(5)] + ["done"]


@pytest.mark.asyncio
async def test_long_running_child_is_terminated_on_timeout():
    proc = await asyncio.create_subprocess_exec(
        PY, "-c", "import time; time.sleep(60)", stdout=asyncio.subprocess.DEVNULL
    )
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(proc.wait(), timeout=0.2)
    proc.terminate()
    rc = await asyncio.wait_for(proc.wait(), timeout=30)
    assert rc != 0  # killed by SIGTERM -> negative return code on POSIX
    assert proc.returncode == rc
