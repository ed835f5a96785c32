"""A conversation-backed session whose remote conversation is created lazily, on first use.

Paraphrased from openai/openai-agents-python (see README.md): two first operations that run
concurrently serialise the creation and re-check the id inside the lock (the real fix).
"""

import asyncio
import random


class FakeConversationsAPI:
    """The remote service: conversations and the items written to each."""

    def __init__(self) -> None:
        self.created: list = []
        self.items: dict = {}

    async def create(self, items: list) -> str:
        await asyncio.sleep(random.uniform(0.0003, 0.0015))  # the HTTP round trip
        conversation_id = f"conv_{len(self.created)}"
        self.created.append(conversation_id)
        self.items[conversation_id] = list(items)
        return conversation_id

    async def add(self, conversation_id: str, items: list) -> None:
        await asyncio.sleep(random.uniform(0, 0.001))
        self.items[conversation_id].extend(items)

    async def list(self, conversation_id: str) -> list:
        await asyncio.sleep(random.uniform(0, 0.0005))
        return list(self.items[conversation_id])


class ConversationsSession:
    def __init__(self, api: FakeConversationsAPI, conversation_id=None) -> None:
        self._api = api
        self._session_id = conversation_id
        self._session_id_lock = asyncio.Lock()

    async def _get_session_id(self) -> str:
        if self._session_id is not None:
            return self._session_id
        # The first operations serialise the creation; one that waited finds the id set.
        async with self._session_id_lock:
            if self._session_id is None:
                self._session_id = await self._api.create(items=[])
        return self._session_id

    async def add_items(self, items: list) -> None:
        session_id = await self._get_session_id()
        await self._api.add(session_id, items)

    async def get_items(self) -> list:
        session_id = await self._get_session_id()
        return await self._api.list(session_id)
