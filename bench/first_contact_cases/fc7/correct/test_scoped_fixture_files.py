"""Module-, class- and session-scoped fixtures that create files next to this test file."""
import asyncio
import shutil
from pathlib import Path

import pytest
import pytest_asyncio

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def session_dir():
    d = HERE / "_fc7_session_scratch"
    d.mkdir(exist_ok=True)
    (d / "created_by").write_text("session")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def module_file(session_dir):
    f = HERE / "_fc7_module_data.txt"
    f.write_text("line0\n")
    yield f
    f.unlink()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_async_file(session_dir):
    f = session_dir / "async_fixture.txt"
    await asyncio.sleep(0.01)
    f.write_text("async-ready")
    yield f
    await asyncio.sleep(0.01)
    f.unlink()


@pytest.mark.asyncio(loop_scope="module")
async def test_module_file_exists(module_file, module_async_file):
    await asyncio.sleep(0.01)
    assert module_file.read_text().startswith("line0")
    assert module_async_file.read_text() == "async-ready"


@pytest.mark.asyncio(loop_scope="module")
async def test_append_is_seen_by_later_tests(module_file):
    with module_file.open("a") as fh:
        fh.write("line1\n")
    await asyncio.sleep(0)
    assert module_file.read_text().splitlines() == ["line0", "line1"]


@pytest.fixture(scope="class")
def class_dir(session_dir):
    d = session_dir / "per_class"
    d.mkdir()
    yield d
    shutil.rmtree(d)


class TestClassScoped:
    @pytest.mark.asyncio
    async def test_write_in_class_dir(self, class_dir):
        p = class_dir / "a.txt"
        await asyncio.to_thread(p.write_text, "A")
        assert p.read_text() == "A"

    @pytest.mark.asyncio
    async def test_class_dir_persists_across_methods(self, class_dir):
        await asyncio.sleep(0.005)
        assert (class_dir / "a.txt").read_text() == "A"
        assert (class_dir.parent / "created_by").read_text() == "session"
