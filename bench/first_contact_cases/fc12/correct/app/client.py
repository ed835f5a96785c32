"""Client side: a keep-alive connection pool bounded by a semaphore, and a request helper
that retries once when a reused connection turns out to be stale."""
import asyncio
import json
from collections import deque

from . import metrics
from .protocol import Request, encode_request, read_response


class PoolClosed(RuntimeError):
    pass


class Connection:
    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer
        self.uses = 0

    @property
    def usable(self):
        return not self.writer.is_closing() and not self.reader.at_eof()

    async def request(self, req):
        self.uses += 1
        self.writer.write(encode_request(req))
        await self.writer.drain()
        return await read_response(self.reader)

    async def close(self):
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


class ConnectionPool:
    def __init__(self, host, port, max_size=4):
        self.host = host
        self.port = port
        self.max_size = max_size
        self._sem = asyncio.Semaphore(max_size)
        self._idle = deque()
        self._all = set()
        self.created = 0
        self.reused = 0
        self.closed = False

    @property
    def in_use(self):
        return len(self._all) - len(self._idle)

    @property
    def idle(self):
        return len(self._idle)

    async def acquire(self):
        if self.closed:
            raise PoolClosed("pool is closed")
        await self._sem.acquire()
        try:
            while self._idle:
                conn = self._idle.pop()
                if conn.usable:
                    self.reused += 1
                    return conn, True
                self._all.discard(conn)
                await conn.close()
            reader, writer = await asyncio.open_connection(self.host, self.port)
            conn = Connection(reader, writer)
            self._all.add(conn)
            self.created += 1
            metrics.incr("pool.connect")
            return conn, False
        except BaseException:
            self._sem.release()
            raise

    def release(self, conn, reusable=True):
        if reusable and conn.usable and not self.closed:
            self._idle.append(conn)
        else:
            self._all.discard(conn)
            conn.writer.close()
        self._sem.release()

    async def close(self):
        self.closed = True
        conns = list(self._all)
        self._all.clear()
        self._idle.clear()
        for conn in conns:
            await conn.close()


class Client:
    def __init__(self, pool, default_headers=None):
        self.pool = pool
        self.default_headers = dict(default_headers or {})

    async def request(self, method, path, body=b"", headers=None):
        req = Request(method, path, {**self.default_headers, **(headers or {})}, body)
        for attempt in (1, 2):
            conn, reused = await self.pool.acquire()
            try:
                resp = await conn.request(req)
            except (ConnectionError, asyncio.IncompleteReadError):
                self.pool.release(conn, reusable=False)
                if reused and attempt == 1:
                    metrics.incr("client.stale_retry")
                    continue
                raise
            except BaseException:
                self.pool.release(conn, reusable=False)
                raise
            self.pool.release(conn, reusable=resp.headers.get("connection") != "close")
            return resp

    async def get(self, path, **kw):
        return await self.request("GET", path, **kw)

    async def post_json(self, path, obj, **kw):
        return await self.request("POST", path, json.dumps(obj).encode(), **kw)

    async def put_json(self, path, obj, **kw):
        return await self.request("PUT", path, json.dumps(obj).encode(), **kw)

    async def delete(self, path, **kw):
        return await self.request("DELETE", path, **kw)
