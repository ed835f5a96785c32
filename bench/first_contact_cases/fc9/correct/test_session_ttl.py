"""Cookie sessions with a time-to-live, tested over a real keep-alive HTTP connection.

This follows the style of session-middleware tests (aiohttp-session, Starlette's
SessionMiddleware).  A client logs in, keeps its TCP connection open and sleeps
between requests.  Expiry is computed from ``time.monotonic()`` on the server and
the cookie carries a wall-clock ``Expires`` taken from ``time.time()``.  The
server runs once per module in a module-scoped event loop.

Timing rules: a session is only expected to be *valid* when its TTL is at least
20x the sleep.  It is only expected to be *expired* after a sleep that is longer
than its TTL.
"""

import asyncio
import email.utils
import json
import secrets
import time

import pytest
import pytest_asyncio


class SessionStore:
    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.sessions = {}  # sid -> dict(user, ttl, expires_at, sliding)

    def create(self, user, ttl, sliding=False):
        sid = secrets.token_hex(8)
        self.sessions[sid] = {
            "user": user,
            "ttl": ttl,
            "expires_at": self.clock() + ttl,
            "sliding": sliding,
        }
        return sid

    def get(self, sid):
        entry = self.sessions.get(sid)
        if entry is None:
            return None
        now = self.clock()
        if now >= entry["expires_at"]:
            del self.sessions[sid]
            return None
        if entry["sliding"]:
            entry["expires_at"] = now + entry["ttl"]
        return entry

    def delete(self, sid):
        self.sessions.pop(sid, None)

    def sweep(self):
        now = self.clock()
        for sid in [s for s, e in self.sessions.items() if now >= e["expires_at"]]:
            del self.sessions[sid]


class SessionApp:
    """HTTP/1.1 application server: /login, /me, /session, /logout."""

    def __init__(self, sweep_interval=0.2):
        self.store = SessionStore()
        self.sweep_interval = sweep_interval
        self.connections = 0
        self._server = None
        self._sweeper = None
        self._handlers = set()
        self._writers = set()
        self.port = None

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self._sweeper = asyncio.create_task(self._sweep_forever())

    async def stop(self):
        self._sweeper.cancel()
        self._server.close()
        await self._server.wait_closed()
        for writer in list(self._writers):
            writer.close()
        await asyncio.gather(self._sweeper, *self._handlers, return_exceptions=True)

    async def _sweep_forever(self):
        while True:
            await asyncio.sleep(self.sweep_interval)
            self.store.sweep()

    def _dispatch(self, method, path, headers, body):
        cookies = dict(
            part.strip().split("=", 1)
            for part in headers.get("cookie", "").split(";")
            if "=" in part
        )
        sid = cookies.get("sid")
        extra = []
        if method == "POST" and path == "/login":
            data = json.loads(body)
            ttl = float(data["ttl"])
            sid = self.store.create(data["user"], ttl, sliding=data.get("sliding", False))
            expires = email.utils.formatdate(time.time() + ttl, usegmt=True)
            extra.append(f"Set-Cookie: sid={sid}; Expires={expires}; HttpOnly")
            return 200, {"ok": True}, extra
        if method == "POST" and path == "/logout":
            if sid:
                self.store.delete(sid)
            return 200, {"ok": True}, extra
        entry = self.store.get(sid) if sid else None
        if entry is None:
            return 401, {"error": "session expired or missing"}, extra
        if path == "/me":
            return 200, {"user": entry["user"]}, extra
        if path == "/session":
            return 200, {"expires_at": entry["expires_at"]}, extra
        return 404, {"error": "no route"}, extra

    async def _handle(self, reader, writer):
        self._handlers.add(asyncio.current_task())
        self._writers.add(writer)
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, payload, extra = self._dispatch(method, path, headers, body)
                data = json.dumps(payload).encode()
                response = [f"HTTP/1.1 {status} X", f"Content-Length: {len(data)}", *extra]
                writer.write(("\r\n".join(response) + "\r\n\r\n").encode("latin-1") + data)
                await writer.drain()
        finally:
            self._writers.discard(writer)
            writer.close()
            self._handlers.discard(asyncio.current_task())


