class Consumer:
    async def run(self):
        async for msg in self.queue:
            async with self.sem as slot:
                await self.handle(msg)
        results = [await f for f in self.futures]
        return [x async for x in self.stream]
