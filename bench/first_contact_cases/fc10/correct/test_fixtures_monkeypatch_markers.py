"""monkeypatch / tmp_path / parametrize / classes / markers / xfail / skip from
async tests, in the style of a settings-and-IO layer (pydantic-settings style
env config, a JSON state file written through asyncio.to_thread, a remote
fetch replaced by a fake).
"""
import asyncio
import json
import os
import sys

import pytest


DEFAULT_TIMEOUT = 5.0


async def fetch_remote_flags():
    raise RuntimeError("network access in tests")


async def load_settings():
    await asyncio.sleep(0)
    flags = await fetch_remote_flags()
    return {
        "url": os.environ.get("FC10_DB_URL", "sqlite://"),
        "timeout": float(os.environ.get("FC10_TIMEOUT", DEFAULT_TIMEOUT)),
        "flags": flags,
    }


async def save_state(path, state):
    data = json.dumps(state, sort_keys=True)
    await asyncio.to_thread(path.write_text, data)


async def load_state(path):
    return json.loads(await asyncio.to_thread(path.read_text))


@pytest.fixture
def fake_flags(monkeypatch):
    calls = []

    async def fake():
        calls.append(asyncio.current_task())
        await asyncio.sleep(0)
        return {"beta": True}

    monkeypatch.setattr(sys.modules[__name__], "fetch_remote_flags", fake)
    return calls


@pytest.mark.asyncio
async def test_env_and_patched_fetch(monkeypatch, fake_flags):
    monkeypatch.setenv("FC10_DB_URL", "postgres://test")
    monkeypatch.delenv("FC10_TIMEOUT", raising=False)
    settings = await asyncio.create_task(load_settings())
    assert settings == {"url": "postgres://test", "timeout": 5.0,
                        "flags": {"beta": True}}
    assert len(fake_flags) == 1


@pytest.mark.asyncio
async def test_patched_module_constant(monkeypatch, fake_flags):
    monkeypatch.setattr(sys.modules[__name__], "DEFAULT_TIMEOUT", 0.25)
    monkeypatch.delenv("FC10_TIMEOUT", raising=False)
    assert (await load_settings())["timeout"] == 0.25


@pytest.mark.asyncio
async def test_state_file_roundtrip_through_threads(tmp_path):
    path = tmp_path / "state" / "app.json"
    await asyncio.to_thread(path.parent.mkdir)
    await asyncio.gather(save_state(path, {"n": 1}))
    assert await load_state(path) == {"n": 1}
    others = [tmp_path / f"s{i}.json" for i in range(4)]
    await asyncio.gather(*(save_state(p, {"i": i}) for i, p in enumerate(others)))
    loaded = await asyncio.gather(*(load_state(p) for p in others))
    assert loaded == [{"i": i} for i in range(4)]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("env_value", "expected"),
    [("1.5", 1.5), ("30", 30.0), (None, 5.0)],
    ids=["fractional", "integer", "default"],
)
async def test_timeout_parsing(monkeypatch, fake_flags, env_value, expected):
    if env_value is None:
        monkeypatch.delenv("FC10_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("FC10_TIMEOUT", env_value)
    assert (await load_settings())["timeout"] == expected


@pytest.mark.usefixtures("fake_flags")
class TestSettingsClass:
    @pytest.mark.asyncio
    async def test_default_url(self, monkeypatch):
        monkeypatch.delenv("FC10_DB_URL", raising=False)
        assert (await load_settings())["url"] == "sqlite://"

    @pytest.mark.asyncio
    @pytest.mark.filterwarnings("error::RuntimeWarning")
    async def test_flags_are_fake(self):
        assert (await load_settings())["flags"] == {"beta": True}


@pytest.mark.asyncio
@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="a Queue is FIFO, never LIFO")
async def test_queue_is_lifo_expected_failure():
    q = asyncio.Queue()
    await q.put("first")
    await q.put("second")
    assert await q.get() == "second"


@pytest.mark.asyncio
async def test_skip_inside_async_test_after_an_await():
    await asyncio.sleep(0)
    if not hasattr(asyncio, "Barrier"):
        raise AssertionError("Python 3.11+ expected")
    pytest.skip("feature flag service not configured in this environment")
