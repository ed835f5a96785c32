def f(self, k):
    self.d['single'] = self.d["double"]
    self.d[f"{k}-x"] = self.d[b"bytes"]
    self.d['it\'s'] = self.d['say "hi"']
    self.d[0] = self.d[-1] + self.d[0x1F] + self.d[1_000]
    self.d[k:k + 1] = self.d[1, 2]
