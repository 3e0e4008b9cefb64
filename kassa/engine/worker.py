"""The job worker: claim due jobs, run each through the processor, record the outcome.

A claimed job is leased; if this process dies the lease runs out and another worker takes the job over.
A job this process writes for its own worker is written leased to it and handed over after the commit
(``lease``, ``take``); the claim loop finds the rest: timers, retries, jobs of dead workers.
Recording an outcome first checks that the lease is still ours (a fence), in the same transaction that
moves the transaction's stage and deletes the job, so one job's outcome is recorded exactly once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from sqlalchemy import Connection

from kassa import metrics
from kassa.clock import now_ms
from kassa.core import authentication, outcomes
from kassa.core.outbox import Queued
from kassa.domain import destinations
from kassa.domain.lifecycle import Stage, is_final
from kassa.domain.transactions import TxType, rule
from kassa.engine.callbacks import CallbackDispatcher
from kassa.engine.polling import Consumer
from kassa.processors.interface import Card, Outcome, Processor, TransactionRequest
from kassa.storage import jobs as job_queue
from kassa.storage import orders as order_store
from kassa.storage import payouts as payout_store
from kassa.storage.callbacks import CallbackLease
from kassa.storage.database import Database
from kassa.storage.jobs import Job, JobKind
from kassa.storage.orders import AuthorizationWork
from kassa.vault import tokens
from kassa.vault.keys import Vault, cvv_context, destination_context, pan_context

log = logging.getLogger("kassa.worker")

_BATCH = 32


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    poll_interval: float
    lease_seconds: float
    reconcile_delay_seconds: float
    session_ttl_seconds: float
    max_attempts: int  # a job that failed this often records an ``error`` outcome
    retry_delay_seconds: float  # before a failed job's first retry; each further one waits twice as long
    idle_claim_interval: float = 5.0  # the longest an idle worker goes without a claim


# A deadline rather than work for the processor: a state change of its own, run once the job is fenced.
# Returns how many callbacks it queued.
Timer = Callable[[Connection, int, int], int]


class Worker(Consumer):
    def __init__(
        self,
        db: Database,
        vault: Vault,
        processor: Processor,
        config: WorkerConfig,
        callbacks: CallbackDispatcher | None = None,
    ) -> None:
        super().__init__(db, (config.poll_interval, config.idle_claim_interval), "worker", config.lease_seconds)
        self.callbacks = callbacks  # told of callbacks once committed, so they go out at once
        self.vault = vault
        self.processor = processor
        self.config = config
        # Every job kind, and what runs it.
        self._runs: dict[JobKind, Callable[[Job], Awaitable[None]]] = {
            JobKind.PROCESS: self._process,
            JobKind.RECONCILE: self._reconcile,
            JobKind.METHOD_TIMEOUT: self._timer(authentication.method_timeout),
            JobKind.SESSION_TIMEOUT: self._timer(authentication.session_timeout),
        }

    async def run(self, stop: asyncio.Event) -> None:
        log.debug("worker started", extra={"worker": self.owner})
        await self.consume(stop, self._claim, self._run_job, _BATCH)

    def take(self, job: Job, work: AuthorizationWork | None = None) -> None:
        """Runs a job written leased to this worker (``lease``), now committed; a processing job handed
        over with its ``work`` (``core.opening.opened_work``) is not read back: what follows the decision
        locks the transaction and checks its stage again, as it does after a read."""
        self._take(lambda: self._run_job(job, work))

    def hand_back(self, conn: Connection) -> int:
        return job_queue.release(conn, self.owner)

    def next_due(self, conn: Connection) -> int | None:
        return job_queue.next_due(conn)

    def _claim(self, conn: Connection, batch: int) -> list[Job]:
        return job_queue.claim(conn, self.owner, now_ms(), self.lease_ms, batch)

    async def _run_job(self, job: Job, work: AuthorizationWork | None = None) -> None:
        try:
            await (self._authorize(job, work) if work is not None else self._runs[job.kind](job))
        except Exception:
            log.exception("job failed", extra={"job": job.id, "attempt": job.attempts})
            await self._after_failure(job)

    def _timer(self, timer: Timer) -> Callable[[Job], Awaitable[None]]:
        async def run(job: Job) -> None:
            if await self.db.write(lambda conn: self._fenced(conn, job, timer)):
                self._wake_callbacks()

        return run

    async def _process(self, job: Job) -> None:
        work = await self._load(job)
        if work is not None:
            await self._authorize(job, work)

    async def _authorize(self, job: Job, work: AuthorizationWork) -> None:
        request = self._request(work)
        if await self._authentication_pending(job, work, request):
            return
        await self._record(job, work, await self.processor.process(request))

    async def _reconcile(self, job: Job) -> None:
        work = await self._load(job)
        if work is not None:
            await self._record(job, work, await self.processor.reconcile(self._request(work)))

    async def _load(self, job: Job) -> AuthorizationWork | None:
        """What the processor needs; None (and the job finished) when a crash after the outcome left the
        job behind."""
        work = await self.db.read_point(lambda conn: order_store.load_authorization(conn, job.transaction_id))
        if is_final(Stage(work.transaction["stage"])):
            await self.db.write(lambda conn: self._fenced(conn, job, _nothing_left))
            return None
        if rule(TxType(work.transaction["tx_type"])).reads_destination(has_card=work.card is not None):
            order_id = work.order["id"]
            found = await self.db.read_point(lambda conn: payout_store.destination_of(conn, order_id))
            return dataclasses.replace(work, destination=found)
        return work

    async def _record(self, job: Job, work: AuthorizationWork, outcome: Outcome) -> None:
        lease = self.callbacks.lease() if self.callbacks is not None else None
        recorded, queued = await self.db.write(lambda conn: self._recorded(conn, job, outcome, lease))
        self._callbacks_queued(queued)
        if recorded:
            metrics.outcome(outcome.stage.value, outcome.error_code)
            log.info(
                "transaction processed",
                extra={
                    "order": work.order["id"],
                    "transaction": job.transaction_id,
                    "stage": outcome.stage.value,
                    "worker": self.owner,
                },
            )

    async def _authentication_pending(self, job: Job, work: AuthorizationWork, request: TransactionRequest) -> bool:
        """Starts 3-D Secure when the issuer asks for it; True while it waits for the customer's browser."""
        if Stage(work.transaction["stage"]) is not Stage.PROCESSING:
            return False  # authenticated already (3d_validated): authorize now
        path = await self.processor.three_ds_path(request)
        if path is None:
            return False
        brand = work.card["brand"] if work.card is not None else None
        ttl_ms = int(self.config.session_ttl_seconds * 1000)
        _, checkout = tokens.new_token(self.vault)  # its URL is read back from the row when needed

        def start(conn: Connection) -> Stage | None:
            if not job_queue.still_held(conn, job, self.owner):
                return None
            stage = authentication.begin(conn, job.transaction_id, path, brand, now_ms(), ttl_ms, checkout)
            if stage is not Stage.THREE_D_VALIDATED:
                job_queue.finish(conn, job)
            return stage

        stage = await self.db.write(start)
        if stage is not None and is_final(stage):  # rejected by the issuer: its callbacks are queued
            self._wake_callbacks()
        return stage is not Stage.THREE_D_VALIDATED

    def _fenced(self, conn: Connection, job: Job, timer: Timer) -> int:
        """Runs ``timer`` while this worker's lease on ``job`` holds, deleting the job with it."""
        if job_queue.finish_held(conn, job, self.owner):
            return timer(conn, job.transaction_id, now_ms())
        return 0

    def _recorded(
        self, conn: Connection, job: Job, outcome: Outcome, lease: CallbackLease | None
    ) -> tuple[bool, Queued]:
        reconcile_after_ms = int(self.config.reconcile_delay_seconds * 1000)
        return outcomes.record_for_job(
            conn, job, self.owner, outcome, now_ms(), reconcile_after_ms=reconcile_after_ms, callback_lease=lease
        )

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

    def _request(self, work: AuthorizationWork) -> TransactionRequest:
        tx, card, destination = work.transaction, self._card(work), self._destination(work)
        return TransactionRequest(
            order_id=work.order["id"],
            serial=tx["serial_number"],
            tx_type=TxType(tx["tx_type"]),
            amount=tx["amount"],
            currency=tx["currency"],
            instrument=card or destination,
            # A rebill or a recurring charge: nobody is there to answer 3-D Secure.
            cardholder_present=work.order["card_ref_id"] is None and work.order["recurring_payment_id"] is None,
            destination=destination if card else None,  # a card-to-card transfer's receiving card
        )

    def _card(self, work: AuthorizationWork) -> Card | None:
        """The order's card, opened, with the CVV kept for its authorization."""
        card = work.card
        if card is None:
            return None
        cvv = None
        if work.cvv_ciphertext is not None:
            cvv = self.vault.decrypt(work.cvv_ciphertext, cvv_context(work.transaction["serial_number"]))
        return Card(
            pan=self.vault.decrypt(card["pan_ciphertext"], pan_context(work.order["merchant_id"])),
            exp_month=card["exp_month"],
            exp_year=card["exp_year"],
            holder_name=card["holder_name"],
            cvv=cvv,
        )

    def _destination(self, work: AuthorizationWork) -> destinations.Destination | None:
        """Where a payout or transfer goes when it is not (only) the order's card, opened."""
        if work.destination is None:
            return None
        context = destination_context(work.order["merchant_id"])
        details = self.vault.decrypt(work.destination["details_ciphertext"], context)
        return destinations.unsealed(work.destination["kind"], orjson.loads(details))

    async def _after_failure(self, job: Job) -> None:
        if job.attempts < self.config.max_attempts:
            delay_ms = int(self.config.retry_delay_seconds * 1000) * 2 ** (job.attempts - 1)
            retry_at = now_ms() + delay_ms
            await self.db.write(lambda conn: job_queue.retry_later(conn, job, self.owner, retry_at))
            self.wake()  # a claim learns the retry's due time (a handed-over job's loop had not seen it)
            return
        failed = Outcome(Stage.ERROR, "500", "Processing failed")
        _, queued = await self.db.write(lambda conn: self._recorded(conn, job, failed, None))
        self._callbacks_queued(queued)


def _nothing_left(_conn: Connection, _transaction_id: int, _now_ms: int) -> int:
    return 0
