"""The test clock (``KASSA_TEST_CLOCK=1``): tests move the gateway's clock forward instead of sleeping
through reconciliation delays, callback retries, session lifetimes, authorization expiry and settlement.

``POST {prefix}/_test/clock`` with ``advance=SECONDS`` moves ``kassa.clock`` forward, runs the scheduler's
tick at the new time (expiry, settlement) before answering, and wakes the job workers and the callback
dispatcher so that jobs and callbacks now due start at once. It answers ``{"now_ms": ...}``.

Just before the clock moves, the leases this process's own workers and dispatcher hold that have not run
out are moved forward by as much, in one transaction: work in hand keeps the real time its lease had left.
Moved with the clock, a lease of work still being done (a callback's request in flight, a job at the
processor) ran out at once, the claim the move wakes took the work again, and it ran twice (a callback was
seen delivered twice). The leases of other owners (a killed process's) run out with the clock, as a test
of recovery needs. A lease taken in the moment between that transaction and the move is not carried.

A gateway whose clock can be moved must never touch live money: it refuses to start on a database that
has a live endpoint, refuses every move once one exists, and treats live endpoints as unknown (see
``runtime.EndpointDirectory``). Without the setting the route does not exist."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from functools import partial

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kassa import clock
from kassa.runtime import Services
from kassa.storage import callbacks as callback_store
from kassa.storage import jobs as job_queue
from kassa.storage.merchants import has_live_endpoint
from kassa.web.forms import FormError, parse_form

LIVE_REFUSED = "KASSA_TEST_CLOCK is on and the database has a live endpoint: a movable clock never serves live money"


def routes(services: Services) -> list[Route]:
    """The test clock's route, when the setting is on and the database holds no live endpoint; else none,
    or start-up stops with ``LIVE_REFUSED``."""
    if not services.settings.test_clock:
        return []
    if services.db.read_sync(has_live_endpoint):
        raise SystemExit(LIVE_REFUSED)
    return [Route(f"{services.settings.prefix}/_test/clock", _mover(services), methods=["POST"])]


def _mover(services: Services) -> Callable[[Request], Awaitable[Response]]:
    async def move(request: Request) -> Response:
        seconds = _seconds(await request.body())
        if seconds is None:
            return JSONResponse({"error": "advance must be a number of seconds, 0 or more"}, status_code=400)
        if await services.db.read(has_live_endpoint):
            return JSONResponse({"error": LIVE_REFUSED}, status_code=409)
        moved_ms = round(seconds * 1000)
        await _carry_own_leases(services, moved_ms)
        now = clock.advance(moved_ms)
        await _run_due_work(services)
        return JSONResponse({"now_ms": now})

    return move


def _seconds(body: bytes) -> float | None:
    try:
        values = [value for name, value in parse_form(body) if name == "advance"]
        seconds = float(values[0]) if len(values) == 1 else math.nan
    except (FormError, ValueError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


async def _carry_own_leases(services: Services, moved_ms: int) -> None:
    owners = [consumer.owner for consumer in services.consumers()]
    if owners and moved_ms:
        await services.db.write(partial(_prolong_leases, owners, moved_ms))


def _prolong_leases(owners: list[str], moved_ms: int, conn: Connection) -> None:
    now = clock.now_ms()  # read as the transaction runs: a lease that ran out while it was queued stays out
    job_queue.prolong(conn, owners, now, moved_ms)
    callback_store.prolong(conn, owners, now, moved_ms)


async def _run_due_work(services: Services) -> None:
    """Expiry and settlement are done when the move is answered (a test may then assert that nothing
    expired); jobs and callbacks are started now rather than at the next poll."""
    if services.scheduler is not None:
        await services.scheduler.tick()
    services.wake_workers()
