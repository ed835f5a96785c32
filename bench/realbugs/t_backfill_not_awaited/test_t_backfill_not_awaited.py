"""Linking a slot to a Slack thread posts the live control into the thread."""

import importlib

import pytest

EXPECTED = {
    "cause": "order_violation",
    "resource": "FakeSlack#0.posts",
    "await": "test_t_backfill_not_awaited.py:27",
    "fix": "DRAIN_TASKS",
    "tags": ["background_task"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_backfill_not_awaited_{request.param}")


@pytest.mark.asyncio
async def test_link_posts_live_control(lib):
    slack = lib.FakeSlack()
    state = lib.DashboardState(slack)
    reply = await lib.api_chat_slot_slack_link(state, "s1", "C42", "1700000000.1")
    assert reply["status"] == 200
    await lib.drain_background_tasks(state)
    channel, blocks = slack.posts[-1]
    assert channel == "C42" and blocks[0]["type"] == "live_control"
