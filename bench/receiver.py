"""The merchant's callback receiver of the end-to-end run: a raw asyncio (uvloop) HTTP server that answers
every GET with 200 and records when it arrived (CLOCK_MONOTONIC, which every process of the machine
shares), with the callback's ``client_orderid``, ``orderid`` and ``status``. ``GET /_count`` answers the
number recorded so far. On SIGTERM it writes the records, one a line, and exits.

Run: ``python -m bench.receiver PORT OUT``; prints ``READY`` once it listens.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import cast
from urllib.parse import parse_qs

import uvloop

OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nOK"
COUNT_PATH = "/_count"


class Callbacks(asyncio.Protocol):
    """One keep-alive connection; requests are GETs without a body, possibly pipelined."""

    def __init__(self, records: list[tuple[float, str, str, str]]) -> None:
        self.records = records
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio.Transport subclass

    def data_received(self, data: bytes) -> None:
        arrived = time.monotonic()
        assert self.transport is not None
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("latin-1")
            path, _, query = target.partition("?")
            if path == COUNT_PATH:
                body = str(len(self.records)).encode()
                self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                continue
            fields = parse_qs(query)
            self.records.append(
                (
                    arrived,
                    fields.get("client_orderid", [""])[0],
                    fields.get("orderid", [""])[0],
                    fields.get("status", [""])[0],
                )
            )
            self.transport.write(OK)


async def serve(port: int, out: Path) -> None:
    records: list[tuple[float, str, str, str]] = []
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    server = await loop.create_server(lambda: Callbacks(records), "127.0.0.1", port, backlog=1024)
    print("READY", flush=True)
    await stop.wait()
    server.close()
    with out.open("w") as lines:
        for arrived, client_orderid, orderid, status in records:
            lines.write(f"{arrived!r} {client_orderid} {orderid} {status}\n")


def main() -> None:
    uvloop.run(serve(int(sys.argv[1]), Path(sys.argv[2])))


if __name__ == "__main__":
    main()
