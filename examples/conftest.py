# The examples are plain pytest files; pytest-asyncio runs them in strict mode.
