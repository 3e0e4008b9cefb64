"""Messages on a TCP stream are each preceded by a 2-byte big-endian length (CONTRACT §15); a stream that
breaks that is a clear error, never a message made of the wrong bytes."""

from __future__ import annotations

import asyncio

import pytest

from kassa.processors.iso8583.framing import FramingError, read_message, write_message


async def _read_from(sent: bytes, max_length: int = 0xFFFF) -> list[bytes | None]:
    """What ``read_message`` makes of a peer that sends ``sent`` and closes: messages, then None at the end."""

    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sent)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(peer, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    try:
        found: list[bytes | None] = []
        while not found or found[-1] is not None:
            found.append(await read_message(reader, max_length))
        return found
    finally:
        writer.close()
        server.close()


def test_messages_written_are_read_back_one_by_one_and_a_close_between_them_is_the_end() -> None:
    async def exchange() -> list[bytes | None]:
        received: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                message = await read_message(reader)
                await received.put(message)
                if message is None:
                    break
            writer.close()

        server = await asyncio.start_server(peer, "127.0.0.1", 0)
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        await asyncio.gather(*(write_message(writer, b"0800" + b"," * n) for n in (1, 300, 2)))
        writer.close()
        messages = [await received.get() for _ in range(4)]
        server.close()
        return messages

    assert asyncio.run(exchange()) == [b"0800,", b"0800" + b"," * 300, b"0800,,", None]


def test_the_length_is_two_bytes_big_endian() -> None:
    assert asyncio.run(_read_from(b"\x01\x02" + b"x" * 258)) == [b"x" * 258, None]


@pytest.mark.parametrize(
    ("sent", "problem"),
    [
        (b"\x00", "inside a message's length"),
        (b"\x00\x10" + b"0800", "closed after 4 of 16 bytes"),
        (b"\x00\x00", "length 0"),
        (b"\x01\x00" + b"x" * 256, "256 bytes, more than 255"),
    ],
)
def test_a_short_read_or_a_zero_or_oversized_length_is_a_framing_error(sent: bytes, problem: str) -> None:
    with pytest.raises(FramingError, match=problem):
        asyncio.run(_read_from(sent, max_length=255))


def test_a_message_that_cannot_be_framed_is_not_written() -> None:
    async def write(message: bytes) -> None:
        server = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        try:
            await write_message(writer, message)
        finally:
            writer.close()
            server.close()

    with pytest.raises(FramingError, match="length 0"):
        asyncio.run(write(b""))
    with pytest.raises(FramingError, match="more than 65535"):
        asyncio.run(write(b"x" * 65536))
