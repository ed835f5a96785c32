TABLE = {}


class Index:
    def build(self, rows):
        self.keys = {r.key for r in rows}
        self.by_key = {r.key: self.lookup[r.key] for r in rows if r.key in TABLE}
        return sorted(x for x in self.keys if self.valid(x))
