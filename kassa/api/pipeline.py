"""The path of every operation request: parse, resolve the endpoint, check fields and signature, run the
handler, render. Handlers see only requests that passed every check."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from kassa.api.context import OperationRequest
from kassa.api.errors import ApiError, Code, internal_error
from kassa.api.fields import validate
from kassa.api.operations import Operation
from kassa.api.parsing import parse_form, read_body
from kassa.api.rendering import render, wants_json
from kassa.api.signatures import verify
from kassa.domain.merchants import Endpoint
from kassa.logs import serial_var
from kassa.runtime import Services

log = logging.getLogger("kassa.api")


async def handle(op: Operation, request: Request, services: Services) -> Response:
    serial = str(uuid.uuid4())
    token = serial_var.set(serial)
    started = time.perf_counter()
    json_asked = wants_json(request.headers.get("accept", ""))
    state: dict[str, Any] = {"classic": False, "client_orderid": None}
    try:
        response = await _run(op, request, services, serial, json_asked, state)
    except ApiError as refusal:
        response = _refusal(refusal, serial, state)
    except Exception:
        log.exception("request failed", extra={"operation": op.code})
        response = _refusal(internal_error(), serial, state)
    log.info(
        "request",
        extra={
            "operation": op.code,
            "http_status": response.status_code,
            "ms": round((time.perf_counter() - started) * 1000, 2),
        },
    )
    serial_var.reset(token)
    return response


async def _run(
    op: Operation, request: Request, services: Services, serial: str, json_asked: bool, state: dict[str, Any]
) -> Response:
    if op.handler is None:
        raise ApiError(Code.NOT_IMPLEMENTED, f"operation {op.code} is not implemented yet", http_status=501)
    body = await read_body(request)
    path_id = request.path_params["endpoint_id"]
    endpoint = await _endpoint(services, path_id)
    if not json_asked and not (endpoint is not None and endpoint.speaks_classic):
        raise ApiError(Code.ACCEPT, "the Accept header must be application/vnd.pay+json")
    state["classic"] = not json_asked
    if endpoint is None or not endpoint.enabled:
        raise ApiError(Code.ENDPOINT, f"unknown or disabled endpoint {path_id}")
    form = _canonical_form(op, parse_form(body))
    state["client_orderid"] = form.get("client_orderid") or None
    values = validate(op.fields, form)
    verify(op, endpoint, path_id, form, values)
    reply = await op.handler(OperationRequest(op, serial, endpoint, values, form, services))
    return render(reply, classic=state["classic"])


async def _endpoint(services: Services, path_id: str) -> Endpoint | None:
    if not (path_id.isascii() and path_id.isdigit()) or len(path_id) > 18:
        return None
    return await services.directory.get(int(path_id))


def _canonical_form(op: Operation, pairs: list[tuple[str, str]]) -> dict[str, str]:
    form: dict[str, str] = {}
    for name, value in pairs:
        form.setdefault(op.canonical(name), value)
    return form


def _refusal(refusal: ApiError, serial: str, state: dict[str, Any]) -> Response:
    fields = {"type": refusal.response_type, "serial-number": serial}
    if state["client_orderid"] and refusal.code < Code.INTERNAL:
        fields["merchant-order-id"] = state["client_orderid"]
    fields["error-message"] = refusal.message
    fields["error-code"] = str(int(refusal.code))
    return render(fields, classic=state["classic"], status=refusal.http_status, headers=refusal.headers)
