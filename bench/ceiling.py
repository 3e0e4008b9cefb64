"""The ceiling: a trivial ASGI app served exactly as ``kassa serve`` serves Kassa (uvicorn, uvloop,
httptools, one process, no access log). It parses the form body with ``parse_qsl`` and answers a small
JSON object through orjson, so its throughput bounds what any Python handler can reach on this machine.

Run: ``python -m bench.ceiling --port P``.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any
from urllib.parse import parse_qsl

import orjson

from kassa.ops.processes import serve

Message = dict[str, Any]
CONTENT_TYPE = b"application/vnd.pay+json; charset=utf-8"


async def read_body(receive: Any) -> bytes:
    chunks: list[bytes] = []
    more = True
    while more:
        message: Message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


async def lifespan(receive: Any, send: Any) -> None:
    while True:
        message: Message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope: Message, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    fields = dict(parse_qsl((await read_body(receive)).decode()))
    payload = orjson.dumps(
        {
            "type": "async-response",
            "status": "processing",
            "merchant-order-id": fields.get("client_orderid", ""),
            "paynet-order-id": "1",
            "serial-number": str(uuid.uuid4()),
        }
    )
    headers = [(b"content-type", CONTENT_TYPE), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    serve(app, args.host, args.port)


if __name__ == "__main__":
    main()
