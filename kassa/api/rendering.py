"""Answers in the two formats of CONTRACT §1: JSON (vnd.pay+json) and the classic key=value text."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote_plus

import orjson
from starlette.responses import Response

JSON_MEDIA_TYPE = "application/vnd.pay+json"


def render(
    fields: Mapping[str, str], *, classic: bool, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    if classic:
        # Classic clients read any status but 200 as a network failure, so refusals are 200 too.
        body = "&".join(f"{name}={quote_plus(value)}\n" for name, value in fields.items())
        return Response(body.encode(), 200, dict(headers or {}), "text/html; charset=utf-8")
    response = Response(orjson.dumps(dict(fields)), status, dict(headers or {}))
    response.headers["content-type"] = f"{JSON_MEDIA_TYPE}; charset=utf-8"
    return response


def wants_json(accept: str) -> bool:
    """Media types are case-insensitive (RFC 9110 §8.3.1)."""
    if accept == JSON_MEDIA_TYPE:  # what clients send nearly always
        return True
    return any(part.split(";")[0].strip().lower() == JSON_MEDIA_TYPE for part in accept.split(","))
