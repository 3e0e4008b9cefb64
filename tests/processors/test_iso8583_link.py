"""The link to an acquirer host, against the real simulator over TCP (and TLS) on 127.0.0.1: it signs on
before any financial message, matches answers to their callers by STAN on any socket, gives up on a request
after the response timeout and ignores its late answer, echoes an idle socket and reopens a socket whose echo
goes unanswered or that the host closes, and refuses at once while nothing is signed on. Timeouts, echo
intervals and backoff are short here: they are what is tested."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from kassa.processors.interface import Authorize, Capture, Card, Initiator, Original
from kassa.processors.iso8583 import dialect
from kassa.processors.iso8583.link import CountingStans, Link, LinkState, NotSignedOn
from kassa.processors.iso8583.messages import SentOriginal, Terminal, build, repeat_of, reversal_of
from kassa.sandbox.acquirer_host import AcquirerHost
from tests.support.proxy import _self_signed

REFERENCE = dialect.load("reference")
TERMINAL = Terminal(acquirer="12345", terminal_id="TERM01", acceptor_id="SHOP1", mcc="5999")
APPROVED_CARD = "4000000000000999"  # last digits in no trigger: approved
DECLINED_CARD = "4000000000000116"  # insufficient funds
SILENT_CARD = "4000000000000997"
LATE_CARD = "4000000000000998"
TIMEOUT = 0.3
QUICK = {"response_timeout": TIMEOUT, "echo_interval": 60.0, "backoff": (0.05, 0.2)}


class Caller:
    """The gateway's side: builds sales with STANs of the link's own source and exchanges them."""

    def __init__(self, link: Link, stans: CountingStans) -> None:
        self.link, self.stans = link, stans

    async def sale(self, pan: str, cvv: str | None = None) -> tuple[dict[str, str], dict[str, str] | None]:
        card = Card(pan, 12, 2030, "Ann Smith", cvv=cvv)
        request = Authorize(1, "s-1", 1042, "EUR", "Kassa test shop", card, True, Initiator.CARDHOLDER)
        stan = await self.stans.next()
        fields = build(REFERENCE, TERMINAL, request, stan, stan, datetime.now(UTC))
        return fields, await self.link.exchange(fields)


def run(
    scenario: Callable[[AcquirerHost, Caller], Awaitable[None]],
    tls: tuple[ssl.SSLContext, ssl.SSLContext] | None = None,
    link: dict[str, Any] | None = None,
    **switches: Any,
) -> None:
    async def main() -> None:
        async with AcquirerHost(tls=tls and tls[0], **switches) as host:
            stans = CountingStans()
            settings = {**QUICK, **(link or {})}
            async with Link(REFERENCE, "127.0.0.1", host.port, tls and tls[1], TERMINAL, stans=stans, **settings) as to:
                await asyncio.wait_for(scenario(host, Caller(to, stans)), 10)

    asyncio.run(main())


async def signed_on(link: Link, sockets: int = 1, sign_ons: int = 0) -> LinkState:
    condition: Callable[[LinkState], bool] = lambda s: s.signed_on >= sockets and s.sign_ons >= sign_ons  # noqa: E731
    return await asyncio.wait_for(link.until(condition), 5)


def network_codes(host: AcquirerHost) -> list[str]:
    return [message["70"] for message in host.received if message["t"] == "0800"]


def test_the_link_signs_on_before_its_first_financial_message() -> None:
    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        await signed_on(caller.link)
        _, answer = await caller.sale(APPROVED_CARD)
        assert answer is not None
        assert [(message["t"], message.get("70")) for message in host.received] == [("0800", "001"), ("0200", None)]
        assert host.received[0]["41"] == "TERM01  "
        state = caller.link.state()
        assert (state.sockets, state.open, state.signed_on, state.in_flight, state.sign_ons) == (1, 1, 1, 0, 1)
        assert state.last_error is None and state.last_sign_on is not None

    run(scenario)


def test_an_approved_and_a_declined_sale_are_each_answered_by_stan() -> None:
    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        await signed_on(caller.link)
        approved, declined = await caller.sale(APPROVED_CARD), await caller.sale(DECLINED_CARD)
        for (fields, answer), code in ((approved, "00"), (declined, "51")):
            assert answer is not None
            assert (answer["t"], answer["11"], answer["41"], answer["39"]) == ("0210", fields["11"], "TERM01  ", code)
        assert dialect.answer_of(REFERENCE, approved[1] or {}).approval_code is not None

    run(scenario)


def test_several_requests_in_flight_on_two_sockets_are_each_answered_to_their_own_caller() -> None:
    slow, slower = "4000000000000996", "4000000000000995"
    cvvs = {"123": "00", "116": "51", "101": "54", "119": "57", "209": "43", "500": "96", "555": "05"}
    cards = [APPROVED_CARD, slow, slower]

    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        await signed_on(caller.link, sockets=2)
        wanted = [(cards[n % 3], cvv) for n, cvv in enumerate(list(cvvs) * 3)]
        results = await asyncio.gather(*(caller.sale(pan, cvv) for pan, cvv in wanted))
        for (_, cvv), (fields, answer) in zip(wanted, results, strict=True):
            assert answer is not None
            assert (answer["11"], answer["39"]) == (fields["11"], cvvs[cvv])
        assert caller.link.state().in_flight == 0
        assert network_codes(host) == ["001", "001"]

    # Every request is answered: a response timeout well above the late answers' delays, so that a busy
    # machine cannot turn a late answer into none.
    run(scenario, late={slow: 0.05, slower: 0.1}, link={"sockets": 2, "response_timeout": 3.0})


def test_follow_ups_built_from_what_was_sent_find_their_original_at_the_host() -> None:
    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        await signed_on(caller.link)
        sale, answer = await caller.sale(APPROVED_CARD)
        assert answer is not None
        reversal = reversal_of(REFERENCE, sale, await caller.stans.next(), datetime.now(UTC))
        assert ((await caller.link.exchange(reversal)) or {}).get("39") == "00"  # 25 if 90 named no message seen
        assert ((await caller.link.exchange(repeat_of(REFERENCE, reversal))) or {}).get("39") == "00"
        original = Original("s-1", 1042, answer["38"], answer["37"], stan=sale["11"], transmitted_at=sale["7"])
        capture = Capture(1, "s-2", 1042, "EUR", "Kassa test shop", original)
        stan = await caller.stans.next()
        advice = build(REFERENCE, TERMINAL, capture, stan, stan, datetime.now(UTC), original=SentOriginal.of(sale))
        answered = await caller.link.exchange(advice)
        assert answered is not None and (answered["t"], answered["39"]) == ("0230", "00")

    run(scenario)


def test_a_silent_card_gets_no_answer_after_the_response_timeout_and_nothing_is_left_in_flight() -> None:
    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        await signed_on(caller.link)
        loop = asyncio.get_running_loop()
        started = loop.time()
        _, answer = await caller.sale(SILENT_CARD)
        assert answer is None
        assert TIMEOUT <= loop.time() - started < TIMEOUT + 1
        assert caller.link.state().in_flight == 0
        assert (await caller.sale(APPROVED_CARD))[1] is not None

    run(scenario, silent={SILENT_CARD})


def test_a_late_answer_is_logged_masked_and_ignored_without_disturbing_the_next_exchange(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="kassa.processors.iso8583.link")
    slightly_late = "4000000000000994"

    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        await signed_on(caller.link)
        timed_out, answer = await caller.sale(LATE_CARD, cvv="4321")
        assert answer is None
        # Answered at 0.3 + 0.2 s, after the late answer (at 0.45 s) came and went.
        fields, answer = await caller.sale(slightly_late)
        assert answer is not None and answer["11"] == fields["11"]
        late = [record for record in caplog.records if "late answer" in record.getMessage()]
        assert [vars(record)["fields"]["11"] for record in late] == [timed_out["11"]]
        assert caller.link.state().signed_on == 1

    run(scenario, late={LATE_CARD: 0.45, slightly_late: 0.2})
    logged = " ".join(
        f"{record.getMessage()} {orjson.dumps(_said(record), default=str)!r}" for record in caplog.records
    )
    assert "sent" in logged and "received" in logged
    assert LATE_CARD not in logged
    # The CVV2's digits may also make part of an approval code or a time: its item and field 48 are looked at.
    assert dialect.build_tlv(REFERENCE, {REFERENCE.tag("cvv2"): "4321"}) not in logged
    assert not [fields for fields in _fields_logged(caplog) if "4321" in fields.get(REFERENCE.additional.field, "")]


# When and where a record was made: numbers that may hold any digits ("created": 344321.12), not what was said.
_WHEN_AND_WHERE = frozenset(("created", "msecs", "relativeCreated", "thread", "process", "lineno"))


def _fields_logged(caplog: pytest.LogCaptureFixture) -> list[dict[str, str]]:
    return [vars(record)["fields"] for record in caplog.records if "fields" in vars(record)]


def _said(record: logging.LogRecord) -> dict[str, object]:
    return {name: value for name, value in vars(record).items() if name not in _WHEN_AND_WHERE}


def test_a_socket_whose_sign_on_fails_carries_nothing_and_is_reopened_with_doubling_backoff() -> None:
    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        state = await asyncio.wait_for(caller.link.until(lambda s: s.last_error is not None), 5)
        assert state.sign_ons == 0 and "closed" in (state.last_error or "")
        with pytest.raises(NotSignedOn):
            await caller.sale(APPROVED_CARD)
        while len(host.received) < 4:
            await asyncio.sleep(0.01)
        assert loop.time() - started >= 0.05 + 0.1 + 0.2  # three waits between four tries, each twice the last
        assert network_codes(host) == ["001"] * len(host.received)

    run(scenario, drop_after=1)


def test_dropped_connections_are_opened_again_and_signed_on_before_carrying_sales() -> None:
    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        await signed_on(caller.link, sockets=2)
        host.drop_connections()
        state = await signed_on(caller.link, sockets=2, sign_ons=4)
        assert state.last_error is not None
        assert network_codes(host) == ["001"] * 4
        assert (await caller.sale(APPROVED_CARD))[1] is not None

    run(scenario, link={"sockets": 2})


def test_an_idle_socket_is_echoed_and_stays_signed_on_while_echoes_are_answered() -> None:
    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        await signed_on(caller.link)
        while network_codes(host).count("301") < 2:
            await asyncio.sleep(0.02)
        assert caller.link.state().sign_ons == 1

    run(scenario, link={"echo_interval": 0.1})


def test_an_unanswered_echo_closes_the_socket_and_it_is_opened_and_signed_on_again() -> None:
    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        state = await signed_on(caller.link, sign_ons=2)
        assert state.last_error is not None and "echo unanswered" in state.last_error
        assert network_codes(host)[:3] == ["001", "301", "001"]

    run(scenario, answer_echoes=False, link={"echo_interval": 0.2})


def test_with_no_socket_signed_on_an_exchange_is_refused_at_once_and_the_link_keeps_trying() -> None:
    async def main() -> None:
        with socket.socket() as taken:  # a port nobody listens on
            taken.bind(("127.0.0.1", 0))
            port = taken.getsockname()[1]
        link = Link(REFERENCE, "127.0.0.1", port, None, TERMINAL, stans=CountingStans(), **QUICK)
        async with link:
            state = await asyncio.wait_for(link.until(lambda s: s.last_error is not None), 5)
            assert (state.open, state.signed_on) == (0, 0)
            request = {"t": "0800", "11": "7", "41": "TERM01", "70": "301"}  # matched as padded on the wire
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(NotSignedOn):
                await link.exchange(request)
            assert loop.time() - started < 0.05
            host = AcquirerHost()
            await host.start(port=port)  # the host comes up on that port: the link signs on
            try:
                await signed_on(link)
                assert (await link.exchange(request)) is not None
            finally:
                await host.close()

    asyncio.run(main())


def test_a_tls_link_signs_on_and_carries_sales(tmp_path: Path) -> None:
    certificate, key = _self_signed(tmp_path)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(certificate, key)
    client = ssl.create_default_context(cafile=str(certificate))

    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        await signed_on(caller.link)
        _, answer = await caller.sale(APPROVED_CARD)
        assert answer is not None and answer["39"] == "00"

    run(scenario, tls=(server, client))


def test_a_tls_link_to_a_host_with_an_untrusted_certificate_never_signs_on(tmp_path: Path) -> None:
    certificate, key = _self_signed(tmp_path)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(certificate, key)

    async def scenario(host: AcquirerHost, caller: Caller) -> None:
        state = await asyncio.wait_for(caller.link.until(lambda s: s.last_error is not None), 5)
        assert "CERTIFICATE_VERIFY_FAILED" in (state.last_error or "")
        assert state.sign_ons == 0 and not host.received

    run(scenario, tls=(server, ssl.create_default_context()))


def test_closing_the_link_signs_off_and_answers_none_to_requests_still_waiting() -> None:
    async def main() -> None:
        async with AcquirerHost(silent={SILENT_CARD}) as host:
            stans = CountingStans()
            link = Link(REFERENCE, "127.0.0.1", host.port, None, TERMINAL, stans=stans, response_timeout=5.0)
            await link.start()
            await signed_on(link)
            waiting = asyncio.create_task(Caller(link, stans).sale(SILENT_CARD))
            await asyncio.wait_for(link.until(lambda s: s.in_flight == 1), 5)
            await link.close()
            assert (await waiting)[1] is None
            assert network_codes(host) == ["001", "002"]
            with pytest.raises(NotSignedOn):
                await Caller(link, stans).sale(APPROVED_CARD)

    asyncio.run(main())


def test_stans_count_from_000001_to_999999_and_round_again() -> None:
    async def main() -> list[str]:
        stans = CountingStans(999_998)
        return [await stans.next() for _ in range(3)]

    assert asyncio.run(main()) == ["999998", "999999", "000001"]
