"""Every API answer the merchant helpers receive, kept to check at the end of the session against the
OpenAPI document the gateway generates (``kassa.api.openapi``): an answer whose field the document does not
name, or that lacks one it requires, or whose value is not of its kind, fails the run, naming the
operation and the field. A classic answer (``key=value``) is checked as the JSON answer it stands for: a
refusal as the refusal's schema (classic refusals are HTTP 200), the row's number fields as numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import unquote_plus

import httpx
import jsonschema_rs

from kassa.api.openapi import document
from kassa.api.operations import OPERATIONS
from kassa.api.rendering import JSON_MEDIA_TYPE

_CLASSIC_MEDIA_TYPE = "text/html"
# The HTTP status whose schema a classic answer is checked against, by its type.
_CLASSIC_REFUSALS = {"validation-error": 400, "error": 500}

# The operation's path, then the endpoint's or the group's id (any text: refusals of odd ids are answers too).
_OPERATION_PATH = re.compile(r"(/api/.+?)/(?:group/)?[^/]*$")
_PATHS = {op.path: op for op in OPERATIONS}


@dataclass(frozen=True, slots=True)
class Received:
    path: str  # the operation's, below the prefix
    status: int  # a classic answer's: the one its JSON form would have
    body: dict[str, Any]
    classic: bool = False


_received: list[Received] = []


def recorded() -> list[Received]:
    """The answers kept so far in this process, oldest first."""
    return list(_received)


def record(response: httpx.Response) -> httpx.Response:
    """Keeps ``response`` when it is an answer of an operation."""
    if response.request.method != "POST":  # another method on an operation's path is no operation's answer
        return response
    found = _OPERATION_PATH.search(response.request.url.path)
    media_type = response.headers.get("content-type", "").split(";")[0].strip()
    if found is None or found.group(1) not in _PATHS:
        return response
    path = found.group(1)
    if media_type == JSON_MEDIA_TYPE and isinstance(body := response.json(), dict):
        _received.append(Received(path, response.status_code, body))
    elif media_type == _CLASSIC_MEDIA_TYPE and response.status_code in (200, 401):
        fields = _classic(response.content, _PATHS[path].response.numbers)
        status = _CLASSIC_REFUSALS.get(str(fields.get("type")), 200) if response.status_code == 200 else 401
        _received.append(Received(path, status, fields, classic=True))
    return response


@contextmanager
def recording_every_answer() -> Iterator[None]:
    """Every answer an httpx client of this process receives, whatever sent the request (the merchant
    helpers, or a test's own ``httpx.post``), is recorded while this lasts: the requests still go to the
    real gateway; only what comes back is kept as well. Streamed answers are left out (not read here)."""
    sync_send, async_send = httpx.Client.send, httpx.AsyncClient.send

    def send(client: httpx.Client, request: httpx.Request, **options: Any) -> httpx.Response:
        response = sync_send(client, request, **options)
        return response if options.get("stream") else record(response)

    async def send_async(client: httpx.AsyncClient, request: httpx.Request, **options: Any) -> httpx.Response:
        response = await async_send(client, request, **options)
        return response if options.get("stream") else record(response)

    httpx.Client.send, httpx.AsyncClient.send = send, send_async  # type: ignore[method-assign]
    try:
        yield
    finally:
        httpx.Client.send, httpx.AsyncClient.send = sync_send, async_send  # type: ignore[method-assign]


def _classic(body: bytes, numbers: frozenset[str]) -> dict[str, Any]:
    """A classic answer's fields (``key=value\n&...``), those its row writes as JSON numbers as numbers."""
    fields: dict[str, Any] = {}
    for part in body.decode().split("&"):
        name, _, value = part.partition("=")
        fields[name] = unquote_plus(value.removesuffix("\n"))
    for name in numbers & fields.keys():
        if fields[name].isdigit():
            fields[name] = int(fields[name])
    return fields


def problems(received: list[Received] | None = None) -> list[str]:
    """What is wrong with the answers ``received`` (those recorded, by default), one line each, naming the
    operation, the HTTP status and the field."""
    found: list[str] = []
    for answer in _received if received is None else received:
        validator = _validator(answer.path, answer.status)
        if validator is None:
            found.append(f"{answer.path} answered HTTP {answer.status}, which the document does not declare")
            continue
        for error in validator.iter_errors(answer.body):
            where = "/".join(str(part) for part in error.instance_path) or "the answer"
            form = "classic, as HTTP" if answer.classic else "HTTP"
            kind = f"{form} {answer.status}, type {answer.body.get('type')}"
            found.append(f"{answer.path} ({kind}): {where}: {error.message}")
    return sorted(set(found))


@cache
def _validator(path: str, status: int) -> Any:
    """The validator of the schema the document gives ``path``'s answers of HTTP ``status``; None if none."""
    doc = _document()
    declared = doc["paths"][f"{path}/{{endpointId}}"]["post"]["responses"].get(str(status))
    if declared is None:
        return None
    ref = declared["content"][JSON_MEDIA_TYPE]["schema"]["$ref"]
    schema = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return jsonschema_rs.validator_for(schema, validate_formats=True)


@cache
def _document() -> dict[str, Any]:
    return document("", 300)
