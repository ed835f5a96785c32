"""A project's own event loop policy that still makes asyncio's own loops: a subclass of the default
policy that changes what happens when a loop is made (tagged) or set (the loop it replaces is
closed), not which loop class is made.

This directory is in tests/conftest.py's collect_ignore, so that `pytest tests` never imports this
file (it would change the policy of the whole session); it is run by its file's path.
"""

import asyncio
from typing import Optional


class ClosingPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()  # asyncio's own loop, tagged
        loop.made_by = "ClosingPolicy"  # type: ignore[attr-defined]
        return loop

    def set_event_loop(self, loop: Optional[asyncio.AbstractEventLoop]) -> None:
        old = self._local._loop
        if old is not None and old is not loop and not old.is_running():
            old.close()
        super().set_event_loop(loop)


asyncio.set_event_loop_policy(ClosingPolicy())
