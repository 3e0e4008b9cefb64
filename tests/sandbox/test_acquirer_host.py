"""The acquirer host speaks the reference dialect over real TCP and decides as CONTRACT §9 and §15 say; its
switches (late, silent, no echoes, dropped connections) make the link's failures on demand. Requests are
encoded with the dialect; answers are read with pyiso8583's ``default_ascii`` alone."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import iso8583
import pytest
from iso8583.specs import default_ascii

from kassa.processors.iso8583 import dialect, framing
from kassa.processors.iso8583.dialect import Original
from kassa.sandbox.acquirer_host import AcquirerHost
from tests.support.proxy import SERVER_NAME, _self_signed

REFERENCE = dialect.load("reference")
CARD = "4000000000000999"  # last digits in no trigger: approved without a CVV2
TERMINAL = "TERM0001"


def _financial(mti: str, stan: int, card: str, processing_code: str = "000000", **fields: str) -> dict[str, str]:
    return {
        "t": mti,
        "2": card,
        "3": processing_code,
        "4": "000000001042",
        "7": "1126093015",
        "11": f"{stan:06d}",
        "12": "093015",
        "13": "1126",
        "14": "2812",
        "18": "5999",
        "22": "810",
        "25": "59",
        "32": "12345",
        "37": f"{stan:012d}",
        "41": TERMINAL,
        "42": "SHOP00000000001",
        "43": "Kassa test shop".ljust(40),
        "49": "978",
        **fields,
    }


def sale(stan: int, card: str = CARD, cvv: str | None = None) -> dict[str, str]:
    extra = {"48": dialect.build_tlv(REFERENCE, {"CV": cvv, "MI": "C"})} if cvv else {}
    return _financial("0200", stan, card, **extra)


def network(stan: int, code: str) -> dict[str, str]:
    return {"t": "0800", "7": "1126093015", "11": f"{stan:06d}", "70": code}


def reversal(stan: int, original: dict[str, str], mti: str = "0400") -> dict[str, str]:
    return _financial(mti, stan, original["2"], original["3"], **{"90": dialect.original_data(Original.of(original))})


class Link:
    """One socket to the host, as the gateway's end of it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def to(cls, host: AcquirerHost, tls: ssl.SSLContext | None = None) -> Link:
        return cls(*await asyncio.open_connection("127.0.0.1", host.port, ssl=tls, server_hostname=tls and SERVER_NAME))

    async def send(self, *messages: dict[str, str]) -> None:
        for message in messages:
            await framing.write_message(self.writer, dialect.encode(REFERENCE, message))

    async def answer(self, timeout: float = 2) -> dict[str, str]:
        data = await asyncio.wait_for(framing.read_message(self.reader), timeout)
        assert data is not None, "the host closed the connection"
        fields, _ = iso8583.decode(data, default_ascii)
        return fields

    async def closed(self) -> bool:
        """Whether the host closed the connection (nothing more arrives)."""
        try:
            return await asyncio.wait_for(framing.read_message(self.reader), 2) is None
        except (ConnectionError, framing.FramingError):
            return True

    async def ask(self, message: dict[str, str]) -> dict[str, str]:
        await self.send(message)
        return await self.answer()


def run(scenario: Callable[[AcquirerHost], Awaitable[None]], **switches: Any) -> None:
    async def main() -> None:
        async with AcquirerHost(**switches) as host:
            await scenario(host)

    asyncio.run(main())


def test_sign_on_sign_off_and_echo_are_answered_00_with_their_stan_and_code() -> None:
    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        for stan, code in ((1, "001"), (2, "301"), (3, "002")):
            answer = await link.ask(network(stan, code))
            assert (answer["t"], answer["39"], answer["11"], answer["70"]) == ("0810", "00", f"{stan:06d}", code)

    run(scenario)


def test_an_echo_goes_unanswered_when_echoes_are_switched_off_and_is_answered_again_when_on() -> None:
    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        await link.send(network(1, "301"), network(2, "001"))
        assert (await link.answer())["11"] == "000002"  # the echo before it had no answer
        host.answer_echoes = True
        assert (await link.ask(network(3, "301")))["39"] == "00"

    run(scenario, answer_echoes=False)


