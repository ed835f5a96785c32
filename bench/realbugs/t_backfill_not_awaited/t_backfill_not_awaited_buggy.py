"""A dashboard endpoint that links a chat slot to a Slack thread and backfills it in the background.

Paraphrased from kirodotdev/KiroCrew (see README.md): the endpoint starts the backfill as a
fire-and-forget task and answers at once; the test support below is what the suite had before the
fix: the test client's shutdown, which does not wait for the backfill.
"""

import asyncio
import random


class FakeSlack:
    def __init__(self) -> None:
        self.posts: list = []

    async def history(self, channel: str, thread_ts: str) -> list:
        await asyncio.sleep(random.uniform(0, 0.002))
        return [f"{thread_ts}.{i}" for i in range(2)]

    async def post_blocks(self, channel: str, blocks: list) -> None:
        await asyncio.sleep(random.uniform(0, 0.001))
        self.posts.append((channel, blocks))


class DashboardState:
    def __init__(self, slack: FakeSlack) -> None:
        self.slack_client = slack
        self.links: dict = {}
        self._background_tasks: set = set()


async def drain_slack_backfill(state: DashboardState, slot: str, channel: str, thread_ts: str) -> None:
    replies = await state.slack_client.history(channel, thread_ts)
    blocks = [{"type": "live_control", "slot": slot, "replies": len(replies)}]
    await state.slack_client.post_blocks(channel, blocks)


async def api_chat_slot_slack_link(state: DashboardState, slot: str, channel: str, thread_ts: str) -> dict:
    await asyncio.sleep(random.uniform(0, 0.001))  # the link is persisted
    state.links[slot] = (channel, thread_ts)
    task = asyncio.create_task(drain_slack_backfill(state, slot, channel, thread_ts))
    state._background_tasks.add(task)
    task.add_done_callback(state._background_tasks.discard)
    return {"status": 200, "slot": slot}


async def drain_background_tasks(state: DashboardState) -> None:
    """Test support as it was before the fix: the test client and server shutting down, which
    takes a moment, and usually (not always) long enough for the backfill."""
    await asyncio.sleep(random.uniform(0, 0.008))
