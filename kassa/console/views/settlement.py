"""Settlement runs (the transactions one run settled share its time), each run's transactions as CSV, and
admins' "settle now", as ``kassa settle`` does."""

from __future__ import annotations

import csv
import io
from functools import partial
from typing import Any

from sqlalchemy import Connection
from starlette.responses import RedirectResponse, Response

from kassa.clock import date_time_text, now_ms
from kassa.console.access import Console, Visit, action, page
from kassa.console.rendering import HEADERS
from kassa.core import settlement
from kassa.domain import cards, money
from kassa.domain.operators import Action
from kassa.storage import merchants as merchant_store
from kassa.storage import settlement as settlement_store

PAGE_SIZE = 50
_CSV_COLUMNS = (
    "order_id", "client_orderid", "merchant", "endpoint_id", "type", "amount", "currency", "settled_at", "card"
)  # fmt: skip
# A spreadsheet runs a cell that starts with one of these as a formula: merchant-chosen text is quoted.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@page()
async def runs(console: Console, visit: Visit) -> Response:
    query = visit.request.query_params
    settled, at = _number(query.get("settled", "")), _number(query.get("at", ""))
    return await _runs_page(console, visit, _number(query.get("before", "")), settled=settled, at=at)


async def _runs_page(
    console: Console, visit: Visit, before_ms: int | None, status: int = 200, **shown: Any
) -> Response:
    found = await console.read(partial(settlement_store.runs, before_ms=before_ms, limit=PAGE_SIZE + 1))
    more = found[PAGE_SIZE - 1].settled_at_ms if len(found) > PAGE_SIZE else None
    context = {"section": "settlement", "runs": found[:PAGE_SIZE], "more": more, "settled": None, "at": None}
    return visit.page_of("settlement.html", {**context, "problem": None, **shown}, status)


def _number(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else None


@action(Action.SETTLE)
async def settle_now(console: Console, visit: Visit) -> Response:
    text = visit.form.get("endpoint", "")
    endpoint_id = _number(text)
    problem = "Endpoint must be an endpoint id, or empty for every endpoint." if text and endpoint_id is None else None
    if endpoint_id is not None:
        problem = await console.read(partial(_not_an_endpoint, endpoint_id=endpoint_id))
    if problem:
        return await _runs_page(console, visit, None, 400, problem=problem)
    at = now_ms()  # the run's time: its transactions' settled_at_ms, and its CSV's name
    counted: list[int] = []

    def run(conn: Connection) -> tuple[None, dict[str, object]]:
        counted.append(settlement.settle(conn, at, endpoint_id))
        return None, {"settled_orders": counted[0], "endpoint": endpoint_id, "settled_at_ms": at}

    await console.audited(visit, Action.SETTLE, f"endpoint {endpoint_id}" if endpoint_id else "all endpoints", run)
    return RedirectResponse(f"/settlement?settled={counted[0]}&at={at}", status_code=303)


def _not_an_endpoint(conn: Connection, endpoint_id: int) -> str | None:
    try:
        kind = merchant_store.endpoint_kind(conn, endpoint_id)
    except merchant_store.NotFound:
        return f"Endpoint {endpoint_id} does not exist."
    return f"Endpoint {endpoint_id} is a group: settle its member endpoints." if kind == "group" else None


@page()
async def run_csv(console: Console, visit: Visit) -> Response:
    settled_at_ms = int(visit.request.path_params["settled_at_ms"])
    rows = await console.read(partial(settlement_store.run_rows, settled_at_ms=settled_at_ms))
    if not rows:
        return visit.page("refused.html", 404, reason=f"No settlement run at {settled_at_ms}.")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(_CSV_COLUMNS)
    for r in rows:
        card = cards.mask_stored(r.card_bin, r.card_last_four, r.card_brand) if r.card_bin and r.card_last_four else ""
        amount = money.format_amount(r.amount, money.currency(r.currency))
        settled_at = date_time_text(r.settled_at_ms)
        row = (r.order_id, _cell(r.client_orderid), _cell(r.merchant), r.endpoint_id, r.tx_type, amount, r.currency)
        writer.writerow((*row, settled_at, card))
    headers = {
        **HEADERS,
        "content-disposition": f'attachment; filename="settlement-{settled_at_ms}.csv"',
    }
    return Response(out.getvalue(), 200, headers=headers, media_type="text/csv; charset=utf-8")


def _cell(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) else text


ROUTES = [
    ("/settlement", "GET", runs),
    ("/settlement", "POST", settle_now),
    ("/settlement/{settled_at_ms:int}.csv", "GET", run_csv),
]
