import asyncio
import pytest

@pytest.mark.asyncio
async def test_spin():
    while True:
        await asyncio.sleep(0)

@pytest.mark.asyncio
async def test_skip():
    await asyncio.sleep(0)
    pytest.skip("no")

@pytest.mark.asyncio
@pytest.mark.xfail(reason="x", strict=True)
async def test_xfail():
    await asyncio.sleep(0)
    assert False

@pytest.mark.asyncio
async def test_sysexit():
    await asyncio.sleep(0)
    raise SystemExit(3)

@pytest.mark.asyncio
async def test_kbint():
    await asyncio.sleep(0)
    raise KeyboardInterrupt

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

@pytest.mark.asyncio
async def test_fixture_err(broken):
    await asyncio.sleep(0)
