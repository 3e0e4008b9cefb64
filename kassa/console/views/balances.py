"""Merchants' balances and ledgers, sandbox and live apart; admins credit or debit a merchant's sandbox
balance, as ``kassa balance credit|debit`` do (a live balance moves only with real money)."""

from __future__ import annotations

from functools import partial
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection
from starlette.responses import RedirectResponse, Response

from kassa.clock import now_ms
from kassa.console import form_fields as fields
from kassa.console.access import Console, Visit, action, page
from kassa.console.form_fields import Problem
from kassa.domain import money
from kassa.domain.merchants import Mode
from kassa.domain.operators import Action
from kassa.storage import audit_log
from kassa.storage import balances as balance_store
from kassa.storage import ledger as ledger_store
from kassa.storage import merchants as merchant_store

PAGE_SIZE = 100
ENTRIES_PAGE_SIZE = 50
_REASON_LENGTH = 500


@page()
async def balance_list(console: Console, visit: Visit) -> Response:
    after = _after(visit.request.query_params.get("after", ""))
    rows = await console.read(partial(balance_store.listing, after=after, limit=PAGE_SIZE + 1))
    last = rows[PAGE_SIZE - 1] if len(rows) > PAGE_SIZE else None
    more = f"{last.merchant_id}-{last.currency}-{last.mode.value}" if last else None
    return visit.page("balances.html", section="balances", rows=rows[:PAGE_SIZE], more=more)


def _after(text: str) -> tuple[int, str, str] | None:
    """The keyset of the next page, "merchant id-currency-mode"; anything else is the first page."""
    merchant_id, _, rest = text.partition("-")
    currency, _, mode = rest.partition("-")
    return (int(merchant_id), currency, mode) if merchant_id.isdigit() and len(merchant_id) < 19 else None


@page()
async def merchant_balances(console: Console, visit: Visit) -> Response:
    return await _merchant_page(console, visit, visit.request.path_params["login"])


async def _merchant_page(console: Console, visit: Visit, login: str, status: int = 200, **shown: Any) -> Response:
    before = visit.request.query_params.get("before", "")
    before_id = int(before) if before.isdigit() and len(before) < 19 else None

    def load(conn: Connection) -> tuple[Any, Any, list[ledger_store.Entry]]:
        merchant_id = merchant_store.merchant_id(conn, login)
        return (
            balance_store.of_merchant(conn, merchant_id),
            ledger_store.merchant_balances(conn, merchant_id),
            ledger_store.merchant_entries(conn, merchant_id, before_id, ENTRIES_PAGE_SIZE + 1),
        )

    try:
        balances, accounts, entries = await console.read(load)
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    more = entries[ENTRIES_PAGE_SIZE - 1].id if len(entries) > ENTRIES_PAGE_SIZE else None
    context: dict[str, Any] = {
        "section": "balances",
        "login": login,
        "balances": balances,
        "accounts": accounts,
        "entries": entries[:ENTRIES_PAGE_SIZE],
        "more": more,
        "problem": None,
        "adjustment": {"currency": "USD"},
        **shown,
    }
    return visit.page_of("balance.html", context, status)


@action(Action.BALANCE_CREDIT)
async def credit(console: Console, visit: Visit) -> Response:
    return await _adjust(console, visit, Action.BALANCE_CREDIT, 1)


@action(Action.BALANCE_DEBIT)
async def debit(console: Console, visit: Visit) -> Response:
    return await _adjust(console, visit, Action.BALANCE_DEBIT, -1)


async def _adjust(console: Console, visit: Visit, act: Action, direction: int) -> Response:
    login, form = visit.request.path_params["login"], visit.form
    try:
        cur = fields.currency(form.get("currency", ""))
        minor = fields.positive_amount(form.get("amount", ""), cur)
        reason = fields.bounded_text(form.get("reason", ""), "Reason", _REASON_LENGTH, required=True)
    except Problem as problem:
        return await _merchant_page(console, visit, login, 400, problem=str(problem), adjustment=dict(form))

    def change(conn: Connection) -> tuple[dict[str, str], dict[str, str]]:
        merchant_id = merchant_store.merchant_id(conn, login)
        before = _available(conn, merchant_id, cur)
        if not ledger_store.adjust(conn, merchant_id, cur.code, direction * minor, reason, now_ms()):
            raise Problem(f"{login} has less than {money.format_amount(minor, cur)} {cur.code} available.")
        after = {"available": _available(conn, merchant_id, cur), "reason": reason}
        after["amount"] = money.format_amount(direction * minor, cur)
        return {"currency": cur.code, "available": before}, after

    target = f"balance {login} {cur.code} sandbox"
    try:
        await console.audited(visit, act, target, change)
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    except Problem as refused:
        await console.audit(visit, act, target, audit_log.REFUSED, after={"reason": str(refused)})
        return await _merchant_page(console, visit, login, 409, problem=str(refused), adjustment=dict(form))
    return RedirectResponse(f"/balances/{quote(login, safe='')}", status_code=303)


def _available(conn: Connection, merchant_id: int, cur: money.Currency) -> str:
    shown = balance_store.of_merchant(conn, merchant_id)
    found = next((b.available for b in shown if b.currency == cur.code and b.mode is Mode.SANDBOX), 0)
    return money.format_amount(found, cur)


ROUTES = [
    ("/balances", "GET", balance_list),
    ("/balances/{login}", "GET", merchant_balances),
    ("/balances/{login}/credit", "POST", credit),
    ("/balances/{login}/debit", "POST", debit),
]
