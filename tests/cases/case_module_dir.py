"""Input for tests/test_cannot_lie.py: a module-scoped fixture makes a directory in the project for
the module's tests and removes it at the module's end.

Under plain pytest it is made once, before the first test that asks for it, and removed after the
module's last test. A copy of one of its tests run while the session still holds it makes and
removes the directory itself, under the session: the next test's own run then finds no directory,
and the session's teardown fails to remove it again. A session fixture that makes its directory
with tmp_path_factory, after writing and removing a probe file beside the tests, leaves nothing
outside pytest's own temporary directories: nothing a copy would share.
"""

import asyncio
import os
import shutil
import uuid

import pytest

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".out")


@pytest.fixture(scope="module")
def out_dir():
    os.makedirs(OUT)
    yield OUT
    shutil.rmtree(OUT)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    probe = os.path.join(os.path.dirname(OUT), ".probe")  # can we write here? (as tempfile asks of /tmp)
    with open(probe, "w", encoding="utf-8") as f:
        f.write("x")
    os.remove(probe)
    made = tmp_path_factory.mktemp("data")
    (made / "seed.txt").write_text("seed", encoding="utf-8")
    return made


async def write(directory: str, text: str) -> str:
    path = os.path.join(directory, f"{uuid.uuid4()}.txt")
    await asyncio.sleep(0)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


@pytest.mark.asyncio
async def test_pytests_own_temporary_directory(data_dir) -> None:
    await asyncio.sleep(0)
    assert (data_dir / "seed.txt").read_text(encoding="utf-8") == "seed"


@pytest.mark.asyncio
async def test_write_one(out_dir: str) -> None:
    assert os.path.exists(await write(out_dir, "one"))


@pytest.mark.asyncio
async def test_write_two(out_dir: str) -> None:
    assert os.path.exists(await write(out_dir, "two"))
