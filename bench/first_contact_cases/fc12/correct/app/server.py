"""The service's front end: a keep-alive line-protocol server over asyncio.start_server."""
import asyncio
import itertools
import json

from . import metrics
from .broker import SubscriptionClosed
from .logs import bind_request_id, get_logger
from .protocol import ProtocolError, Response, encode_response, read_request

log = get_logger("app.server")


class AppServer:
    _rids = itertools.count(1)

    def __init__(self, store, broker, jobs, host="127.0.0.1", port=0, shutdown_grace=5.0):
        self.store = store
        self.broker = broker
        self.jobs = jobs
        self.host = host
        self.port = port
        self.shutdown_grace = shutdown_grace
        self._server = None
        self._conns = {}  # task -> state ("idle" | "busy")
        self.in_flight = 0
        self.requests_served = 0
        self.stopping = False
        self.request_started = None  # optional hook: called with the request when it starts

    async def start(self):
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("server.started", port=self.port)
        return self

    @property
    def connections(self):
        return len(self._conns)

    async def _handle(self, reader, writer):
        task = asyncio.current_task()
        self._conns[task] = "idle"
        try:
            while not self.stopping:
                self._conns[task] = "idle"
                try:
                    req = await read_request(reader)
                except ProtocolError as exc:
                    writer.write(encode_response(Response.json(400, {"error": str(exc)}, connection="close")))
                    await writer.drain()
                    break
                except (ConnectionError, asyncio.IncompleteReadError):
                    break
                if req is None:
                    break
                self._conns[task] = "busy"
                self.in_flight += 1
                try:
                    resp = await self._dispatch(req)
                finally:
                    self.in_flight -= 1
                close = self.stopping or req.headers.get("connection") == "close"
                if close:
                    resp.headers["connection"] = "close"
                writer.write(encode_response(resp))
                await writer.drain()
                self.requests_served += 1
                if close:
                    break
        except ConnectionError:
            pass
        finally:
            self._conns.pop(task, None)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass

    async def _dispatch(self, req):
        rid = req.headers.get("x-request-id") or f"r{next(self._rids)}"
        with bind_request_id(rid):
            metrics.incr("server.requests")
            if self.request_started is not None:
                self.request_started(req)
            try:
                resp = await self._route(req)
            except (ValueError, KeyError, TypeError) as exc:
                resp = Response.json(400, {"error": str(exc)})
            except Exception as exc:
                log.error("request.failed", path=req.path, error=repr(exc))
                resp = Response.json(500, {"error": type(exc).__name__})
            resp.headers["x-request-id"] = rid
            log.debug("request.done", method=req.method, path=req.path, status=resp.status)
            return resp

    async def _route(self, req):
        path, _, query = req.path.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        parts = [p for p in path.split("/") if p]
        m = req.method
        if parts == ["health"] and m == "GET":
            return Response.json(200, {"status": "stopping" if self.stopping else "ok"})
        if parts[:1] == ["echo"] and m == "POST":
            return Response(200, {"content-type": req.headers.get("content-type", "application/octet-stream")}, req.body)
        if parts[:1] == ["slow"] and m == "GET":
            await asyncio.sleep(float(params.get("s", "0.1")))
            return Response.json(200, {"slept": float(params.get("s", "0.1"))})
        if len(parts) == 2 and parts[0] == "kv":
            return await self._kv(m, parts[1], req)
        if parts == ["jobs"] and m == "POST":
            spec = req.json()
            job = self.jobs.submit(spec["kind"], spec.get("payload"))
            return Response.json(202, {"id": job.id})
        if len(parts) >= 2 and parts[0] == "jobs" and m == "GET":
            job = self.jobs.jobs.get(parts[1])
            if job is None:
                return Response.json(404, {"error": "no such job"})
            if parts[2:] == ["wait"]:
                try:
                    await asyncio.wait_for(job.wait(), float(params.get("timeout", "10")))
                except asyncio.TimeoutError:
                    return Response.json(504, job.as_dict())
            return Response.json(200, job.as_dict())
        if len(parts) == 2 and parts[0] == "publish" and m == "POST":
            n = self.broker.publish(parts[1], req.json())
            return Response.json(200, {"delivered": n})
        if len(parts) == 2 and parts[0] == "events" and m == "GET":
            return await self._events(parts[1], int(params.get("n", "1")), float(params.get("timeout", "10")))
        return Response.json(404, {"error": f"no route for {m} {path}"})

    async def _kv(self, m, key, req):
        if m == "GET":
            value = await self.store.get(key)
            if value is None:
                return Response.json(404, {"error": "no such key"})
            return Response.json(200, {"key": key, "value": value})
        if m == "PUT":
            await self.store.put(key, json.loads(req.body))
            return Response.json(200, {"key": key})
        if m == "DELETE":
            existed = await self.store.delete(key)
            return Response.json(200 if existed else 404, {"deleted": existed})
        return Response.json(405, {"error": "method not allowed"})

    async def _events(self, pattern, n, timeout):
        """Long poll: subscribe, return the first n messages (or what arrived before timeout)."""
        got = []
        with self.broker.subscribe(pattern) as sub:
            try:
                async with asyncio.timeout(timeout):
                    while len(got) < n:
                        topic, msg = await sub.get()
                        got.append({"topic": topic, "message": msg})
            except (TimeoutError, SubscriptionClosed):
                pass
        return Response.json(200, {"events": got, "complete": len(got) == n})

    async def stop(self, grace=None):
        """Stop accepting, close idle keep-alive connections, let busy ones finish within
        grace, then cancel what is left."""
        grace = self.shutdown_grace if grace is None else grace
        self.stopping = True
        self._server.close()
        for task, state in list(self._conns.items()):
            if state == "idle":
                task.cancel()
        pending = list(self._conns)
        if pending:
            done, still = await asyncio.wait(pending, timeout=grace)
            for task in still:
                task.cancel()
            if still:
                await asyncio.wait(still)
        await self._server.wait_closed()
        log.info("server.stopped", port=self.port)
