"""Structured logging: `event key=value ...` records carrying a request id from a contextvar."""
import contextlib
import contextvars
import logging

request_id: contextvars.ContextVar = contextvars.ContextVar("request_id", default="-")


def _fmt(value) -> str:
    text = str(value)
    if " " in text or "=" in text or text == "":
        return '"' + text.replace('"', '\\"') + '"'
    return text


class StructuredLogger:
    def __init__(self, name: str):
        self.logger = logging.getLogger(name)

    def _log(self, level: int, event: str, fields: dict) -> None:
        if not self.logger.isEnabledFor(level):
            return
        rid = request_id.get()
        parts = [event] + [f"{k}={_fmt(v)}" for k, v in sorted(fields.items())]
        self.logger.log(level, " ".join(parts), extra={"event": event, "rid": rid, "fields": fields})

    def debug(self, event, **fields):
        self._log(logging.DEBUG, event, fields)

    def info(self, event, **fields):
        self._log(logging.INFO, event, fields)

    def warning(self, event, **fields):
        self._log(logging.WARNING, event, fields)

    def error(self, event, **fields):
        self._log(logging.ERROR, event, fields)


def get_logger(name: str) -> StructuredLogger:
    return StructuredLogger(name)


@contextlib.contextmanager
def bind_request_id(rid: str):
    token = request_id.set(rid)
    try:
        yield
    finally:
        request_id.reset(token)
