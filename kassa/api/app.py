"""The ASGI application: the operation table's dispatch in front of Starlette's pages and documents."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kassa import metrics
from kassa.api import openapi, test_clock
from kassa.api.admission import client_host, rate_limited
from kassa.api.errors import ApiError, Code
from kassa.api.operations import OPERATIONS, Operation
from kassa.api.pipeline import handle, refuse_path
from kassa.api.rendering import Answer
from kassa.pages.routes import page_routes
from kassa.ratelimit import retry_after
from kassa.runtime import Services, run_workers, settle_garbage_collector

_SLASHES = re.compile(r"/{2,}")
_WRONG_METHOD = ApiError(Code.FIELD, "operations take POST only", http_status=405, headers={"Allow": "POST"})
_NO_OPERATION = ApiError(Code.FIELD, "no operation at this path (the paths are in openapi.json)", http_status=404)


class OperationDispatch:
    """The front of the application. A POST to an operation goes straight to the pipeline by a lookup
    in the operation table (the hot path: no middleware stack, no route scan); other methods on an
    operation and unknown paths below ``{prefix}/api/`` are refused in the contract's format; everything
    else (pages, the OpenAPI document, lifespan) goes to Starlette.

    Widely used official clients send ``/api/v2//sale/7``: doubled slashes are collapsed first."""

    def __init__(self, fallback: ASGIApp, services: Services) -> None:
        self.fallback = fallback
        self.services = services
        self.operations = {f"{services.settings.prefix}{op.path}": op for op in OPERATIONS}
        self.api_root = f"{services.settings.prefix}/api/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if "//" in scope["path"]:
                scope = dict(scope, path=_SLASHES.sub("/", scope["path"]))
            found = self._operation(scope["path"])
            if found is not None and scope["method"] == "POST":
                op, endpoint_id = found
                answer = await handle(op, scope, receive, self.services, endpoint_id)
                await answer.send(send)
                return
            api = found is not None or scope["path"].startswith(self.api_root)
            if wait := self.services.limits.address_wait_ms(client_host(scope)):  # pages and the rest
                answer = refuse_path(scope, rate_limited(wait, "address_rate")) if api else _too_many_requests(wait)
                await answer.send(send)
                return
            if api:
                await refuse_path(scope, _NO_OPERATION if found is None else _WRONG_METHOD).send(send)
                return
        await self.fallback(scope, receive, send)

    def _operation(self, path: str) -> tuple[Operation, str] | None:
        """``{prefix}{op.path}/{id}`` or ``{prefix}{op.path}/group/{id}``."""
        base, _, endpoint_id = path.rpartition("/")
        op = self.operations.get(base.removesuffix("/group"))
        return (op, endpoint_id) if op is not None else None


def _too_many_requests(wait_ms: int) -> Answer:
    metrics.refused("address_rate")
    return Answer(429, b"too many requests\n", "text/plain; charset=utf-8", {"Retry-After": retry_after(wait_ms)})


def create_app(services: Services) -> ASGIApp:
    prefix = services.settings.prefix
    routes = []
    spec = openapi.document(prefix, services.settings.oauth_window)

    async def openapi_json(_request: Request) -> Response:
        return JSONResponse(spec)

    routes.append(Route(f"{prefix}/openapi.json", openapi_json, methods=["GET"]))
    routes.extend(page_routes(services))
    routes.extend(test_clock.routes(services))  # none unless KASSA_TEST_CLOCK=1

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        stop = asyncio.Event()
        workers = asyncio.create_task(run_workers(services, stop))
        shedder = asyncio.create_task(services.shedder.run(stop))  # the API's alone: `kassa worker` has none
        settle_garbage_collector()
        try:
            yield
        finally:
            stop.set()
            services.wake_workers()
            await asyncio.gather(workers, shedder)
            services.db.close()

    return OperationDispatch(Starlette(routes=routes, lifespan=lifespan), services)
