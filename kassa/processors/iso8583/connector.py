"""A connector to an acquirer's host over ISO 8583 (CONTRACT §15): the ``Processor`` of one connection.

Each financial message is recorded before it goes out (``storage.acquirer_messages``), its id the RRN. An
answer gives the outcome by field 39 (the dialect's table). A request left unanswered after the response
timeout is ``unknown``: the connector reverses it at once (0400), and the engine's reconciliation asks
again every ``KASSA_RECONCILE_DELAY_SECONDS`` (60 s, as §15 says), which repeats the reversal (0401) until
the host answers it; then the transaction ends ``error`` 911. Advices (a capture 0220, a void or cancel
0400) are repeated the same way until answered, and are final once answered. Neither is repeated past 24
hours from the message's first sending: it is then given up (``abandoned``, logged and counted for
operators) and the transaction ends ``error`` 911 as an unanswered one does. A message the process may
have sent before it died (recorded, never answered) counts as unanswered: it is reversed, or repeated,
never sent again as new. While no socket is signed on nothing is sent: ``error`` 907 at once.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
from collections.abc import Iterator

from kassa import metrics
from kassa.clock import now_ms
from kassa.domain.action_codes import ActionCode
from kassa.domain.lifecycle import Stage
from kassa.processors.interface import Capture, Outcome, Refund, Request, Reverse
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

    async def process(self, request: Request) -> Outcome:
        last = await self._db.read_point(lambda conn: store.last_of(conn, request.serial))
        if last is not None and last["state"] in store.PENDING:  # sent before a restart, or being reversed
            return await self.reconcile(request)
        return await self.send(request)

    async def reconcile(self, request: Request) -> Outcome:
        last = await self._db.read_point(lambda conn: store.last_of(conn, request.serial))
        if last is None or last["state"] == State.UNSENT:
            return Outcome(Stage.UNKNOWN)  # nothing reached the host: a new try is the job's to make
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
        stan, at = await self._stans.next(), _utc_now()
        try:
            request, original = await self._with_original(request)
            unnumbered = self._message(request, original, stan, 0, at)  # its RRN is the id of the row it makes
        except messages.Unsupported as unsendable:  # a payout to a bank account, say: nothing is sent
            return Outcome(Stage.ERROR, ActionCode.ISSUER_INOPERATIVE, f"Not sent to this acquirer: {unsendable}")
        mti, code, serial = unnumbered["t"], unnumbered["3"], request.serial
        message_id = await self._db.write(
            lambda conn: store.sent(conn, serial, self.connection_id, mti, code, stan, _ms(at))
        )
        fields = {**unnumbered, "37": store.rrn_of(message_id)}
        try:
            answer = await self._timed(fields)
        except NotSignedOn:
            await self._moved(message_id, State.UNSENT)
            return Outcome(Stage.ERROR, ActionCode.ISSUER_INOPERATIVE, "No connection to the acquirer is signed on")
        if answer is None:
            await self._moved(message_id, State.UNANSWERED)
            if isinstance(request, _ADVICES):
                return Outcome(Stage.UNKNOWN)
            unanswered = {"id": message_id, "stan": stan, "sent_at_ms": _ms(at), "repeats": 0}
            return await self._reverse(request, unanswered)
        return await self._answered(message_id, answer)

    async def _reverse(self, request: Request, sent: Record) -> Outcome:
        """Sends the reversal of the unanswered message ``sent`` (0400, then 0401); ``error`` 911 once the
        host answers it, ``unknown`` until then."""
        request, original = await self._with_original(request)
        first = self._message(request, original, sent["stan"], sent["id"], _at(sent))
        reversal = messages.reversal_of(self._dialect, first, await self._stans.next(), _utc_now(), sent["repeats"] > 0)
        answer = await self._exchanged(reversal)
        if answer is None:
            await self._moved(sent["id"], State.UNANSWERED, repeated=1)
            return Outcome(Stage.UNKNOWN)
        await self._moved(sent["id"], State.REVERSED, response_code=answer.get("39"), repeated=1)
        return _timed_out()

    async def _repeat_advice(self, request: Request, sent: Record) -> Outcome:
        request, original = await self._with_original(request)
        advice = self._message(request, original, sent["stan"], sent["id"], _at(sent))
        answer = await self._exchanged(messages.repeat_of(self._dialect, advice))
        if answer is None:
            await self._moved(sent["id"], State.UNANSWERED, repeated=1)
            return Outcome(Stage.UNKNOWN)
        return await self._answered(sent["id"], answer)

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

    async def _answered(self, message_id: int, answer: Fields) -> Outcome:
        await self._moved(message_id, State.ANSWERED, response_code=answer.get("39"))
        found = iso.answer_of(self._dialect, answer)
        return Outcome(
            found.stage,
            found.error_code,
            found.error_message,
            approval_code=found.approval_code,
            processor_rrn=found.rrn,
        )

    async def _moved(
        self, message_id: int, state: State, *, response_code: str | None = None, repeated: int = 0
    ) -> None:
        moment = now_ms()
        await self._db.write(
            lambda conn: store.move(conn, message_id, state, moment, response_code=response_code, repeated=repeated)
        )


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
