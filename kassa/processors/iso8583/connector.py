"""A connector to an acquirer's host over ISO 8583 (CONTRACT §15): the ``Processor`` of one connection.

Each financial message is recorded before it goes out (``storage.acquirer_messages``), its id the RRN. An
answer gives the outcome by field 39 (the dialect's table) and is recorded in the transaction that records
the outcome (``Outcome.unrecorded``). A request left unanswered after the response timeout is ``unknown``:
the connector reverses it at once (0400), and the engine's reconciliation asks again every
``KASSA_RECONCILE_DELAY_SECONDS`` (60 s, as §15 says), which repeats the reversal (0401) until the host
answers it; then the transaction ends ``error`` 911. Advices (a capture 0220, a void or cancel 0400) are
repeated the same way until answered, and are final once answered. Neither is repeated past 24 hours from
the message's first sending: it is then given up (``abandoned``, logged and counted for operators) and the
transaction ends ``error`` 911 as an unanswered one does. A message the process may have sent before it died
(recorded, its answer not) counts as unanswered: it is reversed, or repeated, never sent again as new. While
no socket is signed on nothing is sent: ``error`` 907 at once.

A transfer from a card to a card is the charge of the source card, then the credit of the receiving card
(``_transfer``): the credit is recorded with the charge's approval, and the void of the charge with the
credit's failure, so that after a crash the charge is never left standing without its credit.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial

from sqlalchemy import Connection as DbConnection

from kassa import crashpoints, metrics
from kassa.clock import now_ms
from kassa.domain.action_codes import ActionCode
from kassa.domain.lifecycle import Stage
from kassa.processors.interface import Capture, Original, Outcome, Refund, Request, Reverse, Transfer
from kassa.processors.iso8583 import dialect as iso
from kassa.processors.iso8583 import messages
from kassa.processors.iso8583.dialect import Fields
from kassa.processors.iso8583.link import Link, NotSignedOn, StanSource
from kassa.processors.iso8583.messages import SentOriginal
from kassa.storage import acquirer_messages as store
from kassa.storage.acquirer_messages import State
from kassa.storage.database import Database
from kassa.storage.prepared import Record

log = logging.getLogger("kassa.acquirer")

_ADVICES = (Capture, Reverse)  # answered, they are final; unanswered, they are repeated, never reversed
# CONTRACT §15: reversals and advices are repeated until answered or until this long after the message was
# first sent (for a reversal, the request it reverses: the response timeout earlier, at most 5 minutes).
REPEATED_FOR_MS = 24 * 3600 * 1000


class DatabaseStans:
    """A connection's STANs, reserved a block at a time (``storage.acquirer_messages.reserve_stans``)."""

    def __init__(self, db: Database, connection_id: int, block: int = 100) -> None:
        self._db = db
        self.connection_id = connection_id
        self._block = block
        self._numbers: Iterator[int] = iter(())

    async def next(self) -> str:
        number = next(self._numbers, None)
        while number is None:
            reserved = await self._db.write(lambda conn: store.reserve_stans(conn, self.connection_id, self._block))
            self._numbers = iter(reserved)
            number = next(self._numbers, None)
        return store.stan_of(number)


