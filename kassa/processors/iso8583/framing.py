"""Messages on a stream: each preceded by a 2-byte unsigned big-endian length of the message that follows
(CONTRACT §15)."""

from __future__ import annotations

import asyncio
import struct

_LENGTH = struct.Struct(">H")
MAX_LENGTH = 0xFFFF


class FramingError(Exception):
    """The stream does not hold a well-framed message: the connection is unusable."""


async def read_message(reader: asyncio.StreamReader, max_length: int = MAX_LENGTH) -> bytes | None:
    """The next message, or None when the peer closed the connection between messages."""
    try:
        head = await reader.readexactly(_LENGTH.size)
    except asyncio.IncompleteReadError as closed:
        if not closed.partial:
            return None
        raise FramingError("the connection closed inside a message's length") from None
    (length,) = _LENGTH.unpack(head)
    _check(length, max_length)
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as closed:
        raise FramingError(f"the connection closed after {len(closed.partial)} of {length} bytes") from None


async def write_message(writer: asyncio.StreamWriter, message: bytes, max_length: int = MAX_LENGTH) -> None:
    if write_nowait(writer, message, max_length):
        await writer.drain()


def write_nowait(writer: asyncio.StreamWriter, message: bytes, max_length: int = MAX_LENGTH) -> bool:
    """Writes ``message`` with its length; whether the transport holds some of it back, the socket's buffer
    full (the caller drains, or writes on into the transport's buffer)."""
    _check(len(message), max_length)
    # One write of length and message: messages written by concurrent tasks never interleave.
    writer.write(_LENGTH.pack(len(message)) + message)
    return writer.transport.get_write_buffer_size() > 0


def _check(length: int, max_length: int) -> None:
    if length == 0:
        raise FramingError("a message of length 0")
    if length > min(max_length, MAX_LENGTH):
        raise FramingError(f"a message of {length} bytes, more than {min(max_length, MAX_LENGTH)}")
