CONFIG = {"retries": 3}


class Service:
    @property
    def name(self):
        return self._name

    @retry(CONFIG["retries"])
    async def call(self, req):
        self.calls[req.id] = req
        return await self.client.send(req)

    @classmethod
    def create(cls):
        cls.instances.append(cls())
