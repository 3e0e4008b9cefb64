"""The operations listener (``KASSA_OPS``): ``/metrics`` for Prometheus, ``/livez`` and ``/readyz`` for a
supervisor or a load balancer. Never on the merchant API's listener: neither merchants nor the internet
have any business reading queue depths or approval counts.

``/readyz`` answers 503 when this process should get no traffic: the database does not answer, its
schema is not the one this code was written for, the vault key does not open stored data, a worker of
this process has stopped, or the process is shutting down (so a balancer drains it before it closes)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import select, text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from kassa import metrics
from kassa.clock import now_ms
from kassa.runtime import Services
from kassa.storage import queue_figures
from kassa.storage.jobs import JobKind
from kassa.storage.migrate import head_revision, revision_of
from kassa.storage.queue_figures import Queue, QueueFigures
from kassa.storage.tables import merchants
from kassa.vault.keys import control_key_context

_CHECK_SECONDS = 2.0  # a check that takes longer failed: a balancer's probe times out soon after


def create_probes(services: Services) -> Starlette:
    async def metrics_page(_request: Request) -> Response:
        services.sample_figures()
        figures = await services.db.read(lambda conn: queue_figures.read(conn, now_ms()))
        page = generate_latest(metrics.registry()) + generate_latest(_queues(figures))
        return Response(page, media_type=CONTENT_TYPE_LATEST)

    async def live(_request: Request) -> Response:
        return _json(200, {"status": "alive"})

    async def ready(_request: Request) -> Response:
        checks = {name: await _checked(check, services) for name, check in _CHECKS}
        failed = any(not passed for passed, _ in checks.values())
        status = "stopping" if services.stopping else "not ready" if failed else "ready"
        body = {"status": status, "checks": {name: said for name, (_, said) in checks.items()}}
        return _json(503 if services.stopping or failed else 200, body)

    return Starlette(
        routes=[
            Route("/metrics", metrics_page, methods=["GET"]),
            Route("/livez", live, methods=["GET"]),
            Route("/readyz", ready, methods=["GET"]),
        ]
    )


def _json(status: int, body: object) -> Response:
    return Response(orjson.dumps(body), status, media_type="application/json", headers={"Cache-Control": "no-store"})


class _Figures(Collector):
    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        self._families = families

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return iter(self._families)


def _queues(figures: QueueFigures) -> CollectorRegistry:
    """What the database says at scrape time: the same from whichever process answers."""
    waiting = GaugeMetricFamily("kassa_jobs_queued", "Jobs waiting or running, by kind.", labels=["kind"])
    oldest = GaugeMetricFamily(
        "kassa_jobs_oldest_due_age_seconds", "How long the oldest due job of a kind has been due.", labels=["kind"]
    )
    idle = Queue(0, 0)
    for kind in sorted({*JobKind, *figures.jobs}):  # idle kinds too: an absent series alerts on nothing
        queue = figures.jobs.get(kind, idle)
        waiting.add_metric([kind], queue.waiting)
        oldest.add_metric([kind], queue.oldest_due_age_ms / 1000)
    callbacks = figures.callbacks
    registry = CollectorRegistry(auto_describe=False)
    families = [
        waiting,
        oldest,
        GaugeMetricFamily("kassa_callbacks_pending", "Callbacks not yet delivered nor failed.", callbacks.waiting),
        GaugeMetricFamily(
            "kassa_callbacks_oldest_due_age_seconds",
            "How long the oldest due pending callback has been due.",
            callbacks.oldest_due_age_ms / 1000,
        ),
    ]
    pending = GaugeMetricFamily(
        "kassa_acquirer_reversals_pending",
        "Reversals and advices sent to an acquirer and not answered yet, repeated until they are, by connection.",
        labels=["connection"],
    )
    for name, count in sorted(figures.acquirer_pending.items()):
        pending.add_metric([name], count)
    registry.register(_Figures([*families, pending]))
    return registry


Check = Callable[[Services], Awaitable[str]]


class CheckFailed(Exception):
    pass


async def _checked(check: Check, services: Services) -> tuple[bool, str]:
    try:
        return True, await asyncio.wait_for(check(services), _CHECK_SECONDS)
    except CheckFailed as failure:
        return False, str(failure)
    except TimeoutError:
        return False, f"no answer within {_CHECK_SECONDS:g} s"
    except Exception as failure:  # a probe reports, it never fails: the reason's kind, no text that may hold a URL
        return False, f"failed: {type(failure).__name__}"


async def _database(services: Services) -> str:
    await services.db.read(lambda conn: conn.execute(text("SELECT 1")).scalar_one())
    return "ok"


async def _migrations(services: Services) -> str:
    found = await services.db.read(revision_of)
    head = head_revision()
    if found != head:
        raise CheckFailed(f"schema at {found or 'nothing'}, this code needs {head}: run `kassa db upgrade`")
    return f"ok ({head})"


async def _vault(services: Services) -> str:
    """The keys must open what is stored: a wrong ``KASSA_VAULT_KEY(S)`` would fail every callback and rebill."""
    sealed = await services.db.read(
        lambda conn: conn.execute(
            select(merchants.c.id, merchants.c.control_key_sealed)
            .where(merchants.c.control_key_sealed.is_not(None))
            .limit(1)
        ).first()
    )
    if sealed is None:
        return "ok (nothing stored yet)"
    try:
        services.vault.decrypt(sealed[1], control_key_context(sealed[0]))
    except Exception:
        raise CheckFailed(
            "the vault keys do not open stored data: are KASSA_VAULT_KEY(S) the ones it was stored with?"
        ) from None
    return "ok"


async def _workers(services: Services) -> str:
    if not services.background:
        return "ok (none in this process)"
    stopped = sum(task.done() for task in services.background)
    if stopped:
        raise CheckFailed(f"{stopped} of {len(services.background)} background loops have stopped")
    return f"ok ({len(services.background)} running)"


async def _acquirers(services: Services) -> str:
    if services.connectors is None:
        return "ok (none in this process)"
    stranded = await services.connectors.stranded()
    if stranded:
        named = ", ".join(str(endpoint_id) for endpoint_id in stranded)
        raise CheckFailed(f"no acquirer connection signed on for live endpoint {named}")
    links = services.connectors.links()
    return f"ok ({sum(state.signed_on > 0 for state in links.values())} of {len(links)} links signed on)"


_CHECKS: tuple[tuple[str, Check], ...] = (
    ("database", _database),
    ("migrations", _migrations),
    ("vault", _vault),
    ("workers", _workers),
    ("acquirers", _acquirers),
)
