"""Exception hierarchy shared by every wire module."""


class WireError(Exception):
    """Base class of all wire errors."""


class ProtocolError(WireError):
    """The peer sent something that violates the protocol."""


class FrameTooLarge(ProtocolError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit}")
        self.size = size
        self.limit = limit


class IncompleteFrame(ProtocolError):
    def __init__(self, expected: int, partial: bytes) -> None:
        super().__init__(f"connection closed after {len(partial)} of {expected} bytes")
        self.expected = expected
        self.partial = partial


class ConnectionClosed(WireError):
    """Raised when using a connection that has been closed (locally or by the peer)."""

    def __init__(self, code: int = 1006, reason: str = "") -> None:
        super().__init__(f"connection closed: code={code} reason={reason!r}")
        self.code = code
        self.reason = reason


class RemoteError(WireError):
    """The remote side of an RPC reported an error."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class PoolClosed(WireError):
    pass


class PoolTimeout(WireError, TimeoutError):
    pass
