"""A small HTTP/1.1-like framing: request line, headers, Content-Length body."""
import asyncio
import json
from dataclasses import dataclass, field

MAX_HEAD = 8192
MAX_BODY = 1 << 20
REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 500: "Internal Server Error",
           503: "Service Unavailable", 504: "Gateway Timeout"}


class ProtocolError(Exception):
    pass


@dataclass
class Request:
    method: str
    path: str
    headers: dict = field(default_factory=dict)
    body: bytes = b""

    def json(self):
        return json.loads(self.body or b"null")


@dataclass
class Response:
    status: int
    headers: dict = field(default_factory=dict)
    body: bytes = b""

    @classmethod
    def json(cls, status: int, obj, **headers) -> "Response":
        hdrs = {"content-type": "application/json", **headers}
        return cls(status, hdrs, json.dumps(obj, sort_keys=True).encode())

    def data(self):
        return json.loads(self.body or b"null")


def _encode(start: str, headers: dict, body: bytes) -> bytes:
    hdrs = {k.lower(): str(v) for k, v in headers.items()}
    hdrs["content-length"] = str(len(body))
    lines = [start] + [f"{k}: {v}" for k, v in hdrs.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def encode_request(req: Request) -> bytes:
    if " " in req.path or not req.path.startswith("/"):
        raise ProtocolError(f"bad path {req.path!r}")
    return _encode(f"{req.method.upper()} {req.path} HTTP/1.1", req.headers, req.body)


def encode_response(resp: Response) -> bytes:
    reason = REASONS.get(resp.status, "Unknown")
    return _encode(f"HTTP/1.1 {resp.status} {reason}", resp.headers, resp.body)


def parse_head(head: bytes):
    """Split a head (without the blank line) into its start line parts and a header dict."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError as exc:  # pragma: no cover - latin-1 decodes anything
        raise ProtocolError(str(exc)) from None
    lines = text.split("\r\n")
    start = lines[0].split(" ", 2)
    if len(start) != 3:
        raise ProtocolError(f"bad start line {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise ProtocolError(f"bad header line {line!r}")
        headers[name.strip().lower()] = value.strip()
    length = headers.get("content-length", "0")
    if not length.isdigit() or int(length) > MAX_BODY:
        raise ProtocolError(f"bad content-length {length!r}")
    return start, headers


async def _read_head(reader: asyncio.StreamReader):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise ProtocolError("connection closed inside a message head") from None
    except asyncio.LimitOverrunError:
        raise ProtocolError("message head too long") from None
    if len(head) > MAX_HEAD:
        raise ProtocolError("message head too long")
    return head[:-4]


async def read_request(reader: asyncio.StreamReader):
    head = await _read_head(reader)
    if head is None:
        return None
    (method, path, version), headers = parse_head(head)
    if version != "HTTP/1.1":
        raise ProtocolError(f"unsupported version {version!r}")
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(method, path, headers, body)


async def read_response(reader: asyncio.StreamReader) -> Response:
    head = await _read_head(reader)
    if head is None:
        raise ConnectionResetError("connection closed before a response")
    (version, status, _reason), headers = parse_head(head)
    if not status.isdigit():
        raise ProtocolError(f"bad status {status!r}")
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Response(int(status), headers, body)
