"""Model of https://github.com/python/cpython/issues/100133 (asyncio subprocess
stdout occasionally lost: the child's exit was handled before its last output
was read) in the consumer pattern of
https://github.com/python/cpython/issues/127661 (``while proc.returncode is None:
await proc.stdout.readline()``).

Model (stock asyncio): a job runner streams a child's log lines until
``returncode`` is set. The child prints two lines and exits 0.5 s later. Under
natural timing both lines are read long before the exit is noticed. If a loop
step takes long enough that the exit notification (from the child-watcher
thread) and the pipe data are handled in the same iteration, the exit callback
runs before the reader task resumes: the runner reads one line, sees a return
code and stops, and the second line is dropped.
"""
import asyncio
import sys

import pytest

CHILD = "import time; time.sleep(0.3); print('step 1 ok'); print('step 2 ok', flush=True); time.sleep(0.5)"


async def stream_job_log(proc):
    lines = []
    while proc.returncode is None:
        line = await proc.stdout.readline()
        if line:
            lines.append(line.decode().strip())
        else:
            await asyncio.sleep(0.01)
    return lines


@pytest.mark.asyncio
async def test_all_log_lines_are_collected():
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, stdout=asyncio.subprocess.PIPE
    )
    try:
        lines = await asyncio.wait_for(stream_job_log(proc), 30)
    finally:
        await proc.stdout.read()
        await proc.wait()
    assert proc.returncode == 0
    assert lines == ["step 1 ok", "step 2 ok"], f"log lines lost: {lines}"
