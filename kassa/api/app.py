"""The ASGI application: one route pair (endpoint and group form) per row of the operation table."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kassa.api import openapi
from kassa.api.operations import OPERATIONS, Operation
from kassa.api.pipeline import handle
from kassa.pages.routes import page_routes
from kassa.runtime import Services, run_workers

_SLASHES = re.compile(r"/{2,}")


class CollapseSlashes:
    """Widely used official clients send ``/api/v2//sale/7``; route it as ``/api/v2/sale/7``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "//" in scope["path"]:
            scope = dict(scope, path=_SLASHES.sub("/", scope["path"]))
        await self.app(scope, receive, send)


def _endpoint(op: Operation, services: Services) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await handle(op, request, services)

    return endpoint


def create_app(services: Services) -> ASGIApp:
    prefix = services.settings.prefix
    routes = []
    for op in OPERATIONS:
        endpoint = _endpoint(op, services)
        routes.append(Route(f"{prefix}{op.path}/{{endpoint_id}}", endpoint, methods=["POST"]))
        routes.append(Route(f"{prefix}{op.path}/group/{{endpoint_id}}", endpoint, methods=["POST"]))
    spec = openapi.document(prefix)

    async def openapi_json(_request: Request) -> Response:
        return JSONResponse(spec)

    routes.append(Route(f"{prefix}/openapi.json", openapi_json, methods=["GET"]))
    routes.extend(page_routes(services))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        stop = asyncio.Event()
        workers = asyncio.create_task(run_workers(services, stop))
        try:
            yield
        finally:
            stop.set()
            services.wake_workers()
            await workers
            services.db.close()

    return CollapseSlashes(Starlette(routes=routes, lifespan=lifespan))
