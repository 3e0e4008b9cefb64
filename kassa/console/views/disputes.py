"""Disputes: the chargebacks operators recorded (``kassa chargeback``), open ones oldest first with their
age and what their reason code means; an admin closes one as won (its amount credited back, once) or lost,
through the command line's own core function, audited in the same transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from starlette.responses import RedirectResponse, Response

from kassa.clock import now_ms
from kassa.console.access import Console, Visit, action, page
from kassa.core import chargebacks
from kassa.domain.chargebacks import DisputeState, age_days, reason_codes
from kassa.domain.operators import Action
from kassa.storage import chargebacks as chargeback_store
from kassa.storage import merchants as merchant_store
from kassa.storage.prepared import Record

PAGE_SIZE = 200


def _shown(row: Record, now: int) -> dict[str, Any]:
    code = reason_codes().get(row["reason_code"])
    return {
        **row,
        "age_days": age_days(row["disputed_on"], chargebacks.today(now)),
        "scheme": code.scheme if code else "",
        "reason": code.meaning if code else "",
    }


@page()
async def dispute_list(console: Console, visit: Visit) -> Response:
    query_params = visit.request.query_params
    login = query_params.get("merchant", "").strip()
    state = query_params.get("state", DisputeState.OPEN.value)
    state = state if state in {s.value for s in DisputeState} else DisputeState.OPEN.value

    def query(conn: Connection) -> list[Record] | None:
        try:
            merchant_id = merchant_store.merchant_id(conn, login) if login else None
        except merchant_store.NotFound:
            return None
        return chargeback_store.disputes(conn, state=DisputeState(state), merchant_id=merchant_id, limit=PAGE_SIZE)

    found = await console.read(query)
    now = now_ms()
    shown = {
        "section": "disputes",
        "rows": [_shown(r, now) for r in found or []],
        "merchant": login,
        "state_filter": state,
        "states": [s.value for s in DisputeState],
        "open": DisputeState.OPEN.value,
        "problem": f"No merchant with login {login}." if found is None else None,
    }
    return visit.page_of("disputes.html", shown, 200 if found is not None else 404)


@action(Action.CHARGEBACK_CLOSE)
async def dispute_close(console: Console, visit: Visit) -> Response:
    dispute_id = int(visit.request.path_params["dispute_id"])
    outcome = visit.form.get("outcome", "")
    if outcome not in (DisputeState.WON.value, DisputeState.LOST.value):
        return visit.page("refused.html", 400, reason="Choose whether the dispute was won or lost.")
    won, actor, address = outcome == DisputeState.WON.value, visit.operator.email, visit.address
    try:
        await console.write(lambda conn: chargebacks.close(conn, dispute_id, won, actor, now_ms(), address))
    except chargebacks.DisputeError as problem:
        status = 404 if str(problem).startswith("no dispute") else 409
        return visit.page("refused.html", status, reason=f"{str(problem).capitalize()}.")
    return RedirectResponse("/disputes", status_code=303)


ROUTES = [
    ("/disputes", "GET", dispute_list),
    ("/disputes/{dispute_id:int}/close", "POST", dispute_close),
]
