"""Subscriptions (recurring payments): the list, one with its schedule and every try of every charge, and
cancelling one (admins), through the same core function as ``kassa recurring cancel``."""

from __future__ import annotations

from functools import partial
from typing import Any

from sqlalchemy import Connection
from starlette.responses import RedirectResponse, Response

from kassa.clock import now_ms
from kassa.console.access import Console, Visit, action, page
from kassa.core import recurring
from kassa.domain.cards import mask_stored
from kassa.domain.lifecycle import Stage, status_of
from kassa.domain.operators import Action
from kassa.domain.recurring import Status
from kassa.storage import merchants as merchant_store
from kassa.storage import recurring as recurring_store
from kassa.storage import reports
from kassa.storage.prepared import Record

PAGE_SIZE = 50


def _before(visit: Visit) -> int | None:
    before = visit.request.query_params.get("before", "")
    return int(before) if before.isdigit() else None


@page()
async def subscription_list(console: Console, visit: Visit) -> Response:
    login = visit.request.query_params.get("merchant", "").strip()
    before_id = _before(visit)

    def query(conn: Connection) -> tuple[list[Record], dict[int, str]] | None:
        try:
            merchant_id = merchant_store.merchant_id(conn, login) if login else None
        except merchant_store.NotFound:
            return None
        rows = recurring_store.listing(conn, merchant_id, PAGE_SIZE + 1, before_id)
        return rows, reports.logins(conn, (r["merchant_id"] for r in rows))

    found = await console.read(query)
    rows, logins = found if found is not None else ([], {})
    more = rows[PAGE_SIZE - 1]["id"] if len(rows) > PAGE_SIZE else None
    shown = {
        "section": "subscriptions",
        "rows": rows[:PAGE_SIZE],
        "logins": logins,
        "merchant": login,
        "more": more,
        "problem": f"No merchant with login {login}." if found is None else None,
    }
    return visit.page_of("subscriptions.html", shown, 200 if found is not None else 404)


def _charge(c: Record) -> dict[str, Any]:
    return {**c, "order_status": status_of(Stage(c["stage"])).value if c["stage"] else None}


@page()
async def subscription_detail(console: Console, visit: Visit) -> Response:
    payment_id = int(visit.request.path_params["payment_id"])

    def query(conn: Connection) -> dict[str, Any] | None:
        payment = recurring_store.payment(conn, payment_id)
        if payment is None:
            return None
        card = recurring_store.card_shown(conn, payment_id)
        return {
            "payment": payment,
            "login": reports.logins(conn, [payment["merchant_id"]]).get(payment["merchant_id"], ""),
            "card": mask_stored(card["bin"], card["last_four"], card["brand"]) if card else None,
            "charges": [_charge(c) for c in recurring_store.charges_of(conn, payment_id)],
        }

    shown = await console.read(query)
    if shown is None:
        return visit.page("refused.html", 404, reason=f"There is no subscription {payment_id}.")
    return visit.page_of("subscription.html", {"section": "subscriptions", "active": Status.ACTIVE, **shown})


@action(Action.RECURRING_CANCEL)
async def subscription_cancel(console: Console, visit: Visit) -> Response:
    payment_id = int(visit.request.path_params["payment_id"])
    if await console.read(partial(recurring_store.payment, payment_id=payment_id)) is None:
        return visit.page("refused.html", 404, reason=f"There is no subscription {payment_id}.")

    def cancel(conn: Connection) -> tuple[dict[str, str] | None, dict[str, str] | None]:
        before = recurring_store.lock(conn, payment_id)
        after = recurring.cancel(conn, payment_id, now_ms())
        return _status(before), _status(after)

    await console.audited(visit, Action.RECURRING_CANCEL, f"recurring {payment_id}", cancel)
    return RedirectResponse(f"/subscriptions/{payment_id}", status_code=303)


def _status(payment: Record | None) -> dict[str, str] | None:
    return {"status": payment["status"]} if payment else None


ROUTES = [
    ("/subscriptions", "GET", subscription_list),
    ("/subscriptions/{payment_id:int}", "GET", subscription_detail),
    ("/subscriptions/{payment_id:int}/cancel", "POST", subscription_cancel),
]
