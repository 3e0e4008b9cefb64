"""The job worker: claim due jobs, run each through the processor, record the outcome.

A claimed job is leased; if this process dies the lease runs out and another worker takes the job over.
A job this process writes for its own worker is written leased to it and handed over after the commit
(``lease``, ``take``); the claim loop finds the rest: timers, retries, jobs of dead workers.
Recording an outcome first checks that the lease is still ours (a fence), in the same transaction that
moves the transaction's stage and deletes the job, so one job's outcome is recorded exactly once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.domain.lifecycle import Stage, TxType, is_final
from kassa.engine import threeds
from kassa.engine.callbacks import CallbackDispatcher
from kassa.engine.polling import Consumer
from kassa.engine.processor import AuthorizationRequest, CardDetails, Processor
from kassa.storage import jobs as job_queue
from kassa.storage import orders as order_store
from kassa.storage.callbacks import NOTHING_QUEUED, Queued
from kassa.storage.database import Database
from kassa.storage.jobs import Job, Lease
from kassa.storage.orders import AuthorizationWork, Outcome
from kassa.vault.keys import Vault, cvv_context, pan_context

log = logging.getLogger("kassa.worker")

_BATCH = 32
_MAX_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    poll_interval: float
    lease_seconds: float
    reconcile_delay_seconds: float
    session_ttl_seconds: float


Timer = Callable[[Connection, int, int], int]  # returns how many callbacks it queued


def _nothing_left(_conn: Connection, _transaction_id: int, _now_ms: int) -> int:
    return 0


# Jobs that are a deadline rather than work for the processor.
TIMERS: dict[str, Timer] = {"method_timeout": threeds.method_timeout, "session_timeout": threeds.session_timeout}


class Worker(Consumer):
    def __init__(
        self,
        db: Database,
        vault: Vault,
        processor: Processor,
        config: WorkerConfig,
        callbacks: CallbackDispatcher | None = None,
    ) -> None:
        super().__init__(db, config.poll_interval, "worker", config.lease_seconds)
        self.callbacks = callbacks  # told of callbacks once committed, so they go out at once
        self.vault = vault
        self.processor = processor
        self.config = config

    async def run(self, stop: asyncio.Event) -> None:
        log.info("worker started", extra={"worker": self.owner})
        await self.consume(stop, self._claim, self._run_job)

    def take(self, job: Job) -> None:
        """Runs a job written leased to this worker (``lease``), now committed."""
        self._take(lambda: self._run_job(job))

    def _claim(self, conn: Connection) -> list[Job]:
        return job_queue.claim(conn, self.owner, now_ms(), self.lease_ms, _BATCH)

    async def _run_job(self, job: Job) -> None:
        try:
            await self._process(job)
        except Exception:
            log.exception("job failed", extra={"job": job.id, "attempt": job.attempts})
            await self._after_failure(job)

    async def _process(self, job: Job) -> None:
        timer = TIMERS.get(job.kind)
        if timer is not None:
            if await self.db.write(lambda conn: self._fenced(conn, job, timer)):
                self._wake_callbacks()
            return
        work = await self.db.read_point(lambda conn: order_store.load_authorization(conn, job.transaction_id))
        if is_final(Stage(work.transaction["stage"])):  # a job left behind by a crash after the outcome
            await self.db.write(lambda conn: self._fenced(conn, job, _nothing_left))
            return
        request = self._request(work)
        if job.kind == "reconcile":
            outcome = await self.processor.reconcile(request)
        else:
            if await self._authentication_pending(job, work, request):
                return
            outcome = await self.processor.process(request)
        lease = self.callbacks.lease() if self.callbacks is not None else None
        recorded, queued = await self.db.write(lambda conn: self._record(conn, job, outcome, lease))
        self._callbacks_queued(queued)
        if recorded:
            log.info(
                "transaction processed",
                extra={
                    "order": work.order["id"],
                    "transaction": job.transaction_id,
                    "stage": outcome.stage.value,
                    "worker": self.owner,
                },
            )

    async def _authentication_pending(self, job: Job, work: AuthorizationWork, request: AuthorizationRequest) -> bool:
        """Starts 3-D Secure when the issuer asks for it; True while it waits for the customer's browser."""
        if Stage(work.transaction["stage"]) is not Stage.PROCESSING:
            return False  # authenticated already (3d_validated): authorize now
        path = await self.processor.three_ds_path(request)
        if path is None:
            return False
        brand = work.card["brand"] if work.card is not None else None
        ttl_ms = int(self.config.session_ttl_seconds * 1000)

        def start(conn: Connection) -> Stage | None:
            if not job_queue.still_held(conn, job, self.owner):
                return None
            stage = threeds.begin(conn, job.transaction_id, path, brand, now_ms(), ttl_ms)
            if stage is not Stage.THREE_D_VALIDATED:
                job_queue.finish(conn, job)
            return stage

        stage = await self.db.write(start)
        if stage is not None and is_final(stage):  # rejected by the issuer: its callbacks are queued
            self._wake_callbacks()
        return stage is not Stage.THREE_D_VALIDATED

    def _fenced(self, conn: Connection, job: Job, timer: Timer) -> int:
        if job_queue.finish_held(conn, job, self.owner):
            return timer(conn, job.transaction_id, now_ms())
        return 0

    def _record(self, conn: Connection, job: Job, outcome: Outcome, lease: Lease | None) -> tuple[bool, Queued]:
        """Records the outcome while the lease holds; returns whether it did, and the callbacks it queued."""
        if not job_queue.finish_held(conn, job, self.owner):
            return False, NOTHING_QUEUED
        now = now_ms()
        queued = order_store.record_outcome(conn, job.transaction_id, outcome, now, lease)
        if outcome.stage is Stage.UNKNOWN:
            reconcile_at = now + int(self.config.reconcile_delay_seconds * 1000)
            job_queue.add(conn, "reconcile", job.transaction_id, run_at_ms=reconcile_at, now_ms=now)
        return True, queued

    def _callbacks_queued(self, queued: Queued) -> None:
        if self.callbacks is None:
            return
        if queued.handed:
            self.callbacks.take(queued.handed)
        if queued.count > len(queued.handed):
            self.callbacks.wake()

    def _wake_callbacks(self) -> None:
        if self.callbacks is not None:
            self.callbacks.wake()

    def _request(self, work: AuthorizationWork) -> AuthorizationRequest:
        tx, card = work.transaction, work.card
        details = None
        if card is not None:
            cvv = None
            if work.cvv_ciphertext is not None:
                cvv = self.vault.decrypt(work.cvv_ciphertext, cvv_context(tx["serial_number"]))
            details = CardDetails(
                pan=self.vault.decrypt(card["pan_ciphertext"], pan_context(work.order["merchant_id"])),
                exp_month=card["exp_month"],
                exp_year=card["exp_year"],
                holder_name=card["holder_name"],
                cvv=cvv,
            )
        return AuthorizationRequest(
            order_id=work.order["id"],
            serial=tx["serial_number"],
            tx_type=TxType(tx["tx_type"]),
            amount=tx["amount"],
            currency=tx["currency"],
            card=details,
            cardholder_present=work.order["card_ref_id"] is None,
        )

    async def _after_failure(self, job: Job) -> None:
        if job.attempts < _MAX_ATTEMPTS:
            retry_at = now_ms() + 1000 * 2**job.attempts
            await self.db.write(lambda conn: job_queue.retry_later(conn, job, self.owner, retry_at))
            return
        failed = Outcome(Stage.ERROR, "500", "Processing failed")
        _, queued = await self.db.write(lambda conn: self._record(conn, job, failed, None))
        self._callbacks_queued(queued)
