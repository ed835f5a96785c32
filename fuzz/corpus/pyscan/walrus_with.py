def process(self, path):
    with open(path) as fh, self.lock:
        while (line := fh.readline()):
            self.lines.append(line)
    for self.cursor in range(3):
        pass
    return self.lines
