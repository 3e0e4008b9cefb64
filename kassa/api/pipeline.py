"""The path of every operation request: resolve the endpoint, admit, read the body, check an OAuth
signature, check fields and a control signature, run the handler (once per Idempotency-Key), render.
Handlers see only requests that passed every check."""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from functools import partial

from starlette.types import Receive, Scope

from kassa import metrics, randomness
from kassa.api import idempotency, signatures
from kassa.api.admission import admit, client_host, rate_limited, shed
from kassa.api.context import OperationRequest, PendingNonce
from kassa.api.errors import ApiError, Code, field_error, internal_error
from kassa.api.fields import validate
from kassa.api.operations import OAuth, Operation
from kassa.api.rendering import Answer, render, wants_json
from kassa.domain.merchants import Endpoint
from kassa.engine import targets
from kassa.logs import log_request, serial_var
from kassa.runtime import Services
from kassa.web.addresses import addressed, base_url
from kassa.web.forms import FormError, check_form_type, form_pairs, read_body, request_headers

log = logging.getLogger("kassa.api")

CALLBACK_FIELDS = ("server_callback_url", "notify_url")


@dataclass(slots=True)
class Exchange:
    """What is known of the request so far, for answering it: refusals too need the format."""

    serial: str
    classic: bool = False
    numbers: frozenset[str] = frozenset()  # the operation's fields written as JSON numbers
    client_orderid: str | None = None
    error_code: int = 0  # of the refusal given, for the request's figures

    def refusal(self, error: ApiError) -> Answer:
        self.error_code = int(error.code)
        fields = {"type": error.response_type, "serial-number": self.serial}
        if self.client_orderid and error.code < Code.INTERNAL:
            fields["merchant-order-id"] = self.client_orderid
        fields["error-message"] = error.message
        fields["error-code"] = str(int(error.code))
        return render(
            fields, classic=self.classic, status=error.http_status, headers=error.headers, numbers=self.numbers
        )


async def handle(op: Operation, scope: Scope, receive: Receive, services: Services, path_id: str) -> Answer:
    exchange = Exchange(randomness.uuid4(), numbers=op.response.numbers)
    token = serial_var.set(exchange.serial)
    started = time.perf_counter()
    try:
        response = await _run(op, scope, receive, services, exchange, path_id)
    except ApiError as refusal:
        response = exchange.refusal(refusal)
    except Exception:
        log.exception("request failed", extra={"operation": op.code})
        response = exchange.refusal(internal_error())
    _done(exchange, op.code, response, started)
    serial_var.reset(token)
    return response


def _done(exchange: Exchange, operation: str, answer: Answer, started: float) -> None:
    metrics.requests.record(operation, answer.status_code, exchange.error_code, time.perf_counter() - started)
    log_request(exchange.serial, operation, answer.status_code, started)


def refuse_path(scope: Scope, error: ApiError) -> Answer:
    """A request to no operation (unknown path, other method), refused in the format its Accept asks
    for: JSON unless it names another type (as on v4). Either way with the HTTP status of the refusal,
    since there is no merchant yet whose classic setting could apply."""
    started = time.perf_counter()
    accept = request_headers(scope).get("accept", "*/*")
    exchange = Exchange(randomness.uuid4(), classic=not (accept in ("", "*/*") or wants_json(accept)))
    answer = dataclasses.replace(exchange.refusal(error), status_code=error.http_status)
    _done(exchange, "-", answer, started)
    return answer


