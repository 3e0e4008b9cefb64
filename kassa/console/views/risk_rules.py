"""Risk rules: everyone reads them (with the orders each filtered in the last day and 30 days), admins
create them, add and remove a block list's entries, disable and enable them, as ``kassa rule`` does (docs/risk.md);
every change is audited."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from starlette.responses import RedirectResponse, Response

from kassa.clock import now_ms
from kassa.console.access import Console, Visit, action, page
from kassa.console.views.orders import listed_order
from kassa.core import risk as core_risk
from kassa.domain import risk
from kassa.domain.operators import Action
from kassa.domain.risk import Kind, Mode, Per, RuleError
from kassa.storage import audit_log, order_search
from kassa.storage import merchants as merchant_store
from kassa.storage import risk as store

_NEW = {"kind": Kind.BIN.value, "per": Per.CARD.value}


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:] + "."


@page()
async def rule_list(console: Console, visit: Visit) -> Response:
    return await _list(console, visit)


async def _list(console: Console, visit: Visit, status: int = 200, **shown: Any) -> Response:
    rows = await console.read(lambda conn: store.listed(conn, include_disabled=True))
    context = {
        "section": "rules",
        "rules": [store.described(row) for row in rows],
        "kinds": [k.value for k in Kind],
        "pers": [p.value for p in Per],
        "codes": risk.ERROR_CODES,
        "problem": None,
        "new": _NEW,
    }
    return visit.page_of("rules.html", {**context, **shown}, status)


def _number(form: dict[str, str], name: str, option: str) -> int | None:
    text = form.get(name, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise RuleError(f"{option}: a whole number")
    return int(text)


@action(Action.RULE_CREATE)
async def rule_create(console: Console, visit: Visit) -> Response:
    form = visit.form
    try:
        kind = Kind(form.get("kind", ""))
    except ValueError:
        return await _list(console, visit, 400, problem="Kind: choose one.", new=_refilled(form))
    limits = kind in risk.VELOCITY
    try:
        velocity = risk.checked_velocity(
            kind,
            form.get("per") if limits else None,
            _number(form, "limit", "--limit") if limits else None,
            form.get("window", "").strip() or None if limits else None,
            form.get("currency", "").strip() or None if kind is Kind.SUM else None,
        )
        threshold = risk.checked_threshold(
            kind,
            _number(form, "amount", "--amount") if kind is Kind.THREE_DS else None,
            form.get("currency", "") if kind is Kind.THREE_DS else None,
        )
        note = form.get("note", "").strip()
        if len(note) > 200:
            raise RuleError("--note: at most 200 characters")
    except RuleError as problem:
        return await _list(console, visit, 400, problem=_sentence(str(problem)), new=_refilled(form))
    mode = Mode.DRY_RUN if form.get("dry_run") else Mode.ENFORCE
    lists = kind in risk.BLOCK_LISTS
    typed = [line.strip() for line in form.get("values", "").splitlines() if line.strip()] if lists else []
    orders = form.get("card_orders", "").split()

    def create(conn: Connection) -> int:
        merchant, endpoint = form.get("merchant", "").strip() or None, _number(form, "endpoint", "--endpoint")
        scope = store.scope_of(conn, merchant, endpoint)
        if orders and kind is not Kind.CARD:
            raise RuleError("--card-of-order is for a card block list")
        if not all(part.isdigit() for part in orders):
            raise RuleError("--card-of-order: order ids, space-separated")
        cards = store.cards_of_orders(conn, [int(part) for part in orders])
        entries = risk.checked_entries(kind, [*typed, *cards])
        new = store.NewRule(kind, mode, *scope, entries, velocity, note, visit.operator.email, threshold)
        rule_id = store.create(conn, new, now_ms())
        after = store.recorded(conn, rule_id)
        entry = audit_log.Entry(
            visit.operator.email, Action.RULE_CREATE.code, f"rule {rule_id}", audit_log.DONE, None, after, visit.address
        )
        audit_log.append(conn, entry, now_ms())  # in the rule's transaction: no rule without its entry
        return rule_id

    try:
        rule_id = await console.write(create)
    except RuleError as problem:
        return await _list(console, visit, 400, problem=_sentence(str(problem)), new=_refilled(form))
    core_risk.forget()
    return RedirectResponse(f"/rules/{rule_id}", status_code=303)


def _refilled(form: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in form.items() if name != "csrf"}


@page()
async def rule_page(console: Console, visit: Visit) -> Response:
    rule_id = int(visit.request.path_params["rule_id"])
    before = visit.request.query_params.get("before", "")
    before_id = int(before) if before.isdigit() and len(before) <= 18 else None
    try:
        context = await console.read(lambda conn: _rule_context(conn, rule_id, before_id))
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    return visit.page_of("rule.html", context)


def _rule_context(conn: Connection, rule_id: int, before_id: int | None, **shown: Any) -> dict[str, Any]:
    """The rule's page: the rule, its counts, and a page of the orders it filtered (or in dry run would
    have), most recent first, older ones a link away."""
    rule = store.shown(conn, rule_id, now_ms())
    hits = store.filtered_orders(conn, rule_id, before_id)
    page_of = hits[: store.FILTERED_PAGE]
    found = {f.id: f for f in order_search.details(conn, [order_id for order_id, _ in page_of])}
    rows = [{**listed_order(found[order_id]), "at": at} for order_id, at in page_of if order_id in found]
    older = page_of[-1][0] if len(hits) > store.FILTERED_PAGE else None
    context = {"rule": rule, "orders": rows, "older": older, "paged": before_id is not None}
    return {"section": "rules", "problem": None, "typed": {}, **context, **shown}


@action(Action.RULE_DISABLE)
async def rule_disable(console: Console, visit: Visit) -> Response:
    return await _switch(console, visit, enabled=False)


@action(Action.RULE_ENABLE)
async def rule_enable(console: Console, visit: Visit) -> Response:
    return await _switch(console, visit, enabled=True)


async def _switch(console: Console, visit: Visit, *, enabled: bool) -> Response:
    rule_id = int(visit.request.path_params["rule_id"])
    action = Action.RULE_ENABLE if enabled else Action.RULE_DISABLE

    def change(conn: Connection) -> tuple[dict[str, Any], dict[str, Any]]:
        store.switch(conn, rule_id, enabled=enabled, now_ms=now_ms())
        return {"enabled": not enabled}, {"enabled": enabled}

    try:
        await console.audited(visit, action, f"rule {rule_id}", change)
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 409, reason=f"Refused: {missing}.")
    core_risk.forget()
    return RedirectResponse(f"/rules/{rule_id}", status_code=303)


@action(Action.RULE_CHANGE)
async def rule_entries(console: Console, visit: Visit) -> Response:
    """Adds and removes a block list's entries (one a line), checked as ``kassa rule add|remove`` checks
    them; audited with the change."""
    rule_id = int(visit.request.path_params["rule_id"])
    added, removed = (_typed_lines(visit.form.get(name, "")) for name in ("add", "remove"))

    def change(conn: Connection) -> tuple[dict[str, Any], dict[str, Any]]:
        found = store.find(conn, rule_id)
        if found is None:
            raise merchant_store.NotFound(f"no rule {rule_id}")
        kind = Kind(found["kind"])
        if kind is Kind.CARD:  # never a card number typed into a form: `kassa rule add --card-of-order`
            raise RuleError("a card list's entries are changed with kassa rule add|remove")
        checked = [risk.checked_entries(kind, each) if each else () for each in (added, removed)]
        return {}, {"entries": store.change_entries(conn, rule_id, *checked)}

    try:
        await console.audited(visit, Action.RULE_CHANGE, f"rule {rule_id}", change)
    except merchant_store.NotFound as missing:
        return visit.page("refused.html", 404, reason=f"Not found: {missing}.")
    except RuleError as problem:
        refused = {"problem": _sentence(str(problem)), "typed": dict(visit.form)}
        context = await console.read(lambda conn: _rule_context(conn, rule_id, None, **refused))
        return visit.page_of("rule.html", context, 400)
    core_risk.forget()
    return RedirectResponse(f"/rules/{rule_id}", status_code=303)


def _typed_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


ROUTES = [
    ("/rules", "GET", rule_list),
    ("/rules", "POST", rule_create),
    ("/rules/{rule_id:int}", "GET", rule_page),
    ("/rules/{rule_id:int}/disable", "POST", rule_disable),
    ("/rules/{rule_id:int}/enable", "POST", rule_enable),
    ("/rules/{rule_id:int}/entries", "POST", rule_entries),
]
