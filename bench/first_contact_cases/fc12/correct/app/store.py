"""Key-value stores: an in-memory one and a file-backed append-only log with compaction."""
import asyncio
import json
import os

from . import metrics

_MISSING = object()


class StoreClosed(RuntimeError):
    pass


class MemoryStore:
    def __init__(self):
        self._data = {}
        self._lock = asyncio.Lock()
        self.closed = False

    def _check(self):
        if self.closed:
            raise StoreClosed("store is closed")

    def _persist(self, op, key, value=None):
        pass

    async def get(self, key, default=None):
        self._check()
        return self._data.get(key, default)

    async def put(self, key, value):
        async with self._lock:
            self._check()
            self._data[key] = value
            self._persist("put", key, value)
            metrics.incr("store.put")

    async def delete(self, key) -> bool:
        async with self._lock:
            self._check()
            existed = self._data.pop(key, _MISSING) is not _MISSING
            if existed:
                self._persist("del", key)
            return existed

    async def compare_and_set(self, key, expected, new) -> bool:
        """Set key to new if its current value equals expected (None = absent). new=None deletes."""
        async with self._lock:
            self._check()
            if self._data.get(key) != expected:
                return False
            if new is None:
                self._data.pop(key, None)
                self._persist("del", key)
            else:
                self._data[key] = new
                self._persist("put", key, new)
            return True

    async def keys(self, prefix=""):
        self._check()
        return sorted(k for k in self._data if k.startswith(prefix))

    async def close(self):
        async with self._lock:
            self.closed = True


class FileStore(MemoryStore):
    """Every mutation appends a JSON line; open() replays the log; compact() rewrites it."""

    def __init__(self, path):
        super().__init__()
        self.path = os.fspath(path)
        self._fh = None

    async def open(self):
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as fh:
                for lineno, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        # a torn last line after a crash is ignored; anything else is corruption
                        if fh.readline() == "":
                            break
                        raise ValueError(f"{self.path}:{lineno}: corrupt record") from None
                    if rec["op"] == "put":
                        self._data[rec["k"]] = rec["v"]
                    else:
                        self._data.pop(rec["k"], None)
        self._fh = open(self.path, "a", encoding="utf-8")
        return self

    def _persist(self, op, key, value=None):
        rec = {"op": op, "k": key}
        if op == "put":
            rec["v"] = value
        self._fh.write(json.dumps(rec, sort_keys=True) + "\n")
        self._fh.flush()

    async def compact(self):
        async with self._lock:
            self._check()
            tmp = self.path + ".tmp"
            data = dict(self._data)

            def _write():
                with open(tmp, "w", encoding="utf-8") as fh:
                    for k in sorted(data):
                        fh.write(json.dumps({"op": "put", "k": k, "v": data[k]}, sort_keys=True) + "\n")
                os.replace(tmp, self.path)

            await asyncio.to_thread(_write)
            self._fh.close()
            self._fh = open(self.path, "a", encoding="utf-8")

    async def close(self):
        async with self._lock:
            self.closed = True
            if self._fh is not None:
                self._fh.close()
                self._fh = None
