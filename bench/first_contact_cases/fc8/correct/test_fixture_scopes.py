"""Fixture-scope tests, modelled on a database-backed service test suite: a
session-scoped sync fixture that writes a config file with
``tmp_path_factory``, a module-scoped async "server" that shares the module's
event loop, and function-scoped async fixtures with yield-teardown.

Module-scoped async fixtures and the tests that use them declare
``loop_scope="module"`` so they run on the same loop (pytest-asyncio >= 0.24).
"""

import asyncio
import json

import pytest
import pytest_asyncio


@pytest.fixture(scope="session")
def config_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("cfg")
    path = d / "settings.json"
    path.write_text(json.dumps({"pool_size": 3, "greeting": "hi"}))
    return path


@pytest.fixture
def settings(config_file):
    return json.loads(config_file.read_text())


class FakeDatabase:
    def __init__(self, pool_size: int) -> None:
        self.pool_size = pool_size
        self.rows: dict[int, str] = {}
        self.open = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._sem: asyncio.Semaphore | None = None

    async def connect(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._sem = asyncio.Semaphore(self.pool_size)
        await asyncio.sleep(0.01)
        self.open = True

    async def insert(self, key: int, value: str) -> None:
        assert self.open
        async with self._sem:
            await asyncio.sleep(0)
            self.rows[key] = value

    async def close(self) -> None:
        await asyncio.sleep(0)
        self.open = False


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def database(config_file):
    cfg = json.loads(config_file.read_text())
    db = FakeDatabase(cfg["pool_size"])
    await db.connect()
    yield db
    await db.close()
    assert not db.open


@pytest_asyncio.fixture(loop_scope="module")
async def clean_table(database):
    database.rows.clear()
    yield database
    database.rows.clear()


@pytest.mark.asyncio(loop_scope="module")
async def test_module_database_is_on_the_module_loop(database):
    assert database.open
    assert database.loop is asyncio.get_running_loop()


@pytest.mark.asyncio(loop_scope="module")
async def test_inserts_are_visible(clean_table):
    await asyncio.gather(*(clean_table.insert(i, f"v{i}") for i in range(10)))
    assert clean_table.rows == {i: f"v{i}" for i in range(10)}


def test_sync_test_can_use_session_fixture(settings, config_file):
    assert settings == {"pool_size": 3, "greeting": "hi"}
    assert config_file.name == "settings.json"


@pytest_asyncio.fixture
async def scratch_file(tmp_path):
    path = tmp_path / "scratch.txt"
    await asyncio.to_thread(path.write_text, "initial\n")
    yield path
    assert path.exists()


@pytest.mark.asyncio
async def test_function_scoped_async_fixture_with_tmp_path(scratch_file, settings):
    def append(line):
        with scratch_file.open("a") as fh:
            fh.write(line + "\n")

    await asyncio.gather(*(asyncio.to_thread(append, f"{settings['greeting']} {i}") for i in range(5)))
    lines = scratch_file.read_text().splitlines()
    assert lines[0] == "initial"
    assert sorted(lines[1:]) == [f"hi {i}" for i in range(5)]


@pytest_asyncio.fixture(loop_scope="class", scope="class")
async def counter():
    yield {"n": 0, "loop": asyncio.get_running_loop()}


class TestGroupedOnClassLoop:
    @pytest.mark.asyncio(loop_scope="class")
    async def test_first(self, counter):
        counter["n"] += 1
        assert counter["loop"] is asyncio.get_running_loop()

    @pytest.mark.asyncio(loop_scope="class")
    async def test_second_sees_shared_state(self, counter):
        counter["n"] += 1
        # 2 when the whole class runs, 1 when this test is selected alone.
        assert counter["n"] >= 1
        assert counter["loop"] is asyncio.get_running_loop()
