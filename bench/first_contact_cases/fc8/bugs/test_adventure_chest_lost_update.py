"""Model of the Red-DiscordBot "Adventure" cog losing treasure chests through
concurrent read-modify-write of a user's config entry.

Report: https://github.com/aikaterna/gobcog/issues/27
("Reward chests are lost if one was open when combat resolves").

Paraphrase of the report: if a user starts opening a chest shortly before an
adventure's combat resolves and the opening finishes afterwards, the chests
awarded by that combat disappear.  The maintainer confirmed it as a race
between two code paths writing the same config entry at the same time (each
read the user's treasure, awaited something, then wrote back its own copy) and
fixed it by putting an ``asyncio.Lock`` around the writes.

The model uses an async config store that returns copies (like Red's Config),
a ``loot`` command that reads the treasure, sends an "opening..." message and
writes the decremented copy back, and an adventure that, when its 80 ms timer
ends, reads the treasure and adds a reward chest.  Normally the chest is
opened (~10 ms) long before the adventure ends.  If sending the message takes
longer than that, the reward is written in between and then overwritten by the
stale copy: the reward chest is lost.
"""

import asyncio
import copy

import pytest

EXPECTED = {"cause": "lost_update", "resource": "Config user treasure [normal, rare, epic]"}

DB_LATENCY = 0.001
SEND_LATENCY = 0.01
ADVENTURE_LENGTH = 0.08


class ConfigValue:
    def __init__(self, store: dict, key: str) -> None:
        self._store = store
        self._key = key

    async def __call__(self):
        await asyncio.sleep(DB_LATENCY)
        return copy.deepcopy(self._store[self._key])

    async def set(self, value) -> None:
        await asyncio.sleep(DB_LATENCY)
        self._store[self._key] = copy.deepcopy(value)


class FakeContext:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def send(self, text: str) -> None:
        await asyncio.sleep(SEND_LATENCY)  # Discord API round trip
        self.messages.append(text)


async def loot(ctx: FakeContext, treasure: ConfigValue) -> None:
    chests = await treasure()
    if chests[0] < 1:
        await ctx.send("You have no normal chests.")
        return
    chests[0] -= 1
    await ctx.send("Opening a normal chest...")
    await treasure.set(chests)  # BUG: writes back a copy read before the await


async def adventure(ctx: FakeContext, treasure: ConfigValue) -> None:
    await asyncio.sleep(ADVENTURE_LENGTH)  # the adventure's timer
    chests = await treasure()
    chests[1] += 1  # combat won: award a rare chest
    await treasure.set(chests)
    ctx.messages.append("You found a rare chest!")


@pytest.mark.asyncio
async def test_reward_chest_survives_concurrent_loot():
    store = {"user:1234:treasure": [2, 0, 0]}
    treasure = ConfigValue(store, "user:1234:treasure")
    ctx = FakeContext()

    await asyncio.wait_for(asyncio.gather(adventure(ctx, treasure), loot(ctx, treasure)), timeout=10)

    assert "You found a rare chest!" in ctx.messages
    assert store["user:1234:treasure"] == [1, 1, 0]
