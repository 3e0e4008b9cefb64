"""The long-lived objects of one gateway process, built once at start-up and shared by requests."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from kassa.domain.merchants import Endpoint
from kassa.engine.sandbox import SandboxProcessor
from kassa.engine.scheduler import Scheduler
from kassa.engine.worker import Worker, WorkerConfig
from kassa.settings import Settings
from kassa.storage import merchants as merchant_store
from kassa.storage.database import Database, open_database
from kassa.vault.keys import Vault, load_vault


class EndpointDirectory:
    """Endpoints by id, cached briefly: every request needs its endpoint, operators change them rarely.
    Only hits are cached, so an endpoint created a moment ago is found at once."""

    def __init__(self, db: Database, ttl_seconds: float) -> None:
        self._db = db
        self._ttl = ttl_seconds
        self._cache: dict[int, tuple[float, Endpoint]] = {}

    async def get(self, endpoint_id: int) -> Endpoint | None:
        cached = self._cache.get(endpoint_id)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            endpoint = await self._db.read(lambda conn: merchant_store.load_endpoint(conn, endpoint_id))
        except merchant_store.NotFound:
            return None
        self._cache[endpoint_id] = (now + self._ttl, endpoint)
        return endpoint


@dataclass
class Services:
    settings: Settings
    db: Database
    vault: Vault
    directory: EndpointDirectory
    workers: list[Worker] = field(default_factory=list)
    scheduler: Scheduler | None = None

    def wake_workers(self) -> None:
        for worker in self.workers:
            worker.wake()


def build_services(settings: Settings, worker_count: int) -> Services:
    db = open_database(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    vault = load_vault(settings.vault_key, settings.vault_key_file)
    processor = SandboxProcessor(settings.sandbox_latency_ms)
    config = WorkerConfig(settings.poll_interval, settings.job_lease_seconds, settings.reconcile_delay_seconds)
    workers = [Worker(db, vault, processor, config) for _ in range(worker_count)]
    scheduler = None
    if worker_count:  # time-driven work runs where jobs run; the API alone does none
        scheduler = Scheduler(
            db,
            cutoff=settings.settlement_cutoff,
            authorization_ttl_seconds=settings.authorization_ttl_seconds,
            interval=settings.scheduler_interval,
        )
    directory = EndpointDirectory(db, settings.endpoint_cache_seconds)
    return Services(settings, db, vault, directory, workers, scheduler)


async def run_workers(services: Services, stop: asyncio.Event) -> None:
    tasks = [worker.run(stop) for worker in services.workers]
    if services.scheduler is not None:
        tasks.append(services.scheduler.run(stop))
    await asyncio.gather(*tasks)
