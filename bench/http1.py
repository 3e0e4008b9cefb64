"""The HTTP/1.1 both Python load generators speak over raw keep-alive sockets: a form POST, and an answer
with a Content-Length body (what uvicorn and the peer send)."""

from __future__ import annotations

import asyncio


def form_post(host: str, path: str, body: bytes, extra_headers: str = "") -> bytes:
    """``extra_headers``: complete ``Name: value\\r\\n`` lines."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Accept: application/vnd.pay+json\r\n{extra_headers}Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The status code and the body."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return int(lines[0].split()[1]), await reader.readexactly(length)
