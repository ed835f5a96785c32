"""A document-store-backed task queue that creates its indexes lazily, on first use, unguarded.

Paraphrased from Chetan0e/Verath (see README.md): concurrent first `enqueue()` calls all find the
queue uninitialised and each runs the index creation.
"""

import asyncio
import random


class FakeDocumentStore:
    def __init__(self) -> None:
        self.index_builds: list = []
        self.documents: list = []

    async def create_index(self, collection: str, keys: tuple) -> str:
        self.index_builds.append((collection, keys))
        await asyncio.sleep(random.uniform(0.0005, 0.0015))  # the index build
        return "_".join(f"{k}_{d}" for k, d in keys)

    async def insert_one(self, collection: str, document: dict) -> None:
        await asyncio.sleep(random.uniform(0, 0.0005))
        self.documents.append((collection, document))


class TaskQueue:
    def __init__(self, store: FakeDocumentStore) -> None:
        self._store = store
        self._initialized = False

    async def _ensure_initialized(self) -> None:
        if self._initialized:
            return
        await self._store.create_index("tasks", (("status", 1), ("created_at", 1)))
        await self._store.create_index("tasks", (("lease_expires_at", 1),))
        self._initialized = True

    async def enqueue(self, kind: str, payload: dict) -> None:
        await self._ensure_initialized()
        await self._store.insert_one("tasks", {"kind": kind, "payload": payload, "status": "queued"})
