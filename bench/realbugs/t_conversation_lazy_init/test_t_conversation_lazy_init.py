"""Two agent turns written concurrently to a fresh session land in one conversation."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "check_then_act",
    "resource": "._session_id",
    "await": "t_conversation_lazy_init_buggy.py:41",
    "fix": "RECHECK",
    "tags": ["lazy_init"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_conversation_lazy_init_{request.param}")


async def run_turn(session, text):
    await asyncio.sleep(random.uniform(0, 0.02))  # the agent run that produced the items
    await session.add_items([{"role": "user", "content": text}])


@pytest.mark.asyncio
async def test_concurrent_first_writes_share_one_conversation(lib):
    api = lib.FakeConversationsAPI()
    session = lib.ConversationsSession(api)
    await asyncio.gather(run_turn(session, "hello"), run_turn(session, "are you there?"))
    items = await session.get_items()
    assert sorted(i["content"] for i in items) == ["are you there?", "hello"]
    assert len(api.created) == 1
