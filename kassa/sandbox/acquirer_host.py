"""An acquirer host speaking the reference dialect of CONTRACT §15 over TCP (optionally TLS), deciding as the
sandbox does (§9): by the CVV2 of field 48 when there is one, else by the card number's last three digits,
and a card payment without a CVV2 whose amount ends in 116 minor units lacks the funds (``triggers.short_of_funds``).
The whole acquirer link runs against it without a bank (``kassa acquirer-sim``, and the tests).

Switches, given at construction and changed at run time by setting the attributes: ``late`` answers a card's
messages so many seconds late, ``silent`` never answers a card's messages, ``answer_echoes`` off leaves echoes
unanswered, ``drop_after`` closes a connection when its N-th message arrives (unanswered), ``answer_with``
answers every authorization with that field 39 whatever the card (a host that is failing, for cascading), and
``drop_connections()`` closes every connection now. A trigger of ``217`` leaves only the authorization
unanswered (its reversal is answered): that is how ``unknown`` arises over ISO 8583.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from collections import deque
from collections.abc import Iterable, Mapping
from types import TracebackType

from kassa.processors.iso8583 import dialect, framing
from kassa.processors.iso8583.dialect import Fields, Kind, MessageError, Original
from kassa.sandbox.triggers import Trigger, short_of_funds, trigger_of

log = logging.getLogger("kassa.sandbox.acquirer_host")

_APPROVED = "00"
_DO_NOT_HONOUR = "05"
_INVALID_TRANSACTION = "12"
_ORIGINAL_NOT_FOUND = "25"
_FORMAT_ERROR = "30"
_PAYMENT = "000000"  # field 3 of a card payment (sale, preauth, rebill): its amount may lack the funds

# Field 39 for the triggers the host answers otherwise than with its default (approved without a CVV2,
# do not honour with one); None leaves the authorization unanswered. A 3-D Secure trigger approves: the
# authorization comes only after the authentication allowed it.
_ANSWERS: dict[Trigger, str | None] = {
    Trigger.APPROVE: _APPROVED,
    Trigger.APPROVE_FOUR_DIGITS: _APPROVED,
    Trigger.APPROVE_WITHOUT_3DS: _APPROVED,
    Trigger.CHALLENGE: _APPROVED,
    Trigger.CHALLENGE_1: _APPROVED,
    Trigger.METHOD_FRICTIONLESS: _APPROVED,
    Trigger.METHOD_CHALLENGE: _APPROVED,
    Trigger.ATTEMPTED: _APPROVED,
    Trigger.REJECTED: _APPROVED,
    Trigger.UNKNOWN: None,
    Trigger.ACQUIRER_ERROR: "96",
    Trigger.EXPIRED_CARD: "54",
    Trigger.INSUFFICIENT_FUNDS: "51",
    Trigger.NOT_PERMITTED: "57",
    Trigger.STOLEN_CARD: "43",
}
# What an answer repeats of its request; never the card.
_ECHOED = ("3", "4", "7", "11", "32", "37", "41", "42", "49", "70")


class AcquirerHost:
    def __init__(
        self,
        *,
        late: Mapping[str, float] | None = None,
        silent: Iterable[str] = (),
        answer_echoes: bool = True,
        drop_after: int | None = None,
        answer_with: str | None = None,
        tls: ssl.SSLContext | None = None,
        keep: int = 100_000,
    ) -> None:
        self.dialect = dialect.load("reference")
        self.late = dict(late or {})
        self.silent = set(silent)
        self.answer_echoes = answer_echoes
        self.drop_after = drop_after
        self.answer_with = answer_with
        # The messages received, decoded and so in clear: in memory only, for tests to inspect.
        self.received: deque[Fields] = deque(maxlen=keep)
        self.answered: deque[Fields] = deque(maxlen=keep)  # the answers that went out, for tests to compare
        self._tls = tls
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._authorizations = self._mtis(Kind.SALE, Kind.PREAUTH, Kind.VERIFICATION, Kind.REFUND, Kind.CREDIT)
        self._advices = self._mtis(Kind.CAPTURE)
        self._reversals = self._mtis(Kind.VOID, Kind.REVERSAL)
        self._network = self.dialect.messages[Kind.ECHO].mti
        self._network_codes = {
            self.dialect.messages[kind].network_code for kind in (Kind.SIGN_ON, Kind.SIGN_OFF, Kind.ECHO)
        }
        self._echo = self.dialect.messages[Kind.ECHO].network_code

    def _mtis(self, *kinds: Kind) -> set[str]:
        """The MTIs of messages of ``kinds``, their repetitions included."""
        messages = [self.dialect.messages[kind] for kind in kinds]
        return {message.mti for message in messages} | {message.repeat for message in messages if message.repeat}

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listens on ``host``:``port`` (0: any free port) and returns the port."""
        self._server = await asyncio.start_server(self._serve, host, port, ssl=self._tls)
        return self.port

    @property
    def port(self) -> int:
        assert self._server is not None, "the host is not started"
        found: int = self._server.sockets[0].getsockname()[1]
        return found

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        self.drop_connections()
        await self._server.wait_closed()
        self._server = None

    async def __aenter__(self) -> AcquirerHost:
        """Started on 127.0.0.1, any free port, unless started already."""
        if self._server is None:
            await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    def drop_connections(self) -> None:
        """Closes every connection at once, as a host that went away would: nothing in flight is answered."""
        for writer in list(self._writers):
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        answering: set[asyncio.Task[None]] = set()
        count = 0
        try:
            while (data := await framing.read_message(reader)) is not None:
                count += 1
                fields = self._received(data)
                if self.drop_after is not None and count >= self.drop_after:
                    break
                if fields is not None:  # each answered on its own: a late one holds no other back
                    task = asyncio.create_task(self._answer(fields, writer))
                    answering.add(task)
                    task.add_done_callback(answering.discard)
        except (framing.FramingError, OSError) as problem:  # OSError: resets, TLS errors
            log.warning("acquirer host: connection ended: %s", problem)
        finally:
            for task in answering:
                task.cancel()
            self._writers.discard(writer)
            writer.transport.abort()

    def _received(self, data: bytes) -> Fields | None:
        try:
            fields = dialect.decode(self.dialect, data)
        except MessageError as problem:
            log.warning("acquirer host: an undecodable message: %s", problem)
            return None
        self.received.append(fields)
        log.debug("acquirer host: received", extra={"fields": dialect.masked(self.dialect, fields)})
        return fields

    async def _answer(self, fields: Fields, writer: asyncio.StreamWriter) -> None:
        answer = self._decide(fields)
        card = fields.get("2")
        if answer is None or card in self.silent:
            return
        if delay := self.late.get(card or "", 0):
            await asyncio.sleep(delay)
        try:
            await framing.write_message(writer, dialect.encode(self.dialect, answer))
            self.answered.append(answer)
        except ConnectionError:
            log.info("acquirer host: the connection closed before an answer went out")

    def _decide(self, fields: Fields) -> Fields | None:
        """The answer to a message, or None for none."""
        mti = fields["t"]
        if mti == self._network:
            code = fields.get("70")
            if code == self._echo and not self.answer_echoes:
                return None
            return _answer(fields, _APPROVED if code in self._network_codes else _INVALID_TRANSACTION)
        if mti in self._authorizations:
            code = self._authorization(fields)
            return None if code is None else _answer(fields, code, approved=code == _APPROVED)
        if mti in self._advices:
            return _answer(fields, _APPROVED)
        if mti in self._reversals:
            return _answer(fields, self._reversal(fields))
        log.warning("acquirer host: no answer to a message of MTI %s", mti)
        return None

    def _authorization(self, fields: Fields) -> str | None:
        if self.answer_with is not None:
            return self.answer_with
        try:
            items = dialect.parse_tlv(self.dialect, fields.get(self.dialect.additional.field, ""))
        except MessageError:
            return _FORMAT_ERROR
        cvv = items.get(self.dialect.tag("cvv2"))
        trigger = trigger_of(cvv or fields.get("2", "")[-3:])
        unlisted = _DO_NOT_HONOUR if cvv else _APPROVED  # not in the table: declined with a CVV2, approved without
        code = unlisted if trigger is None else _ANSWERS.get(trigger, unlisted)
        amount = fields.get("4", "")
        if (
            code == _APPROVED
            and fields.get("3") == _PAYMENT
            and amount.isdigit()
            and short_of_funds(int(amount), bool(cvv))
        ):
            return _ANSWERS[Trigger.INSUFFICIENT_FUNDS]
        return code

    def _reversal(self, fields: Fields) -> str:
        try:
            original = dialect.parse_original_data(fields.get("90", ""))
        except MessageError:
            return _FORMAT_ERROR
        seen = any(_names(message, original) for message in self.received if message["t"] != self._network)
        return _APPROVED if seen else _ORIGINAL_NOT_FOUND


def _names(message: Fields, original: Original) -> bool:
    try:
        return Original.of(message) == original
    except KeyError:  # without a STAN or transmission time: no message names it
        return False


def _answer(request: Fields, code: str, approved: bool = False) -> Fields:
    answer = {"t": dialect.answer_mti(request["t"]), "39": code}
    answer.update({field: request[field] for field in _ECHOED if field in request})
    if approved:
        answer["38"] = f"{random.randrange(1_000_000):06d}"
    return answer
