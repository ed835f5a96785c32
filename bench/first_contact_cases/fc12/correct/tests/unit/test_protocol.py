import asyncio

import pytest

from app.protocol import (ProtocolError, Request, Response, encode_request, encode_response,
                          parse_head, read_request, read_response)


def test_request_roundtrip_through_parse_head():
    raw = encode_request(Request("post", "/kv/a", {"X-Request-Id": "r1"}, b'{"v": 1}'))
    head, _, body = raw.partition(b"\r\n\r\n")
    (method, path, version), headers = parse_head(head)
    assert (method, path, version) == ("POST", "/kv/a", "HTTP/1.1")
    assert headers == {"x-request-id": "r1", "content-length": "8"}
    assert body == b'{"v": 1}'


def test_response_has_reason_and_length():
    raw = encode_response(Response.json(404, {"error": "no"}))
    assert raw.startswith(b"HTTP/1.1 404 Not Found\r\n")
    assert b"content-type: application/json\r\n" in raw
    assert raw.endswith(b'\r\n\r\n{"error": "no"}')


@pytest.mark.parametrize("head", [b"GET /x", b"GET /x HTTP/1.1\r\nno-colon-here",
                                  b"GET /x HTTP/1.1\r\ncontent-length: -3"])
def test_parse_head_rejects_garbage(head):
    with pytest.raises(ProtocolError):
        parse_head(head)


def test_request_path_must_be_absolute_without_spaces():
    with pytest.raises(ProtocolError):
        encode_request(Request("GET", "relative"))
    with pytest.raises(ProtocolError):
        encode_request(Request("GET", "/a b"))


@pytest.mark.asyncio
async def test_read_request_then_clean_eof():
    reader = asyncio.StreamReader()
    reader.feed_data(encode_request(Request("PUT", "/kv/k", {}, b"[1, 2]")))
    reader.feed_eof()
    req = await read_request(reader)
    assert (req.method, req.path, req.json()) == ("PUT", "/kv/k", [1, 2])
    assert await read_request(reader) is None


@pytest.mark.asyncio
async def test_truncated_head_is_a_protocol_error():
    reader = asyncio.StreamReader()
    reader.feed_data(b"GET /health HTTP/1.1\r\ncontent-le")
    reader.feed_eof()
    with pytest.raises(ProtocolError, match="inside a message head"):
        await read_request(reader)


@pytest.mark.asyncio
async def test_pipelined_responses_are_split_by_length():
    reader = asyncio.StreamReader()
    reader.feed_data(encode_response(Response(200, {}, b"abc")) + encode_response(Response.json(202, {"id": 1})))
    first = await read_response(reader)
    second = await read_response(reader)
    assert (first.status, first.body) == (200, b"abc")
    assert (second.status, second.data()) == (202, {"id": 1})
