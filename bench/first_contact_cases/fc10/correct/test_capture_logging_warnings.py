"""caplog / capsys / recwarn / pytest.warns from async tests, in the style of a
service whose background tasks log and print (a bot framework, an ASGI server's
access log, a library deprecating an old keyword).
"""
import asyncio
import logging
import warnings

import pytest

log = logging.getLogger("fc10.worker")


async def process(job_id, fail=False):
    log.info("job %s started", job_id)
    await asyncio.sleep(0.001)
    if fail:
        log.error("job %s failed", job_id)
        return False
    log.debug("job %s internals", job_id)
    log.info("job %s finished", job_id)
    return True


async def fetch(url, *, verify_ssl=None):
    if verify_ssl is not None:
        warnings.warn("verify_ssl is deprecated, use ssl=", DeprecationWarning,
                      stacklevel=2)
    await asyncio.sleep(0)
    return url


@pytest.mark.asyncio
async def test_caplog_collects_records_from_concurrent_tasks(caplog):
    caplog.set_level(logging.INFO, logger="fc10.worker")
    results = await asyncio.gather(process(1), process(2, fail=True), process(3))
    assert results == [True, False, True]
    # only this logger: in debug mode asyncio may add "slow callback" records
    records = [r for r in caplog.records if r.name == "fc10.worker"]
    msgs = {r.getMessage() for r in records}
    assert msgs == {"job 1 started", "job 2 started", "job 3 started",
                    "job 1 finished", "job 3 finished", "job 2 failed"}
    assert not any("internals" in m for m in msgs)      # DEBUG filtered out
    # within one task the order is program order
    mine = [r.getMessage() for r in records if "job 1" in r.getMessage()]
    assert mine == ["job 1 started", "job 1 finished"]
    errors = [r for r in records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in errors] == ["job 2 failed"]


@pytest.mark.asyncio
async def test_caplog_at_level_and_records_from_a_thread(caplog):
    with caplog.at_level(logging.WARNING, logger="fc10.worker"):
        await process(10)                                   # INFO: not captured
        await asyncio.to_thread(log.warning, "disk %d%% full", 91)
    records = [r for r in caplog.records if r.name == "fc10.worker"]
    assert [r.getMessage() for r in records] == ["disk 91% full"]
    assert records[0].threadName != "MainThread"


@pytest.mark.asyncio
async def test_capsys_sees_prints_from_tasks_and_callbacks(capsys):
    async def announce(name):
        await asyncio.sleep(0.001)
        print(f"task {name} ready")

    await asyncio.gather(announce("a"), announce("b"))
    loop = asyncio.get_running_loop()
    fired = asyncio.Event()
    loop.call_soon(lambda: (print("callback ran"), fired.set()))
    await asyncio.wait_for(fired.wait(), 10)
    out, err = capsys.readouterr()
    assert sorted(out.splitlines()) == ["callback ran", "task a ready", "task b ready"]
    assert "task a ready" not in err


@pytest.mark.asyncio
async def test_recwarn_records_deprecation_from_a_task(recwarn):
    warnings.simplefilter("always")
    await asyncio.create_task(fetch("https://a", verify_ssl=False))
    await fetch("https://b")                      # no warning
    assert len(recwarn) == 1
    w = recwarn.pop(DeprecationWarning)
    assert "verify_ssl is deprecated" in str(w.message)


@pytest.mark.asyncio
async def test_pytest_warns_around_awaits():
    with pytest.warns(DeprecationWarning, match="use ssl="):
        assert await fetch("https://c", verify_ssl=True) == "https://c"
    with pytest.warns(UserWarning, match="slow consumer"):
        await asyncio.sleep(0)
        warnings.warn("slow consumer detected", UserWarning)
