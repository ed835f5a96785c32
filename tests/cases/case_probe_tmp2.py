import asyncio
import pytest

@pytest.mark.asyncio
@pytest.mark.parametrize("x", [1, "a b", "é"])
async def test_p(x):
    await asyncio.sleep(0)
    assert x == 1

class TestC:
    @pytest.mark.asyncio
    async def test_m(self):
        await asyncio.sleep(0)
        assert False, "ünïcode \"quoted\" \\ back\ttab\x01ctl\nsecond line"

@pytest.mark.asyncio
async def test_surrogate():
    await asyncio.sleep(0)
    assert False, "bad \udcff surrogate"
