import asyncio
import logging

import pytest

from app import metrics
from app.config import ConfigError, Settings, load_settings
from app.logs import bind_request_id, get_logger, request_id


def test_defaults_under_the_test_environment():
    s = load_settings()
    assert s == Settings(env="test")


def test_settings_from_env(monkeypatch):
    monkeypatch.setenv("APP_WORKERS", "5")
    monkeypatch.setenv("APP_RETRY_BACKOFF", "0.2")
    s = load_settings()
    assert (s.workers, s.retry_backoff, s.max_retries) == (5, 0.2, 2)


@pytest.mark.parametrize("name,value", [("APP_WORKERS", "many"), ("APP_SHUTDOWN_GRACE", "-1")])
def test_bad_settings_are_rejected(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        load_settings()


def test_structured_record_format(caplog):
    get_logger("app.test").info("job.retry", id="job-1", delay=0.5, note="two words")
    (rec,) = [r for r in caplog.records if r.name == "app.test"]
    assert rec.getMessage() == 'job.retry delay=0.5 id=job-1 note="two words"'
    assert rec.event == "job.retry" and rec.levelno == logging.INFO


def test_request_id_bound_and_restored(caplog):
    log = get_logger("app.test")
    with bind_request_id("req-42"):
        log.warning("inside")
    log.warning("outside")
    rids = [(r.getMessage(), r.rid) for r in caplog.records if r.name == "app.test"]
    assert rids == [("inside", "req-42"), ("outside", "-")]


@pytest.mark.asyncio
async def test_request_ids_do_not_leak_between_tasks():
    seen = {}
    both_bound = asyncio.Barrier(2)

    async def handle(rid):
        with bind_request_id(rid):
            await both_bound.wait()
            seen[rid] = request_id.get()

    await asyncio.wait_for(asyncio.gather(handle("a"), handle("b")), 20)
    assert seen == {"a": "a", "b": "b"}
    assert request_id.get() == "-"


def test_debug_level_is_enabled_for_app_loggers():
    assert logging.getLogger("app.anything").isEnabledFor(logging.DEBUG)


@pytest.mark.parametrize("n", [1, 3])
def test_metrics_start_from_zero_in_every_test(n):
    assert metrics.snapshot() == {}
    metrics.incr("x", n)
    assert metrics.get("x") == n
