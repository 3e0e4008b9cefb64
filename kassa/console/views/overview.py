"""The overview, the landing page after sign-in: money taken in today and over the last 30 days (UTC) by
merchant and currency, with approval rates and decline reasons, and a daily series drawn as charts; each
merchant's chargeback and filter rates over the 30 days, those above the schemes' monitored share flagged.

The figures are HTML tables, complete without JavaScript. With it, ``overview.js`` draws the daily series
(given to the page as JSON, not executed) with uPlot, and htmx reloads the tables from
``/overview/figures`` every minute."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response

from kassa.clock import now_ms
from kassa.console.access import Console, Handler, Visit, page
from kassa.domain.chargebacks import MONITORED_SHARE_PERCENT, Monitored
from kassa.domain.lifecycle import Stage
from kassa.domain.money import currency
from kassa.storage import reports
from kassa.storage.prepared import Record

DAYS = 30
_DAY_MS = reports.DAY_MS


@dataclass
class Figures:
    """One merchant's money taken in, in one currency, over one period."""

    login: str
    currency: str
    approved: int = 0
    volume: int = 0  # minor units
    decided: int = 0
    reasons: Counter[str] = field(default_factory=Counter)  # error codes of those not approved

    @property
    def rate(self) -> str | None:
        return f"{100 * self.approved / self.decided:.1f}%" if self.decided else None

    def add(self, row: Record) -> None:
        self.decided += row["count"]
        if row["stage"] == Stage.APPROVED:
            self.approved += row["count"]
            self.volume += row["amount"]
        else:
            self.reasons[row["error_code"] or "none"] += row["count"]


def _figures(rows: Iterable[Record]) -> list[Figures]:
    by_key: dict[tuple[str, str], Figures] = {}
    for row in rows:
        key = (row["login"], row["currency"])
        by_key.setdefault(key, Figures(*key)).add(row)
    return [by_key[key] for key in sorted(by_key)]


def _series(rows: Iterable[Record], first_day: int) -> list[dict[str, Any]]:
    """Per currency, approved count and volume (major units, for drawing) on each of the ``DAYS`` days,
    zero included: the days are epoch seconds at midnight UTC, as uPlot's time axis reads them."""
    counts: dict[str, list[int]] = {}
    volumes: dict[str, list[int]] = {}
    for row in rows:
        if row["stage"] != Stage.APPROVED:
            continue
        code, index = row["currency"], row["day"] - first_day
        counts.setdefault(code, [0] * DAYS)[index] += row["count"]
        volumes.setdefault(code, [0] * DAYS)[index] += row["amount"]
    days = [(first_day + n) * _DAY_MS // 1000 for n in range(DAYS)]
    return [
        {
            "currency": code,
            "days": days,
            "count": counts[code],
            "volume": [minor / 10 ** currency(code).exponent for minor in volumes[code]],
            "volume_minor": volumes[code],
        }
        for code in sorted(counts)
    ]


def _monitored(rows: Iterable[Record], charged_back: dict[int, int], logins: dict[int, str]) -> list[Monitored]:
    """Each merchant's chargebacks against its approved sales, and filtered payments against decided ones."""
    counts: dict[int, Counter[str]] = {}
    for row in rows:
        seen = counts.setdefault(row["merchant_id"], Counter())
        seen["decided"] += row["count"]
        seen["sales"] += row["count"] if row["stage"] == Stage.APPROVED else 0
        seen["filtered"] += row["count"] if row["stage"] == Stage.FILTERED else 0
    merchant_ids = set(counts) | set(charged_back)
    found = [
        Monitored(
            logins[merchant_id],
            sales=counts.get(merchant_id, Counter())["sales"],
            chargebacks=charged_back.get(merchant_id, 0),
            decided=counts.get(merchant_id, Counter())["decided"],
            filtered=counts.get(merchant_id, Counter())["filtered"],
        )
        for merchant_id in merchant_ids
    ]
    return sorted(found, key=lambda m: (not m.flagged, m.login))


async def _context(console: Console) -> dict[str, Any]:
    today = now_ms() // _DAY_MS
    first_day = today - DAYS + 1
    since, until = first_day * _DAY_MS, (today + 1) * _DAY_MS

    def read(conn: Connection) -> tuple[list[Record], dict[int, int], dict[int, str]]:
        rows = reports.money_in_by_day(conn, since_ms=since, until_ms=until)
        charged_back = reports.chargebacks_by_merchant(conn, since, until)
        return rows, charged_back, reports.logins(conn, [*charged_back, *(r["merchant_id"] for r in rows)])

    rows, charged_back, logins = await console.read(read)
    return {
        "today": _figures(r for r in rows if r["day"] == today),
        "month": _figures(rows),
        "monitored": _monitored(rows, charged_back, logins),
        "monitored_share": MONITORED_SHARE_PERCENT,
        "series": _series(rows, first_day),
        "today_ms": today * _DAY_MS,
        "first_ms": first_day * _DAY_MS,
    }


@page()
async def overview(console: Console, visit: Visit) -> Response:
    return visit.page_of("overview.html", {"section": "overview", **await _context(console)})


def _fragment(handler: Handler) -> Callable[[Console, Request], Awaitable[Response]]:
    """A piece of a page that htmx fetches, open to every role: without a session it answers 401 and has
    htmx take the whole page to sign-in (a redirect would be followed, and the sign-in form swapped in)."""

    async def run(console: Console, request: Request) -> Response:
        visit = await console.visit(request)
        if visit is None:
            return Response(status_code=401, headers={"hx-redirect": "/sign-in?next=/"})
        return await handler(console, visit)

    return run


async def _figures_fragment(console: Console, visit: Visit) -> Response:
    return visit.page_of("overview_figures.html", await _context(console))


figures = _fragment(_figures_fragment)

ROUTES = [("/", "GET", overview), ("/overview/figures", "GET", figures)]
