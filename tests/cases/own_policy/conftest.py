"""The project's own event loop, chosen at import the way a uvloop user does
(`asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())`): MyLoop stands in for uvloop's loop.

This directory is in tests/conftest.py's collect_ignore, so that `pytest tests` never imports this
file (it would change the loop of the whole session); it is run by its file's path.
"""

import asyncio


class MyLoop(asyncio.SelectorEventLoop):
    """A loop class the project chose."""


class CustomPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return MyLoop()


asyncio.set_event_loop_policy(CustomPolicy())
