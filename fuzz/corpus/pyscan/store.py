import asyncio

REPORT = {"status": None}


class Store:
    registry = []

    def __init__(self):
        self.sessions = {}
        self.lock = asyncio.Lock()

    async def add(self, key, value):
        s = self.sessions
        async with self.lock:
            s[key] = value
        await asyncio.sleep(0)
        self.count += 1
        REPORT["status"] = "ok"

    def get(self, key):
        return self.sessions.get(key)
