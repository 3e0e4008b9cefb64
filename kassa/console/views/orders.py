"""Orders: the search (a page, and its CSV), one order in full with its callbacks, and what operators may
do to it: redeliver its callbacks (support), capture, void or return it (admin) through the same core path
as the API's follow-ups, so the same order rules, ledger postings, callbacks and processor job apply."""

from __future__ import annotations

import csv
import datetime
import io
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import Any

from sqlalchemy import Connection
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from kassa import randomness
from kassa.clock import date_time_text, now_ms
from kassa.console.access import Console, Visit, action, page
from kassa.core import followups
from kassa.core.errors import NoSuchOrder
from kassa.core.followups import OrderRef, Plan
from kassa.domain import cards, money
from kassa.domain.lifecycle import Stage, Status, status_of
from kassa.domain.operators import Action, Role
from kassa.domain.order_view import TransactionView
from kassa.domain.orders import OrderRuleError, OrderState, plan_capture, plan_return, plan_void
from kassa.domain.transactions import TxType
from kassa.storage import acquirer_messages, audit_log, order_search
from kassa.storage import authentications as authentication_store
from kassa.storage import callbacks as callback_store
from kassa.storage import ledger as ledger_store
from kassa.storage import orders as order_store
from kassa.storage import risk as risk_store
from kassa.storage.order_search import Found, Search

CSV_CAP = 100_000  # rows of one export at most; narrow the search for more
_CSV_CHUNK = 1_000  # orders read per database transaction while the export streams
_DAY_MS = 86_400_000
_DIGITS = re.compile(r"[0-9]{1,18}")
_DECIMAL = re.compile(r"[0-9]{1,15}(\.[0-9]{1,3})?")
_FILTERS = ("orderid", "client_orderid", "merchant", "endpoint", "status", "type", "from", "to", "card", "min", "max")


@dataclass(frozen=True, slots=True)
class Query:
    """A search as the form posted it: the text of each field, the parsed search, and what was wrong."""

    fields: dict[str, str]
    search: Search
    problems: list[str]

    @property
    def given(self) -> bool:
        return any(self.fields.values())


def parse(params: QueryParams) -> Query:
    """The search from the form's fields; a problem per field that does not parse, naming it."""
    fields = {name: params.get(name, "").strip() for name in _FILTERS}
    problems: list[str] = []
    values: dict[str, Any] = {}
    if text := fields["orderid"]:
        values["order_id"] = _number(text, "Order id", problems)
    values["client_orderid"] = fields["client_orderid"] or None
    values["merchant_login"] = fields["merchant"] or None
    if text := fields["endpoint"]:
        values["endpoint_id"] = _number(text, "Endpoint id", problems)
    if text := fields["status"]:
        _choose(text, [s.value for s in Status], "Status", problems)
        values["status"] = text
    if text := fields["type"]:
        _choose(text, [t.value for t in TxType], "Type", problems)
        values["tx_type"] = text
    if text := fields["from"]:
        values["from_ms"] = _day_ms(text, "From date", problems)
    if text := fields["to"]:
        day = _day_ms(text, "To date", problems)
        values["until_ms"] = None if day is None else day + _DAY_MS
    if text := fields["card"]:
        if re.fullmatch(r"[0-9]{6}", text):
            values["bin"] = text
        elif re.fullmatch(r"[0-9]{4}", text):
            values["last_four"] = text
        else:
            problems.append("Card: give the first six digits (BIN) or the last four, digits only.")
    for name, key, label in (("min", "min_amount", "Amount from"), ("max", "max_amount", "Amount to")):
        if text := fields[name]:
            if _DECIMAL.fullmatch(text):
                values[key] = Decimal(text)
            else:
                problems.append(f"{label}: a decimal amount like 10.42.")
    return Query(fields, Search(**values), problems)


def _number(text: str, label: str, problems: list[str]) -> int | None:
    if _DIGITS.fullmatch(text):
        return int(text)
    problems.append(f"{label}: digits only.")
    return None


def _choose(text: str, choices: list[str], label: str, problems: list[str]) -> None:
    if text not in choices:
        problems.append(f"{label}: one of {', '.join(choices)}.")


def _day_ms(text: str, label: str, problems: list[str]) -> int | None:
    try:
        day = datetime.date.fromisoformat(text) if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text) else None
    except ValueError:
        day = None
    if day is None:
        problems.append(f"{label}: a date like 2026-01-31 (UTC).")
        return None
    return int(datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC).timestamp() * 1000)


def card_of(found: Found) -> str:
    return cards.mask_stored(found.bin, found.last_four, found.brand) if found.bin and found.last_four else ""


def listed_order(found: Found) -> dict[str, Any]:
    """An order as a list of orders shows it: its card masked, its status (``orders.html``)."""
    return {"row": found, "card": card_of(found), "status": status_of(Stage(found.stage)).value}


