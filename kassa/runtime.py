"""The long-lived objects of one gateway process, built once at start-up and shared by requests."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import socket
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from kassa import crashpoints, metrics
from kassa.core import risk
from kassa.domain.merchants import Endpoint
from kassa.domain.recurring import Retries
from kassa.engine import signals
from kassa.engine.callbacks import CallbackConfig, CallbackDispatcher
from kassa.engine.link_reports import LinkReporter
from kassa.engine.overload import LoadShedder
from kassa.engine.polling import Consumer
from kassa.engine.scheduler import Scheduler
from kassa.engine.worker import Worker, WorkerConfig
from kassa.keyring import KeyRing
from kassa.processors.connectors import Connectors
from kassa.processors.interface import Authenticator
from kassa.ratelimit import Limits
from kassa.sandbox.acquirer import SandboxProcessor
from kassa.sandbox.issuer import SandboxIssuer
from kassa.settings import Settings
from kassa.storage import merchants as merchant_store
from kassa.storage.callbacks import DeliveryLimits
from kassa.storage.database import Database
from kassa.storage.jobs import Job, Lease
from kassa.storage.nonce_book import NonceBook
from kassa.storage.orders import AuthorizationWork
from kassa.storage.sealing import open_store
from kassa.vault.keys import Vault, load_vault

log = logging.getLogger("kassa.runtime")


class EndpointDirectory:
    """Endpoints by id, cached briefly: every request needs its endpoint, operators change them rarely.
    Only hits are cached, so an endpoint created a moment ago is found at once. With ``live=False`` (a
    gateway whose clock tests move) live endpoints, and groups with a live member, are not found."""

    def __init__(self, db: Database, vault: Vault, ttl_seconds: float, *, live: bool = True) -> None:
        self._db = db
        self._vault = vault
        self._ttl = ttl_seconds
        self._live = live
        self._cache: dict[int, tuple[float, Endpoint]] = {}

    async def get(self, endpoint_id: int) -> Endpoint | None:
        cached = self._cache.get(endpoint_id)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            endpoint = await self._db.read_point(
                lambda conn: merchant_store.load_endpoint(conn, self._vault, endpoint_id)
            )
        except merchant_store.NotFound:
            return None
        if not self._live and endpoint.touches_live:
            return None
        self._cache[endpoint_id] = (now + self._ttl, endpoint)
        return endpoint

    def cached(self, endpoint_id: int) -> Endpoint | None:
        """The endpoint as last loaded, expired or not, without reading the database: for answering a
        request refused before its endpoint is looked up in the format its merchant chose."""
        found = self._cache.get(endpoint_id)
        return None if found is None else found[1]

    def forget(self) -> None:
        """Drops every cached endpoint, so that this process sees an operator's change at once (a group
        holds its members, so dropping one id is not enough); other processes see it within the ttl."""
        self._cache.clear()


@dataclass
class Services:
    settings: Settings
    db: Database
    vault: Vault
    directory: EndpointDirectory
    keys: KeyRing
    nonces: NonceBook
    shedder: LoadShedder  # whether the API refuses new work for overload now
    authenticator: Authenticator  # 3-D Secure: the card issuers' decisions
    workers: list[Worker] = field(default_factory=list)
    scheduler: Scheduler | None = None
    dispatcher: CallbackDispatcher | None = None
    limits: Limits = field(default_factory=lambda: Limits(None, None))
    background: list[asyncio.Task[None]] = field(default_factory=list)  # the loops ``run_workers`` started
    stopping_since: float | None = None  # ``time.monotonic()`` when the process was told to stop
    connectors: Connectors | None = None  # the acquirer links this process's workers opened
    reporter: LinkReporter | None = None  # writes those links' state for operators

    @property
    def stopping(self) -> bool:
        return self.stopping_since is not None

    def begin_stopping(self) -> None:
        """Told first thing on SIGTERM or SIGINT: readiness turns to 503 and the grace period starts."""
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()

    def grace_left(self) -> float:
        since = self.stopping_since if self.stopping_since is not None else time.monotonic()
        return max(0.0, since + self.settings.shutdown_grace - time.monotonic())

    def sample_figures(self) -> None:
        """The figures this process samples rather than counts (``kassa.metrics``)."""
        metrics.DB_CONNECTIONS_IN_USE.set(self.db.connections_in_use())
        for name, state in (self.connectors.links() if self.connectors else {}).items():
            metrics.ACQUIRER_SOCKETS_SIGNED_ON.labels(name).set(state.signed_on)

    def consumers(self) -> list[Consumer]:
        """This process's job workers and callback dispatcher: the owners of the leases it holds."""
        consumers: list[Consumer] = [*self.workers]
        if self.dispatcher is not None:
            consumers.append(self.dispatcher)
        return consumers

    def job_lease(self) -> Lease | None:
        """A lease to write a new processing job with, for the least busy worker of this process; None
        when there is none (an API-only process) or all have enough in hand."""
        worker = min(self.workers, key=lambda w: w.in_hand, default=None)
        return None if worker is None else worker.lease()

    def hand_over(self, job: Job, lease: Lease, work: AuthorizationWork | None = None) -> None:
        """A job written with ``job_lease()``, now committed, goes to the worker that holds its lease (with
        ``work``, what its transaction was opened with: ``core.opening.opened_work``)."""
        for worker in self.workers:
            if worker.owner == lease.owner:
                worker.take(job, work)

    def wake_workers(self, *, callbacks: bool = True) -> None:
        """New jobs, and unless told otherwise new callbacks, were committed by a request."""
        for worker in self.workers:
            worker.wake()
        if callbacks and self.dispatcher is not None:  # an expiry, a direct cancel: callbacks at once
            self.dispatcher.wake()


