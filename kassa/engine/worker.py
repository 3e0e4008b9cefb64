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
from functools import partial

from sqlalchemy import Connection

from kassa import metrics
from kassa.clock import now_ms
from kassa.core import authentication, outcomes
from kassa.core import risk as core_risk
from kassa.core.outbox import Queued
from kassa.domain.lifecycle import Stage, is_final
from kassa.domain.risk import Mode
from kassa.domain.threeds_protocol import ChallengeIndicator
from kassa.domain.transactions import Flow, TxType, rule
from kassa.engine.callbacks import CallbackDispatcher
from kassa.engine.polling import Consumer
from kassa.engine.requests import authenticable, request_of
from kassa.processors.interface import (
    Authenticator,
    Outcome,
    Processors,
    Request,
)
from kassa.storage import acquirer_messages as message_store
from kassa.storage import authentications as authentication_store
from kassa.storage import jobs as job_queue
from kassa.storage import orders as order_store
from kassa.storage import payouts as payout_store
from kassa.storage.callbacks import CallbackLease
from kassa.storage.database import Database
from kassa.storage.jobs import Job, JobKind
from kassa.storage.orders import AuthorizationWork
from kassa.vault import tokens
from kassa.vault.keys import Vault

log = logging.getLogger("kassa.worker")