@page(Role.VIEWER)
async def order_list(console: Console, visit: Visit) -> Response:
    params = visit.request.query_params
    query = parse(params)
    size = min(int(params["size"]), order_search.PAGE_SIZE) if _DIGITS.fullmatch(params.get("size", "")) else 0
    size = size or order_search.PAGE_SIZE
    before = params.get("before", "")
    before_id = int(before) if _DIGITS.fullmatch(before) else None
    context: dict[str, Any] = {
        "fields": query.fields,
        "problems": query.problems,
        "statuses": [s.value for s in Status],
        "types": [t.value for t in TxType],
        "rows": [],
        "more": None,
        "searched": False,
        "filters": _filters_text(query, size),
    }
    if query.problems:
        return visit.page_of("orders.html", context, 400)
    found = await console.read(partial(order_search.search, wanted=query.search, before_id=before_id, limit=size + 1))
    context["rows"] = [listed_order(f) for f in found[:size]]
    context["more"] = found[size - 1].id if len(found) > size else None
    context["searched"] = True
    return visit.page_of("orders.html", context)


def _filters_text(query: Query, size: int) -> str:
    """The query string of the search, for its next page and its CSV."""
    kept = {name: value for name, value in query.fields.items() if value}
    if size != order_search.PAGE_SIZE:
        kept["size"] = str(size)
    return str(QueryParams(kept))


_CSV_HEADER = (
    "order_id", "created_utc", "merchant", "endpoint_id", "client_orderid", "type", "latest_transaction",
    "status", "amount", "currency", "card",
)  # fmt: skip


@page(Role.VIEWER)
async def order_csv(console: Console, visit: Visit) -> Response:
    query = parse(visit.request.query_params)
    if query.problems:
        return Response("\n".join(query.problems) + "\n", 400, media_type="text/plain; charset=utf-8")
    name = f"orders-{date_time_text(now_ms())[:10]}.csv"
    headers = {"content-disposition": f'attachment; filename="{name}"', "cache-control": "no-store"}
    return StreamingResponse(_csv_lines(console, query.search), media_type="text/csv; charset=utf-8", headers=headers)


async def _csv_lines(console: Console, wanted: Search) -> AsyncIterator[str]:
    """The search, newest first, a chunk per database transaction (keyset, as the pages), ``CSV_CAP`` at most."""
    yield _csv_line(_CSV_HEADER)
    before_id, sent = None, 0
    while sent < CSV_CAP:
        limit = min(_CSV_CHUNK, CSV_CAP - sent)
        found = await console.read(partial(order_search.search, wanted=wanted, before_id=before_id, limit=limit))
        for f in found:
            amount = money.format_amount(f.amount, money.currency(f.currency))
            created = date_time_text(f.created_at_ms)
            status = status_of(Stage(f.stage)).value
            row = (f.id, created, f.merchant_login, f.endpoint_id, f.client_orderid, f.tx_type, f.latest_type)
            yield _csv_line((*row, status, amount, f.currency, card_of(f)))
        sent += len(found)
        if len(found) < limit:
            return
        before_id = found[-1].id


def _csv_line(cells: tuple[Any, ...]) -> str:
    out = io.StringIO()
    # A cell a spreadsheet would run as a formula (a client_orderid is the merchant's text) is quoted.
    csv.writer(out).writerow(["'" + c if isinstance(c, str) and c[:1] in ("=", "+", "-", "@") else c for c in cells])
    return out.getvalue()


# What the console may do to an order, each the same order rule as the API's follow-up of that name.
_PLANS: dict[str, tuple[Action, Plan]] = {
    "capture": (Action.CAPTURE, lambda state, amount: (TxType.CAPTURE, plan_capture(state, amount))),
    "void": (Action.VOID, lambda state, _amount: (TxType.VOID, plan_void(state))),
    "return": (Action.RETURN, plan_return),
}


def _allowed(state: OrderState, code: str) -> dict[str, str]:
    """The follow-ups the order's state allows now, each with what it would do (type and amount)."""
    allowed = {}
    for name, (_act, plan) in _PLANS.items():
        try:
            tx_type, amount = plan(state, None)
        except OrderRuleError:
            continue
        allowed[name] = f"{tx_type.value} of {money.format_amount(amount, money.currency(code))} {code}"
    return allowed


def _order_detail(conn: Connection, order_id: int) -> dict[str, Any] | None:
    view = order_store.view_by_id(conn, order_id)
    if view is None:
        return None
    full = order_search.order_row(conn, order_id)
    assert full is not None  # the view found it in this transaction
    state = order_store.order_state(conn, full)
    found = callback_store.listing(conn, order_id, None, limit=100)
    calls = [{"row": c, "attempts": callback_store.attempts_of(conn, c["id"])} for c in reversed(found)]
    destination = view.destination
    return {
        "order": full,
        "merchant": order_search.merchant_login(conn, full["merchant_id"]),
        "card": view.card.masked if view.card else "",
        "destination": {"kind": destination.kind, "masked": destination.masked} if destination else None,
        "transactions": [_transaction(conn, tx) for tx in view.transactions],
        "ledger": ledger_store.order_entries(conn, order_id),
        "callbacks": calls,
        "allowed": _allowed(state, full["currency"]),
        "order_status": view.status.value,
        "filtered_by": risk_store.filtered_by(conn, order_id),
    }


