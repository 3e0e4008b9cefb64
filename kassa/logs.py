"""Structured logging: one JSON object a line, tagged with the request's serial number.

Nothing sensitive is ever passed to a logger; as a last line of defence the formatter also masks any
run of 12-19 digits (a PAN-shaped number) down to BIN and last four.

The line every API request writes (``request``) skips the logging machinery: built from four values of
our own (serial, operation code, HTTP status, milliseconds; none can hold card data, so it is not
masked), serialized, and written with the other request lines of the event loop's turn when the turn
ends, to the file of the handler ``configure`` installed. Through a ``LogRecord``, the formatter and a
write of its own it cost 20-35 µs of CPU a request and 15-20% of a sale's or a status call's throughput;
it costs under 5 µs (``python -m bench.logcost``; docs/performance.md, "The request's log line").
A line may so follow another logger's line written later in the same turn; its timestamp is its own.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import re
import sys
import time
from typing import Any, TextIO

import orjson

from kassa.domain import cards

serial_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("serial", default=None)

# A run of 12 to 19 digits, unless it is the last group of a serial number (a UUID): about one serial in
# 280 has only digits there, and masking it broke the link between a request's log lines and its serial.
_UUID_HEAD = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
_PAN_LIKE = re.compile(rf"(?<!\d)(?<!{_UUID_HEAD})\d{{12,19}}(?!\d)")
# Every match of _PAN_LIKE holds twelve digits in a row: searching for those first is three times as fast
# as the substitution, and most lines have none.
_TWELVE_DIGITS = re.compile(r"\d{12}")
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()) | {"message"}

_requests = logging.getLogger("kassa.api")
_sink: _Sink | None = None


def mask_pans(text: str) -> str:
    if not _TWELVE_DIGITS.search(text):
        return text
    return _PAN_LIKE.sub(lambda m: cards.mask_pan(m.group(0)), text)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = _entry(record.created, record.levelname.lower(), record.name, record.getMessage(), serial_var.get())
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return mask_pans(orjson.dumps(entry, default=str).decode())


def log_request(serial: str, operation: str, http_status: int, started: float) -> None:
    """The request's line (logger ``kassa.api``, INFO), as the formatter would write it, ``started``
    being the request's ``time.perf_counter()``. Called on the event loop's thread (one loop a process)."""
    if not _requests.isEnabledFor(logging.INFO):
        return
    elapsed = time.perf_counter() - started
    ms = int(elapsed * 100_000 + 0.5) / 100  # round(ms, 2), at a quarter of its cost
    sink = _sink
    if sink is None:  # logging set up by someone else, or a stream without a file: through logging
        _requests.info("request", extra={"operation": operation, "http_status": http_status, "ms": ms})
        return
    entry = _entry(time.time(), "info", "kassa.api", "request", serial)
    entry.update(operation=operation, http_status=http_status, ms=ms)
    sink.write(orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE))


class _Sink:
    """The file under the handler ``configure`` installed, written to in bytes, the lines of one turn of
    the event loop together: a system call lets go of the interpreter lock, and beside a busy database
    writer thread the loop then waits for it back (docs/performance.md, "The request's log line"). Under
    the handler's lock: lines of other threads never interleave, and the handler flushes after each of
    its own lines, so nothing of theirs waits in its buffer."""

    def __init__(self, handler: logging.StreamHandler[TextIO], fd: int) -> None:
        self._handler = handler
        self._fd = fd
        self._pending: list[bytes] = []

    def write(self, line: bytes) -> None:
        """Called on the event loop's thread; the line is written when the loop's turn ends."""
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(line)

    def _flush(self) -> None:
        data = b"".join(self._pending)
        self._pending.clear()
        self._handler.acquire()
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError:
            pass  # as logging does with a line it cannot write: the requests go on
        finally:
            self._handler.release()


def _entry(created: float, level: str, logger: str, message: str, serial: str | None) -> dict[str, Any]:
    """The fields every line starts with, in the order a reader expects them."""
    entry: dict[str, Any] = {"ts": _timestamp(created), "level": level, "logger": logger, "msg": message}
    if serial:
        entry["serial"] = serial
    return entry


_second: tuple[int, str] = (-1, "")  # one object, replaced whole: threads read a consistent pair


def _timestamp(created: float) -> str:
    """``created`` as ``2026-11-23T20:38:53.834Z``; the text of the second is made once a second."""
    global _second
    second, text = _second
    if int(created) != second:
        second = int(created)
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _second = (second, text)
    return f"{text}.{int((created - second) * 1000):03d}Z"


def configure(level: str = "INFO", stream: TextIO | None = None) -> None:
    global _sink
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "alembic"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    # uvicorn tells four lines a listener at start and three at stop; `kassa serve` says in one what it serves.
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    # Alembic 1.17 announces each of its autogenerate plugins at start-up: seven lines an operator has no use for.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    try:
        handler.flush()
        _sink = _Sink(handler, handler.stream.fileno())
    except (AttributeError, OSError):  # io.UnsupportedOperation is an OSError
        _sink = None