class CookieClient:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.cookies = {}
        self.last_set_cookie = None

    @classmethod
    async def connect(cls, port):
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def call(self, method, path, payload=None):
        body = json.dumps(payload).encode() if payload is not None else b""
        lines = [f"{method} {path} HTTP/1.1", "Host: app", f"Content-Length: {len(body)}"]
        if self.cookies:
            lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await self.writer.drain()
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        headers = {}
        for line in head.decode("latin-1").split("\r\n")[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        data = json.loads(await self.reader.readexactly(int(headers["content-length"])))
        if "set-cookie" in headers:
            self.last_set_cookie = headers["set-cookie"]
            name, _, rest = headers["set-cookie"].partition("=")
            self.cookies[name] = rest.split(";", 1)[0]
        return status, data

    async def close(self):
        self.writer.close()
        await self.writer.wait_closed()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app():
    application = SessionApp()
    await application.start()
    yield application
    await application.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def client(app):
    c = await CookieClient.connect(app.port)
    yield c
    await c.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_session_survives_pauses_on_one_connection(app, client):
    before_login = time.time()
    status, _ = await asyncio.wait_for(client.call("POST", "/login", {"user": "ada", "ttl": 30}), 10)
    assert status == 200
    expires_part = client.last_set_cookie.split("Expires=", 1)[1].split(";", 1)[0]
    expires_wall = email.utils.parsedate_to_datetime(expires_part).timestamp()
    # HTTP dates have one-second resolution, hence the 1 s slack.
    assert expires_wall >= before_login + 30 - 1
    local_port = client.writer.get_extra_info("sockname")[1]
    for _ in range(2):
        await asyncio.sleep(0.5)
        status, data = await asyncio.wait_for(client.call("GET", "/me"), 10)
        assert (status, data) == (200, {"user": "ada"})
    assert client.writer.get_extra_info("sockname")[1] == local_port


@pytest.mark.asyncio(loop_scope="module")
async def test_session_expires_after_its_ttl(client):
    status, _ = await asyncio.wait_for(client.call("POST", "/login", {"user": "bob", "ttl": 1.0}), 10)
    assert status == 200
    started = time.monotonic()
    await asyncio.sleep(1.2)
    assert time.monotonic() - started >= 1.2 - 0.01
    status, data = await asyncio.wait_for(client.call("GET", "/me"), 10)
    assert status == 401
    assert "expired" in data["error"]


@pytest.mark.asyncio(loop_scope="module")
async def test_sliding_session_deadline_moves_forward(client):
    await asyncio.wait_for(
        client.call("POST", "/login", {"user": "cy", "ttl": 60, "sliding": True}), 10
    )
    _, first = await asyncio.wait_for(client.call("GET", "/session"), 10)
    await asyncio.sleep(0.5)
    _, second = await asyncio.wait_for(client.call("GET", "/session"), 10)
    # Each access sets expires_at = now + ttl, and "now" advanced by at least 0.5 s.
    assert second["expires_at"] - first["expires_at"] >= 0.5 - 0.01


@pytest.mark.asyncio(loop_scope="module")
async def test_logout_invalidates_session_immediately(client):
    await asyncio.wait_for(client.call("POST", "/login", {"user": "dee", "ttl": 60}), 10)
    assert (await asyncio.wait_for(client.call("GET", "/me"), 10))[0] == 200
    assert (await asyncio.wait_for(client.call("POST", "/logout"), 10))[0] == 200
    assert (await asyncio.wait_for(client.call("GET", "/me"), 10))[0] == 401


@pytest.mark.asyncio(loop_scope="module")
async def test_sweeper_removes_expired_sessions(app):
    clients = [await CookieClient.connect(app.port) for _ in range(3)]
    try:
        started = time.monotonic()
        for n, c in enumerate(clients):
            await asyncio.wait_for(c.call("POST", "/login", {"user": f"tmp{n}", "ttl": 0.5}), 10)
        sids = {c.cookies["sid"] for c in clients}
        assert sids <= set(app.store.sessions)

        async def swept():
            while sids & set(app.store.sessions):
                await asyncio.sleep(0.05)

        await asyncio.wait_for(swept(), 10)
        assert time.monotonic() - started >= 0.5 - 0.01
    finally:
        for c in clients:
            await c.close()
    assert app.connections >= 4