class IsoProcessor:
    def __init__(self, db: Database, connection_id: int, name: str, link: Link, stans: StanSource) -> None:
        self._db = db
        self.connection_id = connection_id
        self.name = name
        self._link = link
        self._dialect = link.dialect
        self._terminal = link.terminal
        self._stans = stans

    @property
    def link(self) -> Link:
        return self._link

    async def process(self, request: Request, *, first: bool = False) -> Outcome:
        """Sends ``request``, unless a message of it (at its amount) went out before (a job run again after
        a crash, or one whose reversal is repeated): then its outcome is that message's, reconciled."""
        if first:
            return await self.send(request)
        last = await self._db.read_point(lambda conn: store.last_of(conn, request.serial))
        if last is not None and last["state"] != State.UNSENT and store.of_try(last, request.amount):
            return await self.reconcile(request)
        return await self.send(request)

    async def reconcile(self, request: Request) -> Outcome:
        if isinstance(request, Transfer):
            return await self._reconcile_transfer(request)
        last = await self._db.read_point(lambda conn: store.last_of(conn, request.serial))
        return await self._reconciled(request, last)

    async def _reconciled(self, request: Request, last: Record | None) -> Outcome:
        """The outcome of ``request`` whose latest message is ``last``: its reversal or repetition sent
        again, until answered or given up."""
        if last is None or last["state"] == State.UNSENT:
            return Outcome(Stage.UNKNOWN)  # nothing reached the host: a new try is the job's to make
        if last["state"] == State.ANSWERED:  # its outcome not recorded yet when the job stopped (a crash)
            return self._recorded_answer(last)
        if last["state"] in (State.REVERSED, State.ABANDONED):
            return _timed_out()
        if last["state"] in store.PENDING and now_ms() - last["sent_at_ms"] >= REPEATED_FOR_MS:
            return await self._abandon(request, last)
        if isinstance(request, _ADVICES):
            return await self._repeat_advice(request, last)
        return await self._reverse(request, last)

    async def send(self, request: Request) -> Outcome:
        """Sends ``request`` as new: for a transaction with no message outstanding (``process`` checks; a
        route that read the transaction's messages already calls this)."""
        if isinstance(request, Transfer):
            return await self._transfer(request)
        try:
            request, original = await self._with_original(request)
            sent, fields = await self._recorded(request, original)
        except messages.Unsupported as unsendable:  # a payout to a bank account, say: nothing is sent
            return Outcome(Stage.ERROR, ActionCode.ISSUER_INOPERATIVE, f"Not sent to this acquirer: {unsendable}")
        answer = await self._delivered(request, sent, fields)
        return answer if isinstance(answer, Outcome) else self._answered(sent["id"], answer)

    async def _recorded(
        self, request: Request, original: SentOriginal | None, after: _End | None = None
    ) -> tuple[Record, Fields]:
        """``request``'s message recorded before it is sent, with ``after`` (the end of the message before
        it) in the same transaction: its row, and its fields with the RRN, the row's id."""
        stan, at = await self._stans.next(), _utc_now()
        unnumbered = self._message(request, original, stan, 0, at)
        mti, code, serial, moment, amount = unnumbered["t"], unnumbered["3"], request.serial, now_ms(), request.amount

        def record(conn: DbConnection) -> int:
            if after is not None:
                store.move(
                    conn,
                    after.message_id,
                    after.state,
                    moment,
                    response_code=after.code,
                    approval_code=after.approval_code,
                    repeated=after.repeated,
                )
            return store.sent(conn, serial, self.connection_id, mti, code, stan, _ms(at), amount)

        message_id = await self._db.write(record)
        sent = {
            "id": message_id,
            "mti": mti,
            "processing_code": code,
            "stan": stan,
            "sent_at_ms": _ms(at),
            "repeats": 0,
        }
        return sent, {**unnumbered, "37": store.rrn_of(message_id)}

    async def _delivered(self, request: Request, sent: Record, fields: Fields) -> Fields | Outcome:
        """The answer to the recorded message ``fields``; or, when none came, the outcome: ``error`` 907 with
        no socket signed on (nothing was sent), the reversal's, an advice's ``unknown`` (it is repeated)."""
        try:
            answer = await self._timed(fields)
        except NotSignedOn:
            await self._moved(sent["id"], State.UNSENT)
            return _NOT_SIGNED_ON
        if answer is not None:
            return answer
        await self._moved(sent["id"], State.UNANSWERED)
        if isinstance(request, _ADVICES):
            return Outcome(Stage.UNKNOWN)
        return await self._reverse(request, sent)

    async def _reverse(
        self, request: Request, sent: Record, then: Callable[[_End], Awaitable[Outcome]] | None = None
    ) -> Outcome:
        """Sends the reversal of the unanswered message ``sent`` (0400, then 0401); ``unknown`` until the host
        answers it, then ``error`` 911, or, with ``then``, what ``then`` makes of the reversed message."""
        request, original = await self._with_original(request)
        first = self._message(request, original, sent["stan"], sent["id"], _at(sent))
        reversal = messages.reversal_of(self._dialect, first, await self._stans.next(), _utc_now(), sent["repeats"] > 0)
        answer = await self._exchanged(reversal)
        if answer is None:
            await self._moved(sent["id"], State.UNANSWERED, repeated=1)
            return Outcome(Stage.UNKNOWN)
        reversed_ = _End(sent["id"], State.REVERSED, answer.get("39"), repeated=1)
        if then is not None:
            return await then(reversed_)
        await self._moved(reversed_.message_id, reversed_.state, response_code=reversed_.code, repeated=1)
        return _timed_out()

    async def _transfer(self, request: Transfer) -> Outcome:
        """A transfer from a card to a card: the charge of the source card; once approved, the credit of the
        receiving card, recorded with the charge's answer. Approved, the transfer is, with the charge's
        approval code and RRN (what the cardholder's statement and a chargeback name). A credit refused,
        unsent or reversed is followed by the void of the charge, recorded with its end; the transfer ends
        as the credit did once the void is answered."""
        charge = messages.charge_of(request)
        sent, fields = await self._recorded(charge, None)
        answer = await self._delivered(charge, sent, fields)
        if isinstance(answer, Outcome):
            return answer
        charged = iso.answer_of(self._dialect, answer)
        if charged.stage is not Stage.APPROVED:
            return self._answered(sent["id"], answer)
        approved = _End(sent["id"], State.ANSWERED, answer.get("39"), approval_code=answer.get("38"))
        credit = messages.credit_of(request)
        credit_sent, credit_fields = await self._recorded(credit, None, after=approved)
        undo = partial(self._voided, request, sent)
        try:
            credited = await self._timed(credit_fields)
        except NotSignedOn:
            return await undo(_End(credit_sent["id"], State.UNSENT))
        if credited is None:
            await self._moved(credit_sent["id"], State.UNANSWERED)
            return await self._reverse(credit, credit_sent, then=undo)
        ended = _End(credit_sent["id"], State.ANSWERED, credited.get("39"))
        if iso.answer_of(self._dialect, credited).stage is not Stage.APPROVED:
            return await undo(ended)
        await self._moved(ended.message_id, ended.state, response_code=ended.code)
        return Outcome(Stage.APPROVED, approval_code=charged.approval_code, processor_rrn=charged.rrn)

    async def _voided(self, request: Transfer, charge: Record, credit: _End) -> Outcome:
        """Ends the transfer's credit as ``credit`` says, records the void of its charge with it, and sends
        the void: the transfer's outcome is the credit's once the void is answered, ``unknown`` until then
        (the void is repeated)."""
        void, original = self._void_of(request, charge)
        sent, fields = await self._recorded(void, original, after=credit)
        answer = await self._exchanged(fields)
        if answer is None:
            await self._moved(sent["id"], State.UNANSWERED)
            return Outcome(Stage.UNKNOWN)
        await self._moved(sent["id"], State.ANSWERED, response_code=answer.get("39"))
        return self._credit_outcome(credit.state, credit.code)

    async def _reconcile_transfer(self, request: Transfer) -> Outcome:
        """A transfer's outcome from its messages on this connection, which are, in the order recorded, the
        charge, the credit once the charge was approved, and the charge's void once the credit failed."""
        found = await self._db.read_point(lambda conn: store.messages_of(conn, request.serial))
        charge, credit, void = (*(m for m in found if m["connection_id"] == self.connection_id), None, None, None)[:3]
        if charge is None or credit is None:
            return await self._reconciled(messages.charge_of(request), charge)
        if void is None:
            return await self._reconcile_credit(request, charge, credit)
        if void["state"] == State.ANSWERED:
            return self._credit_outcome(credit["state"], credit["response_code"])
        if void["state"] not in store.PENDING:
            return _timed_out()  # given up
        if now_ms() - void["sent_at_ms"] >= REPEATED_FOR_MS:
            return await self._abandon(request, void)
        voiding, original = self._void_of(request, charge)
        advice = self._message(voiding, original, void["stan"], void["id"], _at(void))
        answer = await self._exchanged(messages.repeat_of(self._dialect, advice))
        if answer is None:
            await self._moved(void["id"], State.UNANSWERED, repeated=1)
            return Outcome(Stage.UNKNOWN)
        await self._moved(void["id"], State.ANSWERED, response_code=answer.get("39"), repeated=1)
        return self._credit_outcome(credit["state"], credit["response_code"])

    async def _reconcile_credit(self, request: Transfer, charge: Record, credit: Record) -> Outcome:
        """A transfer whose credit was recorded and whose charge is not voided: the credit reversed while
        unanswered, and the charge voided once it is; approved, when the credit was."""
        undo = partial(self._voided, request, charge)
        if credit["state"] in store.PENDING:
            if now_ms() - credit["sent_at_ms"] >= REPEATED_FOR_MS:
                return await self._abandon(request, credit)
            return await self._reverse(messages.credit_of(request), credit, then=undo)
        if credit["state"] == State.ABANDONED:
            return _timed_out()
        if self._credit_outcome(credit["state"], credit["response_code"]).stage is Stage.APPROVED:
            return Outcome(
                Stage.APPROVED, approval_code=charge["approval_code"], processor_rrn=store.rrn_of(charge["id"])
            )
        return await undo(_End(credit["id"], State(credit["state"]), credit["response_code"]))

    def _void_of(self, request: Transfer, charge: Record) -> tuple[Reverse, SentOriginal]:
        """The void of the transfer's charge, as the charge was sent."""
        named = Original(
            request.serial, request.amount, None, store.rrn_of(charge["id"]), charge["stan"], _field7(_at(charge))
        )
        return messages.void_of(request, named), SentOriginal(charge["mti"], charge["processing_code"])

    def _credit_outcome(self, state: str, response_code: str | None) -> Outcome:
        """How a transfer's credit ended, as the transfer's outcome: as the host answered it, ``error`` 907
        when it could not be sent, otherwise (reversed) timed out."""
        if state == State.UNSENT:
            return _NOT_SIGNED_ON
        if state != State.ANSWERED or response_code is None:
            return _timed_out()
        found = iso.answer_of(self._dialect, {"39": response_code})
        return Outcome(found.stage, found.error_code, found.error_message)

    async def _repeat_advice(self, request: Request, sent: Record) -> Outcome:
        request, original = await self._with_original(request)
        advice = self._message(request, original, sent["stan"], sent["id"], _at(sent))
        answer = await self._exchanged(messages.repeat_of(self._dialect, advice))
        if answer is None:
            await self._moved(sent["id"], State.UNANSWERED, repeated=1)
            return Outcome(Stage.UNKNOWN)
        return self._answered(sent["id"], answer)

    async def _abandon(self, request: Request, sent: Record) -> Outcome:
        """Gives up ``sent``, whose reversal or repetition went unanswered for 24 hours: nothing more is sent,
        and the transaction ends as an unanswered one does. The acquirer may hold a transaction the gateway
        ended in error: operators see it in the message's state, the log and ``/metrics``, to settle with
        the acquirer."""
        await self._moved(sent["id"], State.ABANDONED)
        metrics.acquirer_abandoned(self.name, sent["mti"])
        log.warning(
            "acquirer: a message unanswered for 24 hours is given up",
            extra={
                "connection": self.name,
                "order": request.order_id,
                "mti": sent["mti"],
                "stan": sent["stan"],
                "rrn": sent["id"],  # field 37 less its zeros: a 12-digit run would be masked as a card number
                "repeats": sent["repeats"],
            },
        )
        return _timed_out()

    def _message(
        self, request: Request, original: SentOriginal | None, stan: str, message_id: int, at: datetime.datetime
    ) -> Fields:
        card = request.card if isinstance(request, Capture | Reverse | Refund) else None
        rrn = store.rrn_of(message_id)
        return messages.build(self._dialect, self._terminal, request, stan, rrn, at, original=original, card=card)

    async def _with_original(self, request: Request) -> tuple[Request, SentOriginal | None]:
        """A follow-up with its original as this acquirer knows it: the STAN, time and MTI it was sent with."""
        if not isinstance(request, Capture | Reverse | Refund):
            return request, None
        sent = await self._db.read_point(lambda conn: store.last_of(conn, request.original.serial))
        if sent is None or sent["mti"] is None:
            raise messages.Unsupported("the authorization was not sent over this link")
        known = dataclasses.replace(request.original, stan=sent["stan"], transmitted_at=_field7(_at(sent)))
        return dataclasses.replace(request, original=known), SentOriginal(sent["mti"], sent["processing_code"])

    async def _exchanged(self, fields: Fields) -> Fields | None:
        try:
            return await self._timed(fields)
        except NotSignedOn:
            return None

    async def _timed(self, fields: Fields) -> Fields | None:
        """The link's exchange, counted and timed for ``/metrics``."""
        started = time.perf_counter()
        answer = await self._link.exchange(fields)
        code = None if answer is None else answer.get("39", "")
        metrics.acquirer_message(self.name, fields["t"], code, time.perf_counter() - started)
        return answer

    def _answered(self, message_id: int, answer: Fields) -> Outcome:
        """The outcome ``answer`` gives, its message's record left to the transaction that records it."""
        code, approval_code, moment = answer.get("39"), answer.get("38"), now_ms()

        def record(conn: DbConnection) -> None:
            store.answered(conn, message_id, moment, response_code=code, approval_code=approval_code)
            crashpoints.reached(crashpoints.ACQUIRER_ANSWER_UNCOMMITTED)

        return self._as_answered({**answer, "37": answer.get("37", store.rrn_of(message_id))}, record)

    def _recorded_answer(self, message: Record) -> Outcome:
        """The outcome of ``message`` as its answer, recorded, gave it."""
        fields = {"39": message["response_code"] or "", "37": store.rrn_of(message["id"])}
        if message["approval_code"]:
            fields["38"] = message["approval_code"]
        return self._as_answered(fields)

    def _as_answered(
        self, answer: Mapping[str, str], unrecorded: Callable[[DbConnection], None] | None = None
    ) -> Outcome:
        found = iso.answer_of(self._dialect, answer)
        return Outcome(
            found.stage,
            found.error_code,
            found.error_message,
            approval_code=found.approval_code,
            processor_rrn=found.rrn,
            unrecorded=unrecorded,
        )

    async def _moved(
        self,
        message_id: int,
        state: State,
        *,
        response_code: str | None = None,
        approval_code: str | None = None,
        repeated: int = 0,
    ) -> None:
        moment, approval = now_ms(), approval_code
        await self._db.write(
            lambda conn: store.move(
                conn, message_id, state, moment, response_code=response_code, approval_code=approval, repeated=repeated
            )
        )


@dataclass(frozen=True, slots=True)
class _End:
    """How a message ended (its row's state, field 39 of its answer, repetitions sent), to be written with
    the message that follows from it."""

    message_id: int
    state: State
    code: str | None = None
    repeated: int = 0
    approval_code: str | None = None


_NOT_SIGNED_ON = Outcome(Stage.ERROR, ActionCode.ISSUER_INOPERATIVE, "No connection to the acquirer is signed on")


def _timed_out() -> Outcome:
    return Outcome(Stage.ERROR, ActionCode.ISSUER_TIMED_OUT, ActionCode.ISSUER_TIMED_OUT.message)


def _utc_now() -> datetime.datetime:
    return datetime.datetime.fromtimestamp(now_ms() / 1000, datetime.UTC)


def _field7(at: datetime.datetime) -> str:
    return at.strftime("%m%d%H%M%S")


def _ms(at: datetime.datetime) -> int:
    return int(at.timestamp() * 1000)


def _at(sent: Record) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(sent["sent_at_ms"] / 1000, datetime.UTC)
