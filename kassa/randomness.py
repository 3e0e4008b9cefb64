"""Random bytes from the operating system, fetched in blocks.

Every ``os.urandom`` call releases the GIL, and under load the calling thread then waits for the other
threads to hand it back: profiled at 12% of the event loop's samples for two nonces and a serial number
per sale; beside a busy writer thread, two draws took 45-113 µs on average (99th percentile about 2 ms)
against 14-42 µs from here (``python -m bench.nonces``; docs/architecture.md, "Card data"). One call
per block gives the same bytes from the same source. A forked child drops the block it inherited, so
two processes never hand out the same bytes (the vault's AES-GCM nonces must never repeat).
"""

from __future__ import annotations

import os
import threading

_BLOCK = 4096


class _Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._block = b""
        self._offset = 0

    def take(self, count: int) -> bytes:
        with self._lock:
            if self._offset + count > len(self._block):
                self._block = os.urandom(max(_BLOCK, count))
                self._offset = 0
            start = self._offset
            self._offset += count
            return self._block[start : self._offset]


_pool = _Pool()
os.register_at_fork(after_in_child=_pool._reset)


def token_bytes(count: int) -> bytes:
    return _pool.take(count)


def uuid4() -> str:
    """A random (version 4) UUID in its text form, formatted here: ``str(uuid.UUID(...))`` costs three
    times as much, and a serial number is made for every request."""
    raw = bytearray(_pool.take(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
