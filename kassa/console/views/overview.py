"""The overview: the landing page after sign-in."""

from __future__ import annotations

from starlette.responses import Response

from kassa.console.access import Console, Visit, page


@page()
async def overview(console: Console, visit: Visit) -> Response:
    return visit.page("overview.html", section="overview")


ROUTES = [("/", "GET", overview)]
