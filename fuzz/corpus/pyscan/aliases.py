class Pool:
    def acquire(self, key):
        free = self.free
        busy = self.busy[key]
        item = free.pop()
        busy.add(item)
        free = []
        free.append(item)
        del busy
        return item
