async def f(self):
    await
    async with:
    async for in self.x:
        self.y[ = 3
    lambda: self.