def process_identity() -> str:
    """This process as operators find it: its machine and pid, and a random part, since a machine reuses
    pids (a restarted process is another)."""
    return f"{socket.gethostname()[:200]}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def build_services(settings: Settings, worker_count: int) -> Services:
    if settings.test_clock:  # a process whose clock tests move is a test's: it may also be told to crash
        crashpoints.arm(settings.test_crash_point, settings.test_fail_point)
    vault = load_vault(settings.vault_source)
    db = open_store(settings, vault, settings.db_threads)
    connectors = Connectors(db, vault, SandboxProcessor(settings.sandbox_latency_ms), settings.endpoint_cache_seconds)
    issuer = SandboxIssuer()
    config = WorkerConfig(
        settings.poll_interval,
        settings.job_lease_seconds,
        settings.reconcile_delay_seconds,
        settings.session_ttl_seconds,
        settings.job_max_attempts,
        settings.job_retry_delay,
        settings.idle_claim_interval,
    )
    directory = EndpointDirectory(db, vault, settings.endpoint_cache_seconds, live=not settings.test_clock)
    risk.cache_for(settings.endpoint_cache_seconds)  # risk rules are read as endpoints are
    limits = Limits.from_settings(settings)
    delivery = DeliveryLimits(settings.callback_per_host, settings.callback_per_merchant)
    shedder = LoadShedder(db, settings.overload_job_age, settings.overload_callback_age, delivery)
    if not worker_count:  # an API-only process: jobs, callbacks and scheduled work run elsewhere
        return Services(settings, db, vault, directory, KeyRing(db), NonceBook(db), shedder, issuer, limits=limits)
    dispatcher = CallbackDispatcher(db, vault, _callback_config(settings))
    workers = [Worker(db, vault, connectors, issuer, config, callbacks=dispatcher) for _ in range(worker_count)]
    services = Services(
        settings, db, vault, directory, KeyRing(db), NonceBook(db), shedder, issuer, workers, None, dispatcher, limits
    )
    services.connectors = connectors
    services.reporter = LinkReporter(db, connectors.states, process_identity())
    services.scheduler = Scheduler(
        db,
        cutoff=settings.settlement_cutoff,
        authorization_ttl_seconds=settings.authorization_ttl_seconds,
        interval=settings.scheduler_interval,
        oauth_window_seconds=settings.oauth_window,
        retries=Retries(settings.recurring_retries, int(settings.recurring_retry_delay_seconds * 1000)),
        wake=services.wake_workers,  # a recurring charge's job; an expired card's callback
    )
    return services


