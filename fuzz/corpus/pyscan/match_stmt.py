GLOBAL = []


def handle(self, event):
    match event:
        case {"kind": "add", "item": item}:
            self.items.append(item)
        case Point(x=px, y=py) if px > 0:
            GLOBAL.append(px)
        case [first, *rest]:
            self.rest = rest
        case _:
            pass