def _transaction(conn: Connection, tx: TransactionView) -> dict[str, Any]:
    return {
        "row": tx,
        "status": tx.status.value,
        "order_stage": tx.order_stage,
        "three_ds": authentication_store.of_transaction(conn, tx.id),
        "tries": acquirer_messages.tries_of(conn, tx.id),
    }


async def _detail_page(console: Console, visit: Visit, order_id: int, status: int = 200, **extra: Any) -> Response:
    detail = await console.read(partial(_order_detail, order_id=order_id))
    if detail is None:
        return visit.page("refused.html", 404, reason=f"There is no order {order_id}.")
    return visit.page_of("order.html", {**detail, "problem": None, "confirm": None, **extra}, status)


@page(Role.VIEWER)
async def order_detail(console: Console, visit: Visit) -> Response:
    return await _detail_page(console, visit, int(visit.request.path_params["order_id"]))


@action(Action.REDELIVER)
async def order_redeliver(console: Console, visit: Visit) -> Response:
    order_id = int(visit.request.path_params["order_id"])
    if visit.form.get("confirmed") != "yes":
        confirm = {"what": "redeliver", "label": "Redeliver every callback of this order", "amount": ""}
        return await _detail_page(console, visit, order_id, confirm=confirm)

    def redeliver(conn: Connection) -> tuple[dict[str, list[str]], dict[str, int]]:
        states = [c["state"] for c in callback_store.listing(conn, order_id, None, limit=100)]
        return {"states": states}, {"redelivered": callback_store.redeliver(conn, now_ms(), order_id=order_id)}

    await console.audited(visit, Action.REDELIVER, f"order {order_id}", redeliver)
    console.services.wake_workers()
    return RedirectResponse(f"/orders/{order_id}", status_code=303)


def _follow_up_action(name: str) -> Callable[[Console, Request], Awaitable[Response]]:
    act, plan = _PLANS[name]

    @action(act)
    async def follow_up(console: Console, visit: Visit) -> Response:
        order_id = int(visit.request.path_params["order_id"])
        amount_text = visit.form.get("amount", "").strip()
        if visit.form.get("confirmed") != "yes":
            label = {"capture": "Capture", "void": "Void", "return": "Return"}[name]
            confirm = {"what": name, "label": f"{label} this order", "amount": amount_text}
            return await _detail_page(console, visit, order_id, confirm=confirm)
        return await _follow_up(console, visit, order_id, act, plan, amount_text)

    return follow_up


async def _follow_up(
    console: Console, visit: Visit, order_id: int, act: Action, plan: Plan, amount_text: str
) -> Response:
    """The API's follow-up (``core.followups.follow_up``) on the order, under its lock; refusals re-render
    the order with their reason and are audited as refused."""
    serial, now = randomness.uuid4(), now_ms()
    target = f"order {order_id}"

    def change(conn: Connection) -> tuple[dict[str, Any], dict[str, Any]]:
        order = order_search.order_row(conn, order_id)
        if order is None:
            raise NoSuchOrder(f"there is no order {order_id}")
        amount = money.parse_amount(amount_text, money.currency(order["currency"])) if amount_text else None
        ref = OrderRef([order["endpoint_id"]], order_id, order["client_orderid"])
        before = {"transactions": len(order_store.transactions_of(conn, order_id))}
        followups.follow_up(conn, ref, plan, amount, None, serial, now)
        added = order_store.transactions_of(conn, order_id)[-1]
        return before, {"transaction": added["tx_type"], "amount": added["amount"], "serial": serial}

    try:
        await console.audited(visit, act, target, change)
    except (OrderRuleError, money.AmountError, NoSuchOrder) as refused:
        reason = refused.message if isinstance(refused, OrderRuleError) else str(refused)
        if isinstance(refused, money.AmountError):
            reason = f"Amount {reason}"
        await console.audit(visit, act, target, audit_log.REFUSED, after={"reason": reason})
        return await _detail_page(console, visit, order_id, 409, problem=reason)
    console.services.wake_workers()
    return RedirectResponse(f"/orders/{order_id}", status_code=303)


ROUTES = [
    ("/orders", "GET", order_list),
    ("/orders.csv", "GET", order_csv),
    ("/orders/{order_id:int}", "GET", order_detail),
    ("/orders/{order_id:int}/redeliver", "POST", order_redeliver),
    *((f"/orders/{{order_id:int}}/{name}", "POST", _follow_up_action(name)) for name in _PLANS),
]
