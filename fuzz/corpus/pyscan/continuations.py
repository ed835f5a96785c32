def f(self):
    x = self.a + \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
    \
        self.b
    self.c = 2
