class M:
    def total(self):
        value = (
            self.a
            + self.b[
                "key"
            ]
        )
        self.out.update(
            value=value,
        )
        return value
