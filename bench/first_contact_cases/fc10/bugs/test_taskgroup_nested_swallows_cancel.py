"""Model of https://github.com/python/cpython/issues/116720 ("Nested TaskGroup
can silently swallow cancellation request from parent TaskGroup"; background in
https://github.com/python/cpython/issues/95704).

A sync session runs a heartbeat in an outer TaskGroup and an optional prefetch
in an inner TaskGroup whose failure is tolerated with ``except*``. When the
heartbeat fails, the outer group cancels the body, which must not commit. On
3.11, if the prefetch failure and the outer cancellation reach the inner
group's ``__aexit__`` together, the inner group raises only its own
ExceptionGroup; ``except*`` handles it and the outer cancellation is gone, so
the body carries on and commits although the link is down.

Natural timing: the prefetch fails at 0.3 s and is handled; the heartbeat fails
at 0.8 s while the body sleeps before committing, so the body is cancelled.
Bad interleaving: both failures are processed in the same loop iteration (e.g.
the loop is busy from 0.05 s to 0.9 s).
"""
import asyncio

import pytest

PREFETCH_FAILS_AT = 0.3
HEARTBEAT_FAILS_AT = 0.8
COMMIT_DELAY = 1.0


class PrefetchError(Exception):
    pass


class LinkDown(Exception):
    pass


async def fail_after(delay, exc_type):
    await asyncio.sleep(delay)
    raise exc_type(f"failed after {delay}s")


async def sync_session(log):
    async with asyncio.TaskGroup() as outer:
        outer.create_task(fail_after(HEARTBEAT_FAILS_AT, LinkDown))
        try:
            async with asyncio.TaskGroup() as inner:
                inner.create_task(fail_after(PREFETCH_FAILS_AT, PrefetchError))
        except* PrefetchError:
            log.append("prefetch skipped")
        await asyncio.sleep(COMMIT_DELAY)
        log.append("committed")


@pytest.mark.asyncio
async def test_session_does_not_commit_after_link_down():
    log = []
    with pytest.raises(ExceptionGroup) as excinfo:
        await asyncio.wait_for(sync_session(log), 10)
    assert excinfo.group_contains(LinkDown)
    assert log == ["prefetch skipped"], f"body kept running after cancel: {log}"