async def _run(
    op: Operation, scope: Scope, receive: Receive, services: Services, exchange: Exchange, path_id: str
) -> Answer:
    headers = request_headers(scope)
    accept = headers.get("accept", "")
    json_asked = wants_json(accept) or (op.json_by_default and accept in ("", "*/*"))
    host = client_host(scope)
    if wait := services.limits.address_wait_ms(host):
        exchange.classic = not json_asked and _known_classic(services, path_id)
        raise rate_limited(wait, "address_rate")
    endpoint = await _endpoint(services, path_id)
    if not json_asked and not (endpoint is not None and endpoint.speaks_classic):
        raise ApiError(Code.ACCEPT, "the Accept header must be application/vnd.pay+json")
    exchange.classic = not json_asked  # known before the body is read: a classic client gets every refusal classic
    if endpoint is None or not endpoint.enabled:
        raise ApiError(Code.ENDPOINT, f"unknown or disabled endpoint {path_id}")
    if op.opens_order and services.shedder.shedding:  # in the merchant's format, and before the body
        raise shed(services.shedder)
    admit(services.limits, endpoint, host)
    try:
        check_form_type(headers.get("content-type"))
        body = await read_body(receive, headers.get("content-length", ""))
        pairs = form_pairs(body)
    except FormError as unreadable:
        raise ApiError(Code.FIELD, str(unreadable)) from None
    form = _canonical_form(op, pairs)
    exchange.client_orderid = form.get("client_orderid") or None
    nonce = None
    if isinstance(op.signing, OAuth):  # signed over the body as sent: before anything reads its fields
        nonce = PendingNonce(await signatures.check_oauth(op, endpoint, path_id, services, scope, headers, pairs))
    try:
        values = validate(op.fields, form)
        order_signature = signatures.verify(op, endpoint, path_id, form, values)
        await _guard_callback_targets(endpoint, values)
        base = base_url(services.settings, *addressed(scope, headers))
        checked = OperationRequest(op, exchange.serial, endpoint, values, form, services, base, order_signature, nonce)
        produce = partial(_answer, checked, exchange)
        if op.replay_guarded and (window_ms := endpoint.replay_window_ms):
            signed = signatures.replay_digest(op, path_id, form, values)
            produce = partial(_answer_in_window, checked, exchange, window_ms, signed)
        key = headers.get("idempotency-key")
        if key is None:
            return await produce()
        digest = idempotency.request_hash(scope["path"], signatures.idempotent_content(op, body, pairs))
        merchant_id = endpoint.merchant.id
        return await idempotency.run_once(services, merchant_id, idempotency.header_key(key), digest, produce)
    finally:  # an answer that wrote nothing (a refusal, a kept answer) spends the nonce alone
        if nonce is not None:
            await nonce.settle(services)


async def _answer(checked: OperationRequest, exchange: Exchange) -> Answer:
    """The handler's answer, refusals included (they are answers a repeated key must get again)."""
    try:
        return await _reply(checked, exchange)
    except ApiError as refusal:
        return _kept_refusal(exchange, refusal)


async def _answer_in_window(checked: OperationRequest, exchange: Exchange, window_ms: int, signed: str) -> Answer:
    """A follow-up whose signed values and control repeat one answered within the endpoint's replay window
    gets that answer, and moves no money again. Only accepted requests are kept: a refused one moved
    nothing and may rightly be sent again (a return refused while its sale was ``unknown``)."""
    key = idempotency.replay_key(checked.op.code, signed)
    try:
        reply = partial(_reply, checked, exchange)
        return await idempotency.run_once(checked.services, checked.merchant_id, key, signed, reply, ttl_ms=window_ms)
    except ApiError as refusal:
        return _kept_refusal(exchange, refusal)


async def _reply(checked: OperationRequest, exchange: Exchange) -> Answer:
    try:
        fields = (await checked.op.handler(checked)).write({"type": checked.op.response.type})
    finally:  # before the answer is kept for a key: a replay's must not be
        if checked.nonce is not None:
            await checked.nonce.settle(checked.services)
    return render(fields, classic=exchange.classic, numbers=exchange.numbers)


def _kept_refusal(exchange: Exchange, refusal: ApiError) -> Answer:
    """A refusal as an answer to keep for a repeated key, but not one of a request found unauthenticated
    only once the handler ran: a signature found wrong once the order was read (code 2), an OAuth nonce
    found spent or its key revoked (codes 10 and 2). Such a request must not hold a key (``handle``
    answers it)."""
    if refusal.code in (Code.SIGNATURE, Code.REPLAY):
        raise refusal
    return exchange.refusal(refusal)


async def _guard_callback_targets(endpoint: Endpoint, values: dict[str, object]) -> None:
    """Live endpoints call back public web addresses only (SSRF); sandbox ones anywhere (tests use localhost)."""
    if not endpoint.touches_live:
        return
    for name in CALLBACK_FIELDS:
        url = values.get(name)
        if isinstance(url, str) and (problem := await targets.refusal(url)):
            raise field_error(name, problem)


async def _endpoint(services: Services, path_id: str) -> Endpoint | None:
    endpoint_id = _endpoint_id(path_id)
    return None if endpoint_id is None else await services.directory.get(endpoint_id)


def _known_classic(services: Services, path_id: str) -> bool:
    """Whether a request refused before its endpoint is looked up gets the classic format: as far as the
    cache knows, since reading the database is what the refusal spares."""
    endpoint_id = _endpoint_id(path_id)
    cached = None if endpoint_id is None else services.directory.cached(endpoint_id)
    return cached is not None and cached.speaks_classic


def _endpoint_id(path_id: str) -> int | None:
    return int(path_id) if path_id.isascii() and path_id.isdigit() and len(path_id) <= 18 else None


def _canonical_form(op: Operation, pairs: list[tuple[str, str]]) -> dict[str, str]:
    form: dict[str, str] = {}
    for name, value in pairs:
        form.setdefault(op.canonical(name), value.strip())
    return form
