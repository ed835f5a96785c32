"""A TTL store whose records carry wall-clock timestamps.

``created_at`` is a timezone-aware ``datetime`` (UTC), ``expires_at`` a POSIX timestamp from
``time.time()`` (pluggable via ``now``), as records persisted or sent elsewhere would carry.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Awaitable, Callable, Dict, Optional

from . import stats


@dataclass
class TTLRecord:
    key: str
    value: Any
    created_at: datetime
    expires_at: float
    hits: int = field(default=0)

    def ttl_left(self, now: float) -> float:
        return self.expires_at - now

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "TTLRecord":
        return cls(d["key"], d["value"], datetime.fromisoformat(d["created_at"]), float(d["expires_at"]))


class TTLStore:
    def __init__(self, default_ttl: float = 60.0, *, now: Callable[[], float] = time.time) -> None:
        self.default_ttl = default_ttl
        self._now = now
        self._data: Dict[str, TTLRecord] = {}
        self._loading: Dict[str, asyncio.Future] = {}
        self._sweeper: Optional[asyncio.Task] = None
        self.swept = 0

    def __len__(self) -> int:
        return len(self._data)

    def _utc(self) -> datetime:
        return datetime.fromtimestamp(self._now(), timezone.utc)

    def set(self, key: str, value: Any, ttl: Optional[float] = None) -> TTLRecord:
        ttl = self.default_ttl if ttl is None else ttl
        now = self._now()
        rec = TTLRecord(key, value, datetime.fromtimestamp(now, timezone.utc), now + ttl)
        self._data[key] = rec
        return rec

    def record(self, key: str) -> Optional[TTLRecord]:
        rec = self._data.get(key)
        if rec is None:
            return None
        if self._now() >= rec.expires_at:
            del self._data[key]
            stats.incr("ttl.expired")
            return None
        return rec

    def get(self, key: str, default: Any = None) -> Any:
        rec = self.record(key)
        if rec is None:
            stats.incr("ttl.miss")
            return default
        rec.hits += 1
        stats.incr("ttl.hit")
        return rec.value

    def __contains__(self, key: str) -> bool:
        return self.record(key) is not None

    def touch(self, key: str, ttl: Optional[float] = None) -> bool:
        rec = self.record(key)
        if rec is None:
            return False
        rec.expires_at = self._now() + (self.default_ttl if ttl is None else ttl)
        return True

    def delete(self, key: str) -> bool:
        return self._data.pop(key, None) is not None

    def age(self, key: str) -> Optional[timedelta]:
        rec = self.record(key)
        return None if rec is None else self._utc() - rec.created_at

    def purge(self) -> int:
        now = self._now()
        dead = [k for k, r in self._data.items() if now >= r.expires_at]
        for k in dead:
            del self._data[k]
        self.swept += len(dead)
        return len(dead)

    async def get_or_load(self, key: str, loader: Callable[[], Awaitable[Any]],
                          ttl: Optional[float] = None) -> Any:
        """Return the cached value or load it once, however many callers ask concurrently."""
        rec = self.record(key)
        if rec is not None:
            rec.hits += 1
            return rec.value
        fut = self._loading.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._loading[key] = fut
            try:
                value = await loader()
            except BaseException as exc:
                self._loading.pop(key, None)
                if isinstance(exc, asyncio.CancelledError):
                    fut.cancel()
                else:
                    fut.set_exception(exc)
                    fut.exception()  # mark retrieved; waiters re-raise it
                raise
            self.set(key, value, ttl)
            self._loading.pop(key, None)
            fut.set_result(value)
            return value
        return await asyncio.shield(fut)

    # -- background sweeping -----------------------------------------------------------------
    def start_sweeper(self, interval: float) -> asyncio.Task:
        if self._sweeper is not None:
            raise RuntimeError("sweeper already running")

        async def sweep() -> None:
            while True:
                await asyncio.sleep(interval)
                self.purge()

        self._sweeper = asyncio.get_running_loop().create_task(sweep(), name="ttl-sweeper")
        return self._sweeper

    async def stop_sweeper(self) -> None:
        task, self._sweeper = self._sweeper, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():
                    raise
