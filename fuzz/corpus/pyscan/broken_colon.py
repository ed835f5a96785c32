def f(self)
    self.x = 1

class C
    pass
