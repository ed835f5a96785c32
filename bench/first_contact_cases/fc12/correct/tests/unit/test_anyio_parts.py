"""Components driven through anyio's pytest plugin and task groups (asyncio backend)."""
import anyio
import pytest

from app import metrics
from app.batcher import DataLoader
from app.breaker import CircuitBreaker
from app.broker import Broker
from app.cache import SingleFlight

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_single_flight_in_a_task_group():
    flight = SingleFlight()
    release = anyio.Event()
    results = []

    async def fetch():
        await release.wait()
        return 42

    async def caller():
        results.append(await flight.do("k", fetch))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(caller)
            while metrics.get("singleflight.shared") < 3:
                await anyio.sleep(0)
            release.set()
    assert results == [42] * 4 and metrics.get("singleflight.leader") == 1


async def test_loader_batches_task_group_callers():
    batches = []

    async def batch(keys):
        batches.append(sorted(keys))
        return [k + 1 for k in keys]

    loader = DataLoader(batch)
    futures = [loader.load(k) for k in range(4)]
    out = {}

    async def wait(i, fut):
        out[i] = await fut

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for i, fut in enumerate(futures):
                tg.start_soon(wait, i, fut)
    assert out == {0: 1, 1: 2, 2: 3, 3: 4} and batches == [[0, 1, 2, 3]]


async def test_fail_after_cancels_a_hung_breaker_call():
    breaker = CircuitBreaker(failure_threshold=1)

    async def hang():
        await anyio.sleep(3600)

    t0 = anyio.current_time()
    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.2):
            await breaker.call(hang)
    assert 0.19 <= anyio.current_time() - t0 < 10
    assert breaker.state == "closed" and breaker.failures == 0


async def test_broker_consumer_in_a_task_group():
    broker = Broker()
    got = []

    async def consumer(task_status=anyio.TASK_STATUS_IGNORED):
        with broker.subscribe("metrics.*") as sub:
            task_status.started()
            for _ in range(3):
                got.append(await sub.get())

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            await tg.start(consumer)
            for i in range(3):
                broker.publish(f"metrics.m{i}", i)
    assert got == [("metrics.m0", 0), ("metrics.m1", 1), ("metrics.m2", 2)]


async def test_move_on_after_around_broker_get():
    broker = Broker()
    with broker.subscribe("quiet") as sub:
        t0 = anyio.current_time()
        with anyio.move_on_after(0.1) as scope:
            await sub.get()
    assert scope.cancelled_caught
    assert 0.09 <= anyio.current_time() - t0 < 10
