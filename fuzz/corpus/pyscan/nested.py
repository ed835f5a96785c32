def outer(self):
    def inner(k):
        return self.table[k]

    class Local:
        def method(self):
            self.items.extend([1, 2])
            return lambda x: self.items.index(x)

    return inner, Local
