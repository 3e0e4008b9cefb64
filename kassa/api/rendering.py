"""Answers in the two formats of CONTRACT §1: JSON (vnd.pay+json) and the classic key=value text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote_plus

import orjson
from starlette.types import Send

JSON_MEDIA_TYPE = "application/vnd.pay+json"
_JSON_CONTENT_TYPE = f"{JSON_MEDIA_TYPE}; charset=utf-8"
_CLASSIC_CONTENT_TYPE = "text/html; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Answer:
    """An API answer as it goes out. Sent with two ASGI messages of its own: Starlette's ``Response``
    and its header objects cost 14% of a status call's interpreter time."""

    status_code: int
    body: bytes
    content_type: str
    headers: Mapping[str, str] = field(default_factory=dict)

    async def send(self, send: Send) -> None:
        raw = [(b"content-type", self.content_type.encode()), (b"content-length", str(len(self.body)).encode())]
        raw += [(name.lower().encode(), value.encode()) for name, value in self.headers.items()]
        await send({"type": "http.response.start", "status": self.status_code, "headers": raw})
        await send({"type": "http.response.body", "body": self.body})


def render(
    fields: Mapping[str, str],
    *,
    classic: bool,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    numbers: frozenset[str] = frozenset(),
) -> Answer:
    """``numbers``: the fields JSON writes as numbers (their values are decimal integers)."""
    if classic:
        # Classic clients read any status but 200 as a network failure, so refusals are 200 too; but an
        # OAuth refusal is 401 in either format (CONTRACT §4): only a client that signs with OAuth gets one.
        text = "&".join(f"{name}={quote_plus(value)}\n" for name, value in fields.items())
        return Answer(401 if status == 401 else 200, text.encode(), _CLASSIC_CONTENT_TYPE, headers or {})
    values: dict[str, str | int] = dict(fields)
    for name in numbers & values.keys():
        values[name] = int(fields[name])
    return Answer(status, orjson.dumps(values), _JSON_CONTENT_TYPE, headers or {})


def wants_json(accept: str) -> bool:
    """Media types are case-insensitive (RFC 9110 §8.3.1)."""
    if accept == JSON_MEDIA_TYPE:  # what clients send nearly always
        return True
    return any(part.split(";")[0].strip().lower() == JSON_MEDIA_TYPE for part in accept.split(","))
