import asyncio
import json

import pytest

from app.protocol import Request, encode_request, read_response

pytestmark = pytest.mark.asyncio


async def test_health(client):
    resp = await client.get("/health")
    assert (resp.status, resp.data()) == (200, {"status": "ok"})
    assert resp.headers["content-type"] == "application/json"


async def test_kv_roundtrip(client, ns):
    key = f"{ns}-user"
    assert (await client.get(f"/kv/{key}")).status == 404
    assert (await client.put_json(f"/kv/{key}", {"name": "ada"})).status == 200
    resp = await client.get(f"/kv/{key}")
    assert resp.data() == {"key": key, "value": {"name": "ada"}}
    assert (await client.delete(f"/kv/{key}")).data() == {"deleted": True}
    assert (await client.delete(f"/kv/{key}")).status == 404


async def test_unknown_route_and_bad_json(client, ns):
    assert (await client.get("/nope")).status == 404
    resp = await client.request("PUT", f"/kv/{ns}", b"{not json")
    assert resp.status == 400
    assert (await client.request("PATCH", f"/kv/{ns}")).status == 405


async def test_request_id_is_echoed_and_generated(client):
    resp = await client.get("/health", headers={"x-request-id": "abc-1"})
    assert resp.headers["x-request-id"] == "abc-1"
    assert (await client.get("/health")).headers["x-request-id"].startswith("r")


async def test_large_body_echo(client):
    body = bytes(range(256)) * 400
    resp = await client.request("POST", "/echo", body, headers={"content-type": "application/x-test"})
    assert resp.body == body and resp.headers["content-type"] == "application/x-test"


async def test_pipelined_requests_on_one_connection(service):
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    try:
        writer.write(b"".join(encode_request(Request("POST", "/echo", {}, f"m{i}".encode())) for i in range(5)))
        await writer.drain()
        bodies = [(await asyncio.wait_for(read_response(reader), 20)).body for _ in range(5)]
        assert bodies == [b"m0", b"m1", b"m2", b"m3", b"m4"]
    finally:
        writer.close()
        await writer.wait_closed()


async def test_malformed_request_gets_400_and_close(service):
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    try:
        writer.write(b"GET /health HTTP/1.1\r\nbroken header\r\n\r\n")
        await writer.drain()
        resp = await asyncio.wait_for(read_response(reader), 20)
        assert resp.status == 400 and resp.headers["connection"] == "close"
        assert await asyncio.wait_for(reader.read(), 20) == b""
    finally:
        writer.close()
        await writer.wait_closed()


async def test_server_logs_requests(client, caplog, ns):
    await client.get(f"/kv/{ns}-missing", headers={"x-request-id": ns})
    done = [r for r in caplog.records if r.name == "app.server" and r.rid == ns]
    assert [r.getMessage() for r in done] == [f"request.done method=GET path=/kv/{ns}-missing status=404"]
