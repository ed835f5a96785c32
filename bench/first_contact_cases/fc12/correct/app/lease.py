"""A lease lock kept in a store: CAS on a record {owner, expires}, renewed by a background task."""
import asyncio

from .logs import get_logger

log = get_logger("app.lease")


class LeaseTimeout(TimeoutError):
    pass


class LeaseLost(RuntimeError):
    pass


class LeaseLock:
    def __init__(self, store, name, owner, ttl=1.0, clock=None, poll=None, renew_every=None):
        self.store = store
        self.key = f"lease:{name}"
        self.owner = owner
        self.ttl = ttl
        self._clock = clock
        self.poll = poll if poll is not None else ttl / 4
        self.renew_every = renew_every if renew_every is not None else ttl / 3
        self._record = None
        self._renewer = None
        self.renewals = 0
        self.on_renew = None

    def now(self):
        return self._clock() if self._clock else asyncio.get_running_loop().time()

    @property
    def held(self):
        return self._record is not None

    async def try_acquire(self) -> bool:
        current = await self.store.get(self.key)
        if current is not None and current["owner"] != self.owner and current["expires"] > self.now():
            return False
        record = {"owner": self.owner, "expires": self.now() + self.ttl}
        if await self.store.compare_and_set(self.key, current, record):
            self._record = record
            log.debug("lease.acquired", key=self.key, owner=self.owner)
            return True
        return False

    async def acquire(self, timeout=None):
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not await self.try_acquire():
            if deadline is not None and loop.time() >= deadline:
                raise LeaseTimeout(f"{self.key} still held")
            await asyncio.sleep(self.poll)

    async def renew(self):
        if self._record is None:
            raise LeaseLost(f"{self.key} is not held")
        record = {"owner": self.owner, "expires": self.now() + self.ttl}
        if not await self.store.compare_and_set(self.key, self._record, record):
            self._record = None
            raise LeaseLost(f"{self.key} was taken over")
        self._record = record
        self.renewals += 1
        if self.on_renew is not None:
            self.on_renew(self)

    async def release(self) -> bool:
        record, self._record = self._record, None
        if record is None:
            return False
        return await self.store.compare_and_set(self.key, record, None)

    async def _renew_loop(self):
        while True:
            await asyncio.sleep(self.renew_every)
            try:
                await self.renew()
            except LeaseLost:
                log.warning("lease.lost", key=self.key, owner=self.owner)
                return

    async def __aenter__(self):
        await self.acquire()
        self._renewer = asyncio.create_task(self._renew_loop(), name=f"renew:{self.key}")
        return self

    async def __aexit__(self, *exc):
        renewer, self._renewer = self._renewer, None
        renewer.cancel()
        try:
            await renewer
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                raise
        await self.release()
        return False
