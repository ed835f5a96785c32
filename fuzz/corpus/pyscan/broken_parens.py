x = (1,
def g(self):
    self.y[1] = 2
    return [self.z