_BATCH = 32
_FOLLOW_UPS = frozenset({Flow.CAPTURE, Flow.REVERSE, Flow.REFUND})  # they name the authorization they act on


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
        processors: Processors,
        authenticator: Authenticator,
        config: WorkerConfig,
        callbacks: CallbackDispatcher | None = None,
    ) -> None:
        super().__init__(db, (config.poll_interval, config.idle_claim_interval), "worker", config.lease_seconds)
        self.callbacks = callbacks  # told of callbacks once committed, so they go out at once
        self.vault = vault
        self.processors = processors
        self.authenticator = authenticator
        self.config = config
        # Every job kind, and what runs it.
        self._runs: dict[JobKind, Callable[[Job], Awaitable[None]]] = {
            JobKind.PROCESS: self._process,
            JobKind.RECONCILE: self._reconcile,
            JobKind.METHOD_TIMEOUT: self._timer(partial(authentication.method_timeout, authenticator)),
            JobKind.SESSION_TIMEOUT: self._timer(authentication.session_timeout),
        }
        # Each kind's series exists from the start, at 0, as alerts on its increase and dashboards expect.
        self._failures = {kind: metrics.JOB_FAILURES.labels(kind.value) for kind in JobKind}

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
            self._failures[job.kind].inc()
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
        request = request_of(await self._completed(job, work), self.vault)
        started = await self._authentication(job, work, request)
        if started is not None and started is not Stage.THREE_D_VALIDATED:
            return  # waiting for the customer's browser, or ended by the issuer
        if started is Stage.THREE_D_VALIDATED:  # authenticated at once (attempted): the result goes along
            validated = {**work.transaction, "stage": started.value}
            request = request_of(
                await self._completed(job, dataclasses.replace(work, transaction=validated)), self.vault
            )
        processor = await self.processors.serving(work.order["endpoint_id"])
        # A job's first run: a crash or a failure before its outcome is recorded leaves it to be claimed again.
        await self._record(job, work, await processor.process(request, first=job.attempts == 1))

    async def _reconcile(self, job: Job) -> None:
        work = await self._load(job)
        if work is not None:
            request = request_of(await self._completed(job, work), self.vault)
            processor = await self.processors.serving(work.order["endpoint_id"])
            await self._record(job, work, await processor.reconcile(request))

    async def _load(self, job: Job) -> AuthorizationWork | None:
        """What the processor needs; None (and the job finished) when a crash after the outcome left the
        job behind."""
        work = await self.db.read_point(lambda conn: order_store.load_authorization(conn, job.transaction_id))
        if is_final(Stage(work.transaction["stage"])):
            await self.db.write(lambda conn: self._fenced(conn, job, _nothing_left))
            return None
        return work

    async def _completed(self, job: Job, work: AuthorizationWork) -> AuthorizationWork:
        """``work`` with what only some transactions need read as well: where a payout goes, the
        authorization a follow-up acts on, the result of the cardholder's authentication."""
        row, order_id, tx_id = rule(TxType(work.transaction["tx_type"])), work.order["id"], job.transaction_id
        if row.reads_destination(has_card=work.card is not None):
            found = await self.db.read_point(lambda conn: payout_store.destination_of(conn, order_id))
            work = dataclasses.replace(work, destination=found)
        if row.flow in _FOLLOW_UPS:
            original = await self.db.read_point(lambda conn: order_store.authorization_of(conn, order_id))
            work = dataclasses.replace(work, original=original)
        if Stage(work.transaction["stage"]) is Stage.THREE_D_VALIDATED:
            record = await self.db.read_point(lambda conn: authentication_store.of_transaction(conn, tx_id))
            work = dataclasses.replace(work, authentication=record)
        return work

    async def _record(
        self, job: Job, work: AuthorizationWork, outcome: Outcome, also: Callable[[Connection], None] | None = None
    ) -> None:
        """Records ``outcome`` while this worker's lease on ``job`` holds, and with it what ``also`` writes."""
        lease = self.callbacks.lease() if self.callbacks is not None else None

        def record(conn: Connection) -> tuple[bool, Queued]:
            recorded, queued = self._recorded(conn, job, outcome, lease)
            if recorded and also is not None:
                also(conn)
            return recorded, queued

        recorded, queued = await self.db.write(record)
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

    async def _authentication(self, job: Job, work: AuthorizationWork, request: Request) -> Stage | None:
        """Starts 3-D Secure when the issuer asks for it, and returns the stage it moved the transaction
        to (``3d_validated``: authorize now); ``processing`` when another worker took the job over; None
        when none started (not asked, or done already: authorize now). Only a cardholder's own payment is
        authenticated: nobody could answer for a rebill or a charge. A payment above an enforcing 3-D
        Secure rule's amount asks the issuer for a challenge, and ends ``filtered`` when it offers no
        authentication (``_unauthenticated``)."""
        if Stage(work.transaction["stage"]) is not Stage.PROCESSING:
            return None  # authenticated already (3d_validated): authorize now
        asked = authenticable(request)
        if asked is None:
            return None
        marked = work.transaction.get("three_ds_rules")
        mandated = marked == Mode.ENFORCE.value
        challenge = ChallengeIndicator.MANDATED if mandated else ChallengeIndicator.NO_PREFERENCE
        path = await self.authenticator.path(asked, challenge)
        if path is None:
            return None if marked is None else await self._unauthenticated(job, work)
        brand = work.card["brand"] if work.card is not None else None
        ttl_ms = int(self.config.session_ttl_seconds * 1000)
        _, checkout = tokens.new_token(self.vault)  # its URL is read back from the row when needed

        def start(conn: Connection) -> Stage | None:
            if not job_queue.still_held(conn, job, self.owner):
                return None
            stage = authentication.begin(
                conn, self.authenticator, job.transaction_id, path, brand, now_ms(), ttl_ms, checkout
            )
            if stage is not Stage.THREE_D_VALIDATED:
                job_queue.finish(conn, job)
            return stage

        stage = await self.db.write(start)
        if stage is not None and is_final(stage):  # rejected by the issuer: its callbacks are queued
            self._wake_callbacks()
        return Stage.PROCESSING if stage is None else stage  # lost the job: nothing more to do here

    async def _unauthenticated(self, job: Job, work: AuthorizationWork) -> Stage | None:
        """A payment above 3-D Secure rules' amounts whose issuer offered no authentication: ``filtered`` by
        the first enforcing rule (recorded as any outcome, with the rules' hits; nothing goes to the
        acquirer), or None, authorize now, when dry-run rules alone count it."""
        order_id, tx_id = work.order["id"], job.transaction_id
        verdict = await self.db.read_point(lambda conn: core_risk.unauthenticated(conn, tx_id))
        hits = partial(core_risk.record_hits, order_id=order_id, verdict=verdict, now_ms=now_ms())
        if verdict.filtered_by is None:
            await self.db.write(hits)
            return None
        await self._record(job, work, core_risk.filtered(verdict.filtered_by), also=hits)
        return Stage.FILTERED

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

    async def _after_failure(self, job: Job) -> None:
        if job.attempts < self.config.max_attempts:
            delay_ms = int(self.config.retry_delay_seconds * 1000) * 2 ** (job.attempts - 1)
            retry_at = now_ms() + delay_ms
            await self.db.write(lambda conn: job_queue.retry_later(conn, job, self.owner, retry_at))
            self.wake()  # a claim learns the retry's due time (a handed-over job's loop had not seen it)
            return
        _, queued = await self.db.write(lambda conn: self._recorded(conn, job, _given_up(conn, job), None))
        self._callbacks_queued(queued)


_FAILED = Outcome(Stage.ERROR, "500", "Processing failed")
_TO_RECONCILE = Outcome(Stage.UNKNOWN)


def _given_up(conn: Connection, job: Job) -> Outcome:
    """The outcome of a job that failed its last attempt: ``error`` 500, unless a message of the transaction
    may have reached an acquirer (an approval whose answer was not recorded, a reversal not answered yet):
    then ``unknown``, and its reconciliation reverses or repeats it as after a crash (CONTRACT §15), never
    leaving the money taken under an error."""
    return _TO_RECONCILE if message_store.reached_acquirer(conn, job.transaction_id) else _FAILED


def _nothing_left(_conn: Connection, _transaction_id: int, _now_ms: int) -> int:
    return 0