@pytest.mark.parametrize(
    ("cvv", "code"),
    [("123", "00"), ("1234", "00"), ("111", "00"), ("321", "00"), ("101", "54"), ("116", "51"), ("119", "57"),
     ("209", "43"), ("500", "96"), ("555", "05"), ("999", "05")],
)  # fmt: skip
def test_a_sale_with_a_cvv2_is_decided_by_it_whatever_the_cards_last_digits(cvv: str, code: str) -> None:
    async def scenario(host: AcquirerHost) -> None:
        answer = await (await Link.to(host)).ask(sale(7, "4000000000000116", cvv))
        assert (answer["t"], answer["39"]) == ("0210", code)
        assert (answer["11"], answer["41"], answer["37"]) == ("000007", TERMINAL, "000000000007")
        assert "2" not in answer
        assert ("38" in answer) == (code == "00")
        if code == "00":
            assert len(answer["38"]) == 6

    run(scenario)


@pytest.mark.parametrize(
    ("mti", "processing_code", "last_digits", "code"),
    [
        ("0200", "000000", "116", "51"),
        ("0100", "000000", "101", "54"),
        ("0200", "000000", "999", "00"),
        ("0200", "200000", "119", "57"),  # a refund
        ("0200", "200000", "123", "00"),
        ("0200", "260000", "209", "43"),  # an original credit (payout)
        ("0200", "260000", "555", "00"),  # filtered is the gateway's own decision: the host approves
    ],
)
def test_without_a_cvv2_the_cards_last_three_digits_decide(
    mti: str, processing_code: str, last_digits: str, code: str
) -> None:
    async def scenario(host: AcquirerHost) -> None:
        request = _financial(mti, 8, f"4000000000000{last_digits}", processing_code)
        answer = await (await Link.to(host)).ask(request)
        assert (answer["t"], answer["39"], answer["3"], answer["11"]) == (
            dialect.answer_mti(mti),
            code,
            processing_code,
            "000008",
        )

    run(scenario)


@pytest.mark.parametrize(
    ("processing_code", "amount", "code"),
    [("000000", "000000001116", "51"), ("000000", "000000001115", "00"), ("260000", "000000001116", "00")],
)
def test_a_card_payment_without_a_cvv2_whose_amount_ends_in_116_lacks_the_funds(
    processing_code: str, amount: str, code: str
) -> None:
    async def scenario(host: AcquirerHost) -> None:
        answer = await (await Link.to(host)).ask(_financial("0100", 9, CARD, processing_code, **{"4": amount}))
        assert (answer["39"], answer["4"]) == (code, amount)

    run(scenario)


def test_a_217_authorization_is_never_answered_and_its_reversal_is() -> None:
    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        unknown = sale(1, cvv="217")
        await link.send(unknown, network(2, "301"))
        assert (await link.answer())["11"] == "000002"
        answer = await link.ask(reversal(3, unknown))
        assert (answer["t"], answer["39"], answer["11"]) == ("0410", "00", "000003")

    run(scenario)


def test_a_reversal_or_repeated_reversal_of_an_original_never_seen_is_answered_25() -> None:
    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        unseen = sale(40)
        for mti in ("0400", "0401"):
            answer = await link.ask(reversal(41, unseen, mti))
            assert (answer["t"], answer["39"]) == ("0410", "25")
        seen = sale(42)
        assert (await link.ask(seen))["39"] == "00"
        assert (await link.ask(reversal(43, seen, "0401")))["39"] == "00"

    run(scenario)


def test_a_reversal_on_another_socket_finds_its_original() -> None:
    async def scenario(host: AcquirerHost) -> None:
        first, second = await Link.to(host), await Link.to(host)
        original = sale(50, cvv="123")
        await first.ask(original)
        assert (await second.ask(reversal(51, original)))["39"] == "00"

    run(scenario)


def test_advices_and_their_repetitions_are_answered_0230_00() -> None:
    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        authorization = _financial("0100", 60, CARD)
        await link.ask(authorization)
        for stan, mti in ((61, "0220"), (62, "0221")):
            advice = _financial(mti, stan, CARD, **{"90": dialect.original_data(Original.of(authorization))})
            answer = await link.ask(advice)
            assert (answer["t"], answer["39"], answer["11"]) == ("0230", "00", f"{stan:06d}")

    run(scenario)