def _callback_config(settings: Settings) -> CallbackConfig:
    return CallbackConfig(
        timeout_seconds=settings.callback_timeout,
        base_delay_seconds=settings.callback_base_delay,
        backoff=settings.callback_backoff,
        max_attempts=settings.callback_max_attempts,
        poll_interval=settings.poll_interval,
        lease_seconds=settings.callback_timeout + 5,  # an attempt never outlives its timeout
        concurrency=settings.callback_concurrency,
        limits=DeliveryLimits(settings.callback_per_host, settings.callback_per_merchant),
        idle_claim_interval=settings.idle_claim_interval,
    )


# The cyclic garbage collector, measured on a sale without HTTP: it took 17 µs of 164 (10%), and each full
# collection stopped the event loop for about 90 ms, scanning the 80,000 objects of modules, SQLAlchemy
# and the services, none of which ever becomes garbage. Frozen, they are out of its scans (a full
# collection then takes about 27 ms); collecting young objects every 10,000 allocations rather than 700
# made full collections rare (none in 20,000 sales) and the collector's share 2%.
_YOUNG_COLLECTION_THRESHOLD = (10_000, 50, 100)


def settle_garbage_collector() -> None:
    """Called once start-up is over: what exists then lives as long as the process."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*_YOUNG_COLLECTION_THRESHOLD)


async def run_workers(services: Services, stop: asyncio.Event) -> None:
    """Runs this process's job workers, scheduler, callback dispatcher and the report of its acquirer links
    until ``stop``, then lets them finish the work in hand within what is left of the grace period
    (``KASSA_SHUTDOWN_GRACE``), cuts off what is not done by then, and hands back every lease they still
    hold: another process takes the work at once instead of when the lease would have run out. Its links
    are signed off last, and their reports deleted."""
    loops: list[Coroutine[Any, Any, None]] = [worker.run(stop) for worker in services.workers]
    for background in (services.scheduler, services.dispatcher, services.reporter):
        if background is not None:
            loops.append(background.run(stop))
    services.background = [asyncio.create_task(loop) for loop in loops]
    sampler = asyncio.create_task(_sample_figures(services, stop))
    consumers = services.consumers()
    settings = services.settings
    watcher = asyncio.create_task(signals.watch(settings.database_url, settings.poll_interval, consumers))
    await stop.wait()
    watcher.cancel()  # stopping: nothing more is claimed
    await asyncio.gather(watcher, return_exceptions=True)
    services.begin_stopping()
    _, cut_off = await asyncio.wait([*services.background, sampler], timeout=services.grace_left())
    for task in cut_off:
        task.cancel()
    await asyncio.gather(*cut_off, return_exceptions=True)
    if cut_off:
        log.warning("stopped with work in flight after the grace period", extra={"loops": len(cut_off)})
    await _hand_back(services)
    if services.connectors is not None:  # signed off once nothing more is sent
        await services.connectors.close()
    if services.reporter is not None:  # and then no longer reported
        await services.reporter.forget()


async def _hand_back(services: Services) -> None:
    for consumer in services.consumers():
        try:
            released = await services.db.write(consumer.hand_back)
        except Exception:  # the leases run out instead
            log.exception("handing back leases failed", extra={"owner": consumer.owner})
            continue
        if released:
            log.info("handed back leased work", extra={"owner": consumer.owner, "count": released})


_SAMPLE_SECONDS = 1.0


async def _sample_figures(services: Services, stop: asyncio.Event) -> None:
    while not stop.is_set():
        services.sample_figures()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), _SAMPLE_SECONDS)
