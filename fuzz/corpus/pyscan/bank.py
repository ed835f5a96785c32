class Account:
    def __init__(self, balance=0):
        self.balance = balance
        self.history = []

    async def deposit(self, amount):
        current = self.balance
        await self.audit(amount)
        self.balance = current + amount
        self.history.append(("deposit", amount))

    async def withdraw(self, amount):
        if self.balance >= amount:
            await self.audit(-amount)
            self.balance -= amount
            return True
        return False