def test_a_late_card_is_answered_after_its_delay_and_other_requests_meanwhile() -> None:
    late = "4000000000000998"

    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        loop = asyncio.get_running_loop()
        sent = loop.time()
        await link.send(sale(1, late), sale(2))
        assert (await link.answer())["11"] == "000002"
        assert (await link.answer())["11"] == "000001"
        assert loop.time() - sent >= 0.15

    run(scenario, late={late: 0.15})


def test_a_silent_card_is_never_answered_until_the_switch_is_changed_at_run_time() -> None:
    silent = "4000000000000997"

    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        await link.send(sale(1, silent, "123"), network(2, "301"))
        assert (await link.answer())["11"] == "000002"
        host.silent.clear()
        assert (await link.ask(sale(3, silent, "123")))["11"] == "000003"

    run(scenario, silent={silent})


def test_dropping_every_connection_closes_each_with_nothing_in_flight_answered_and_new_ones_are_served() -> None:
    late = "4000000000000998"

    async def scenario(host: AcquirerHost) -> None:
        links = [await Link.to(host), await Link.to(host)]
        await links[0].ask(network(1, "001"))
        await links[1].ask(network(2, "001"))
        await links[0].send(sale(3, late))
        host.drop_connections()
        assert [await link.closed() for link in links] == [True, True]
        assert (await (await Link.to(host)).ask(sale(4)))["39"] == "00"

    run(scenario, late={late: 0.1})


def test_a_connection_is_dropped_when_its_nth_message_arrives_unanswered() -> None:
    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        assert (await link.ask(network(1, "001")))["39"] == "00"
        await link.send(sale(2))
        assert await link.closed()
        assert [message["11"] for message in host.received] == ["000001", "000002"]

    run(scenario, drop_after=2)


def test_several_requests_in_flight_on_one_socket_are_each_answered_and_matched_by_stan() -> None:
    slow, slower = "4000000000000996", "4000000000000995"
    cards = {1: (slower, "123", "00"), 2: (slow, "116", "51"), 3: (CARD, "101", "54"), 4: (slow, "123", "00"),
             5: (CARD, "999", "05"), 6: (slower, "209", "43")}  # fmt: skip

    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        await link.send(*(sale(stan, card, cvv) for stan, (card, cvv, _) in cards.items()))
        answers = [await link.answer() for _ in cards]
        assert {int(answer["11"]): answer["39"] for answer in answers} == {stan: c for stan, (_, _, c) in cards.items()}
        assert all(answer["41"] == TERMINAL for answer in answers)
        order = [int(answer["11"]) for answer in answers]
        assert set(order[:2]) == {3, 5} and set(order[2:4]) == {2, 4} and set(order[4:]) == {1, 6}

    run(scenario, late={slow: 0.05, slower: 0.2})


def test_received_messages_are_kept_decoded_and_logged_only_masked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="kassa.sandbox.acquirer_host")

    async def scenario(host: AcquirerHost) -> None:
        await (await Link.to(host)).ask(sale(1, CARD, "4321"))
        assert dialect.parse_tlv(REFERENCE, host.received[0]["48"])["CV"] == "4321"
        assert host.received[0]["2"] == CARD

    run(scenario)
    logged = " ".join(f"{record.getMessage()} {vars(record)}" for record in caplog.records)
    assert "received" in logged
    assert CARD not in logged
    assert "4321" not in logged


def test_an_undecodable_message_is_skipped_and_the_connection_goes_on() -> None:
    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host)
        await framing.write_message(link.writer, b"0200zz")
        assert (await link.ask(network(1, "301")))["11"] == "000001"

    run(scenario)


def test_a_tls_connection_is_served(tmp_path: Path) -> None:
    certificate, key = _self_signed(tmp_path)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(certificate, key)
    client = ssl.create_default_context(cafile=str(certificate))

    async def scenario(host: AcquirerHost) -> None:
        link = await Link.to(host, client)
        assert (await link.ask(network(1, "001")))["39"] == "00"

    run(scenario, tls=server)
