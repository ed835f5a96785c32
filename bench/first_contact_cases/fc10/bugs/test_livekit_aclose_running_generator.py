"""Model of https://github.com/livekit/agents/issues/2333 ("BackgroundAudioPlayer
sometimes raises aclose(): asynchronous generator is already running"); the
same error shows up in https://github.com/mavlink/MAVSDK-Python/issues/182.

A player task pulls audio frames from an async generator and paces playback
itself; ``stop()`` runs in another task and calls ``aclose()`` on the same
generator. That is only legal while the generator is suspended at a ``yield``.
Between yields the generator briefly awaits a resampler, and if ``stop()``
runs while the player is inside that await, ``aclose()`` raises RuntimeError.

Natural timing: frames every 0.2 s (0.0, 0.2, 0.4, 0.6 ...); stop() at 0.5 s
finds the player sleeping between frames, with the generator parked at its
``yield``. Bad interleaving: the player's 0.4 s wake-up and the 0.5 s stop are
processed in the same loop iteration (e.g. the loop is busy from 0.35 s to
0.55 s): the player enters the generator, then stop() calls aclose() on it.
"""
import asyncio

import pytest

FRAME_TIME = 0.2
STOP_AT = 0.5


class Resampler:
    async def process(self, frame):
        await asyncio.sleep(0)              # cooperative: yields to the loop
        return frame.upper()


class Player:
    def __init__(self, frames):
        self.frames = frames
        self.played = []
        self.resampler = Resampler()
        self.gen = self._frames()
        self.closed = False

    async def _frames(self):
        try:
            for frame in self.frames:
                yield await self.resampler.process(frame)
        finally:
            self.closed = True

    async def play(self):
        async for frame in self.gen:
            self.played.append(frame)
            await asyncio.sleep(FRAME_TIME)

    async def stop(self):
        await self.gen.aclose()


@pytest.mark.asyncio
async def test_stop_closes_the_stream_cleanly():
    player = Player([f"f{i}" for i in range(20)])
    play = asyncio.create_task(player.play())
    await asyncio.sleep(STOP_AT)
    try:
        await player.stop()
        await asyncio.wait_for(play, 2)
        assert player.closed
        n = len(player.played)
        assert n >= 1 and player.played == [f"F{i}" for i in range(n)]
    finally:
        play.cancel()
        await asyncio.gather(play, return_exceptions=True)
