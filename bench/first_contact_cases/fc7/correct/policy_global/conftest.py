import asyncio

_previous = None


class TaggingPolicy(asyncio.DefaultEventLoopPolicy):
    created = 0

    def new_event_loop(self):
        loop = super().new_event_loop()
        TaggingPolicy.created += 1
        loop.fc7_tag = "tagging-policy"
        return loop


def pytest_configure(config):
    global _previous
    _previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(TaggingPolicy())


def pytest_unconfigure(config):
    asyncio.set_event_loop_policy(_previous)
