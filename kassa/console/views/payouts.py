"""Payouts: orders that pay money out (payouts and transfers, as merchants see them reported), each with
its destination masked as stored; one payout with its transactions, linked to its order's page."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from starlette.responses import Response

from kassa.console.access import Console, Visit, page
from kassa.domain.cards import mask_stored
from kassa.domain.lifecycle import Stage, Status, stages_of_status, status_of
from kassa.domain.order_view import DestinationView, pays_to
from kassa.domain.transactions import TxType, reported
from kassa.storage import merchants as merchant_store
from kassa.storage import orders as order_store
from kassa.storage import payouts as payout_store
from kassa.storage.prepared import Record

PAGE_SIZE = 50
# The types merchants see reported as a payout or a transfer: money (or a check) leaving the balance or a card.
PAYOUT_TYPES = frozenset(t.value for t in TxType if reported(t) in {"payout", "transfer"})


def _shown(row: Record) -> dict[str, Any]:
    """A payout row as the pages show it: its status, and where it goes, masked as stored."""
    destination = DestinationView.of(row) if row["masked"] is not None else None
    card = mask_stored(row["bin"], row["last_four"], row["brand"]) if row["last_four"] is not None else None
    kind, account = pays_to(destination, card)
    status = status_of(Stage(row["stage"])).value
    return {
        **row,
        "status": status,
        "destination_kind": kind,
        "account": account,
        "reported": reported(TxType(row["tx_type"])),
    }


@page()
async def payout_list(console: Console, visit: Visit) -> Response:
    query_params = visit.request.query_params
    login = query_params.get("merchant", "").strip()
    status = query_params.get("status", "")
    status = status if status in {s.value for s in Status} else ""
    before = query_params.get("before", "")
    before_id = int(before) if before.isdigit() else None

    def query(conn: Connection) -> list[Record] | None:
        try:
            merchant_id = merchant_store.merchant_id(conn, login) if login else None
        except merchant_store.NotFound:
            return None
        stages = stages_of_status(status) if status else None
        return payout_store.listing(
            conn, PAYOUT_TYPES, merchant_id=merchant_id, stages=stages, before_id=before_id, limit=PAGE_SIZE + 1
        )

    found = await console.read(query)
    rows = found or []
    shown = {
        "section": "payouts",
        "rows": [_shown(r) for r in rows[:PAGE_SIZE]],
        "more": rows[PAGE_SIZE - 1]["id"] if len(rows) > PAGE_SIZE else None,
        "merchant": login,
        "status_filter": status,
        "statuses": [s.value for s in Status],
        "problem": f"No merchant with login {login}." if found is None else None,
    }
    return visit.page_of("payouts.html", shown, 200 if found is not None else 404)


@page()
async def payout_detail(console: Console, visit: Visit) -> Response:
    order_id = int(visit.request.path_params["order_id"])

    def query(conn: Connection) -> dict[str, Any] | None:
        row = payout_store.payout(conn, order_id, PAYOUT_TYPES)
        view = order_store.view_by_id(conn, order_id)
        if row is None or view is None:
            return None
        kind, account = view.pays_to
        shown = {**row, "status": view.status.value, "destination_kind": kind, "account": account}
        return {
            "payout": {**shown, "reported": reported(view.head.tx_type)},
            "transactions": view.transactions,
        }

    shown = await console.read(query)
    if shown is None:
        return visit.page("refused.html", 404, reason=f"There is no payout with order id {order_id}.")
    return visit.page_of("payout.html", {"section": "payouts", **shown})


ROUTES = [
    ("/payouts", "GET", payout_list),
    ("/payouts/{order_id:int}", "GET", payout_detail),
]
