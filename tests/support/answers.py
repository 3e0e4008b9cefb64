"""Every API answer the merchant helpers receive, kept to check at the end of the session against the
OpenAPI document the gateway generates (``kassa.api.openapi``): an answer whose field the document does not
name, or that lacks one it requires, or whose value is not of its kind, fails the run, naming the
operation and the field."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx
import jsonschema_rs

from kassa.api.openapi import document
from kassa.api.operations import OPERATIONS
from kassa.api.rendering import JSON_MEDIA_TYPE

# The operation's path, then the endpoint's or the group's id (any text: refusals of odd ids are answers too).
_OPERATION_PATH = re.compile(r"(/api/.+?)/(?:group/)?[^/]*$")
_PATHS = {op.path: op for op in OPERATIONS}


@dataclass(frozen=True, slots=True)
class Received:
    path: str  # the operation's, below the prefix
    status: int
    body: dict[str, Any]


_received: list[Received] = []


def record(response: httpx.Response) -> httpx.Response:
    """Keeps ``response`` when it is a JSON answer of an operation (a classic one has no type of its own:
    its refusals are 200 too)."""
    found = _OPERATION_PATH.search(response.request.url.path)
    media_type = response.headers.get("content-type", "").split(";")[0].strip()
    if found is None or found.group(1) not in _PATHS or media_type != JSON_MEDIA_TYPE:
        return response
    body = response.json()
    if isinstance(body, dict):
        _received.append(Received(found.group(1), response.status_code, body))
    return response


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
            found.append(
                f"{answer.path} (HTTP {answer.status}, type {answer.body.get('type')}): {where}: {error.message}"
            )
    return sorted(set(found))


def clear() -> None:
    _received.clear()


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
