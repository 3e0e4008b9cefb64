"""The console's ASGI application: the routes of every view module, its vendored static files, and no
lifespan of its own (the API application's runs the workers and closes the database)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from kassa.console.access import Console
from kassa.console.views import (
    acquirers,
    balances,
    disputes,
    merchants,
    operators,
    orders,
    overview,
    payouts,
    risk_rules,
    session,
    settlement,
    subscriptions,
)
from kassa.runtime import Services

VIEWS = (
    session, overview, orders, merchants, acquirers, risk_rules, balances, settlement, subscriptions, payouts,
    disputes, operators,
)  # fmt: skip

Bound = Callable[[Console, Request], Awaitable[Response]]


def _endpoint(console: Console, handler: Bound) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await handler(console, request)

    return endpoint


def create_console(services: Services) -> Starlette:
    console = Console(services)
    routes: list[BaseRoute] = [
        Route(path, _endpoint(console, handler), methods=[method])
        for view in VIEWS
        for path, method, handler in view.ROUTES
    ]
    routes.append(Mount("/static", StaticFiles(packages=[("kassa.console", "static")]), name="static"))
    return Starlette(routes=routes)
