"""Each request of the seam becomes the message of CONTRACT §15's table, with the fields every financial
message carries, field 48 as the request's cardholder took part (CVV2 in the first authorization only, the
3-D Secure result, who initiated it) and field 90 naming the original exactly. Messages are encoded with the
dialect and read back with pyiso8583's ``default_ascii`` alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import iso8583
import orjson
import pytest
from iso8583.specs import default_ascii

from kassa.domain.destinations import BankAccount, CardNumber, EWallet, Phone
from kassa.processors.interface import (
    Authorize,
    Capture,
    Card,
    Credit,
    Initiator,
    Original,
    Refund,
    Request,
    Reverse,
    ThreeDSResult,
    Transfer,
    Verify,
)
from kassa.processors.iso8583 import dialect
from kassa.processors.iso8583.dialect import Kind
from kassa.processors.iso8583.messages import (
    SentOriginal,
    Terminal,
    Unsupported,
    build,
    charge_of,
    credit_of,
    network,
    repeat_of,
    reversal_of,
    void_of,
)

REFERENCE = dialect.load("reference")
TERMINAL = Terminal(acquirer="12345", terminal_id="TERM01", acceptor_id="SHOP1", mcc="5999")
NOW = datetime(2025, 11, 26, 9, 30, 15, tzinfo=UTC)
PAN, OTHER_PAN = "4111111111111111", "5555555555554444"
CARD = Card(PAN, 12, 2028, "Ann Smith", cvv="837")
STORED = Card(PAN, 12, 2028, "Ann Smith")  # a rebill's: no CVV2
AUTHORIZATION = Original("s-1", 1042, "A1B2C3", "000000004242", stan="000123", transmitted_at="1125235959")
AS_PREAUTH = SentOriginal(mti="0100", processing_code="000000")
AS_SALE = SentOriginal(mti="0200", processing_code="000000")
THREE_DS = ThreeDSResult("2.2.0", "Y", "05", "AAABBBCCC=", "f3c2e0a4-1b2c-4d5e-8f90-0a1b2c3d4e5f")
BASE = {"order_id": 1, "serial": "s-2", "currency": "EUR", "descriptor": "Kassa test shop"}


def on_wire(fields: dict[str, str]) -> dict[str, str]:
    """The message as an acquirer reads it: encoded by the dialect, decoded by pyiso8583's spec alone."""
    decoded, _ = iso8583.decode(dialect.encode(REFERENCE, fields), default_ascii)
    return {field: value for field, value in decoded.items() if field not in ("h", "p", "1")}


def sent(request: Request, **follow_up: object) -> dict[str, str]:
    return on_wire(build(REFERENCE, TERMINAL, request, "42", "4242", NOW, **follow_up))


SALE = Authorize(**BASE, amount=1042, card=CARD, capture=True, initiator=Initiator.CARDHOLDER)
REQUESTS: list[tuple[str, Request, dict[str, object], str, str, str]] = [
    ("sale", SALE, {}, "0200", "000000", "000000001042"),
    ("preauth", Authorize(**BASE, amount=1042, card=CARD, capture=False, initiator=Initiator.CARDHOLDER), {},
     "0100", "000000", "000000001042"),
    ("verification", Verify(**BASE, amount=0, card=CARD, initiator=Initiator.CARDHOLDER), {}, "0100", "000000",
     "000000000000"),
    ("capture", Capture(**BASE, amount=800, original=AUTHORIZATION), {"original": AS_PREAUTH, "card": STORED},
     "0220", "000000", "000000000800"),
    ("void", Reverse(**BASE, amount=1042, original=AUTHORIZATION), {"original": AS_PREAUTH, "card": STORED},
     "0400", "000000", "000000001042"),
    ("refund", Refund(**BASE, amount=500, original=AUTHORIZATION), {"original": AS_SALE, "card": STORED},
     "0200", "200000", "000000000500"),
    ("payout to a card", Credit(**BASE, amount=700, destination=Card(OTHER_PAN, 1, 2030, "Bo")), {}, "0200",
     "260000", "000000000700"),
    ("transfer", Transfer(**BASE, amount=300, card=CARD, destination=CardNumber(OTHER_PAN),
     initiator=Initiator.CARDHOLDER), {}, "0200", "000000", "000000000300"),
]  # fmt: skip
IDS = [name for name, *_ in REQUESTS]


@pytest.mark.parametrize(("name", "request_", "follow_up", "mti", "processing_code", "amount"), REQUESTS, ids=IDS)
def test_each_request_is_the_message_of_the_contracts_table_with_every_financial_field(
    name: str, request_: Request, follow_up: dict[str, object], mti: str, processing_code: str, amount: str
) -> None:
    fields = sent(request_, **follow_up)
    assert (fields["t"], fields["3"], fields["4"]) == (mti, processing_code, amount)
    assert fields["2"] == (OTHER_PAN if name == "payout to a card" else PAN)
    assert fields["14"] == ("3001" if name == "payout to a card" else "2812")
    assert {field: fields[field] for field in ("7", "11", "12", "13", "18", "22", "25", "32", "37", "49")} == {
        "7": "1126093015",
        "11": "000042",
        "12": "093015",
        "13": "1126",
        "18": "5999",
        "22": "810",
        "25": "59",
        "32": "12345",
        "37": "000000004242",
        "49": "978",
    }
    assert (fields["41"], fields["42"], fields["43"]) == ("TERM01  ", "SHOP1".ljust(15), "Kassa test shop".ljust(40))


@pytest.mark.parametrize(
    ("request_", "follow_up", "mti"),
    [
        (Capture(**BASE, amount=800, original=AUTHORIZATION), AS_PREAUTH, "0100"),
        (Reverse(**BASE, amount=1042, original=AUTHORIZATION), AS_SALE, "0200"),
        (Refund(**BASE, amount=500, original=AUTHORIZATION), AS_SALE, "0200"),
    ],
)
def test_a_follow_up_names_its_original_in_field_90_mti_stan_field_7_and_acquirer(
    request_: Request, follow_up: SentOriginal, mti: str
) -> None:
    fields = sent(request_, original=follow_up)
    assert fields["90"] == mti + "000123" + "1125235959" + "00000012345" + "00000000000"
    assert dialect.parse_original_data(fields["90"]) == dialect.Original(mti, "000123", "1125235959", "00000012345")


def test_a_capture_carries_the_authorizations_approval_code_and_the_amount_captured() -> None:
    fields = sent(Capture(**BASE, amount=800, original=AUTHORIZATION), original=AS_PREAUTH)
    assert (fields["38"], fields["4"]) == ("A1B2C3", "000000000800")


def test_a_void_carries_the_original_amount_and_processing_code() -> None:
    payout = SentOriginal(mti="0200", processing_code="260000")
    fields = sent(Reverse(**BASE, amount=1, original=AUTHORIZATION), original=payout)
    assert (fields["t"], fields["3"], fields["4"]) == ("0400", "260000", "000000001042")


def test_a_follow_up_without_the_order_card_goes_without_fields_2_and_14() -> None:
    fields = sent(Refund(**BASE, amount=500, original=AUTHORIZATION), original=AS_SALE)
    assert "2" not in fields and "14" not in fields


def test_a_follow_up_of_an_original_never_sent_over_iso_8583_is_unsupported() -> None:
    sandbox = Original("s-1", 1042, "A1B2C3", None)
    with pytest.raises(Unsupported):
        sent(Capture(**BASE, amount=800, original=sandbox), original=AS_PREAUTH)
    with pytest.raises(ValueError, match="as it was sent"):
        sent(Capture(**BASE, amount=800, original=AUTHORIZATION))


def test_the_cvv2_goes_in_the_first_authorization_only() -> None:
    first = dialect.parse_tlv(REFERENCE, sent(SALE)["48"])
    rebill = Authorize(**BASE, amount=1042, card=STORED, capture=True, initiator=Initiator.UNSCHEDULED)
    again = dialect.parse_tlv(REFERENCE, sent(rebill)["48"])
    assert first == {"CV": "837", "MI": "C"}
    assert again == {"MI": "U"}


@pytest.mark.parametrize(("initiator", "value"), [(Initiator.CARDHOLDER, "C"), (Initiator.RECURRING, "R"),
                                                  (Initiator.UNSCHEDULED, "U")])  # fmt: skip
def test_field_48_says_who_initiated_the_payment(initiator: Initiator, value: str) -> None:
    request = Authorize(**BASE, amount=1, card=STORED, capture=False, initiator=initiator)
    assert dialect.parse_tlv(REFERENCE, sent(request)["48"])["MI"] == value


def test_field_48_carries_the_3ds_result_when_authentication_ran() -> None:
    request = Authorize(**BASE, amount=1, card=CARD, capture=True, initiator=Initiator.CARDHOLDER, three_ds=THREE_DS)
    items = dialect.parse_tlv(REFERENCE, sent(request)["48"])
    assert items == {"CV": "837", "EC": "05", "CA": "AAABBBCCC=", "DS": THREE_DS.ds_trans_id, "MI": "C"}
    assert not {"EC", "CA", "DS"} & dialect.parse_tlv(REFERENCE, sent(SALE)["48"]).keys()


def test_a_3ds_result_without_cavv_or_directory_server_sends_only_what_it_has() -> None:
    attempted = ThreeDSResult("2.2.0", "A", "06", None, None)
    request = Verify(**BASE, amount=0, card=STORED, initiator=Initiator.CARDHOLDER, three_ds=attempted)
    assert dialect.parse_tlv(REFERENCE, sent(request)["48"]) == {"EC": "06", "MI": "C"}


def test_follow_ups_and_credits_carry_no_field_48() -> None:
    for _, request_, follow_up, *_ in REQUESTS[3:7]:
        assert "48" not in sent(request_, **follow_up)


def test_a_payout_to_a_card_number_sends_it_in_field_2_without_expiry() -> None:
    fields = sent(Credit(**BASE, amount=700, destination=CardNumber(OTHER_PAN)))
    assert (fields["t"], fields["2"], fields["3"]) == ("0200", OTHER_PAN, "260000")
    assert "14" not in fields


def test_a_payout_check_is_a_zero_amount_0100_with_the_credits_processing_code() -> None:
    fields = sent(Credit(**BASE, amount=700, destination=CardNumber(OTHER_PAN), check_only=True))
    assert (fields["t"], fields["2"], fields["3"], fields["4"]) == ("0100", OTHER_PAN, "260000", "000000000000")


@pytest.mark.parametrize(
    "destination",
    [
        BankAccount("DE89370400440532013000", "Bank", None, None, "DE89370400440532013000", "Ann", {}),
        EWallet("paypal", "ann@example.com"),
        Phone("+447911123456", "B1", "Ann"),
    ],
    ids=["bank", "ewallet", "phone"],
)
def test_a_payout_to_anything_but_a_card_is_unsupported_without_quoting_it(destination: object) -> None:
    with pytest.raises(Unsupported) as refused:
        sent(Credit(**BASE, amount=700, destination=destination))
    assert "4400" not in str(refused.value) and "7911" not in str(refused.value) and "ann@" not in str(refused.value)


TRANSFER = Transfer(**BASE, amount=300, card=CARD, destination=CardNumber(OTHER_PAN), initiator=Initiator.CARDHOLDER)


def test_a_transfer_is_the_charge_of_its_source_card_then_the_credit_of_the_receiving_one() -> None:
    charge, credit = sent(charge_of(TRANSFER)), sent(credit_of(TRANSFER))
    assert (charge["t"], charge["3"], charge["4"], charge["2"]) == ("0200", "000000", "000000000300", PAN)
    assert dialect.parse_tlv(REFERENCE, charge["48"]) == {"CV": "837", "MI": "C"}
    assert (credit["t"], credit["3"], credit["4"], credit["2"]) == ("0200", "260000", "000000000300", OTHER_PAN)
    assert OTHER_PAN not in orjson.dumps(charge).decode() and PAN not in orjson.dumps(credit).decode()
    assert "48" not in credit
    assert sent(TRANSFER) == charge  # a transfer's first message


def test_a_transfers_void_names_its_charge_and_gives_back_its_whole_amount_without_the_cvv2() -> None:
    void = void_of(TRANSFER, replace(AUTHORIZATION, amount=300))  # the charge, as it was sent
    fields = sent(void, original=AS_SALE, card=void.card)
    assert (fields["t"], fields["3"], fields["4"], fields["2"], fields["14"]) == (
        "0400", "000000", "000000000300", PAN, "2812"
    )  # fmt: skip
    assert fields["90"][:20] == "0200" + "000123" + "1125235959" and "48" not in fields


@pytest.mark.parametrize(("name", "request_", "follow_up", "mti", "processing_code", "amount"), REQUESTS, ids=IDS)
def test_no_card_number_cvv2_or_expiry_shows_in_the_masked_message(
    name: str, request_: Request, follow_up: dict[str, object], mti: str, processing_code: str, amount: str
) -> None:
    shown = orjson.dumps(dialect.masked(REFERENCE, sent(request_, **follow_up))).decode()
    assert PAN not in shown and OTHER_PAN not in shown
    assert "837" not in shown
    assert "2812" not in shown and "3001" not in shown


def test_field_43_is_the_descriptor_in_plain_ascii_cut_or_padded_to_40() -> None:
    accented = Authorize(**{**BASE, "descriptor": "Café Zürich\tbooks"}, amount=1, card=CARD, capture=True,
                         initiator=Initiator.CARDHOLDER)  # fmt: skip
    long = Authorize(**{**BASE, "descriptor": "x" * 50}, amount=1, card=CARD, capture=True,
                     initiator=Initiator.CARDHOLDER)  # fmt: skip
    assert sent(accented)["43"] == "Cafe Zurich books".ljust(40)
    assert sent(long)["43"] == "x" * 40


def test_times_are_utc_whatever_the_zone_of_now() -> None:
    paris = NOW.astimezone(timezone(timedelta(hours=1)))
    fields = on_wire(build(REFERENCE, TERMINAL, SALE, "42", "4242", paris))
    assert (fields["7"], fields["12"], fields["13"]) == ("1126093015", "093015", "1126")


def test_a_reversal_names_the_request_it_reverses_and_carries_its_amount_and_code_without_the_cvv2() -> None:
    original = build(REFERENCE, TERMINAL, SALE, "42", "4242", NOW)
    later = NOW + timedelta(seconds=25)
    first = on_wire(reversal_of(REFERENCE, original, "43", later))
    again = on_wire(reversal_of(REFERENCE, original, "44", later, repeat=True))
    assert (first["t"], again["t"]) == ("0400", "0401")
    assert (first["3"], first["4"], first["2"], first["37"], first["41"]) == ("000000", "000000001042", PAN,
                                                                              "000000004242", "TERM01  ")  # fmt: skip
    assert (first["11"], first["7"], again["11"]) == ("000043", "1126093040", "000044")
    assert first["90"] == "0200" + "000042" + "1126093015" + "00000012345" + "00000000000"
    assert "48" not in first


def test_only_an_authorization_sale_refund_or_credit_is_reversed() -> None:
    capture = build(REFERENCE, TERMINAL, REQUESTS[3][1], "42", "4242", NOW, original=AS_PREAUTH)
    with pytest.raises(ValueError, match="reversed"):
        reversal_of(REFERENCE, capture, "43", NOW)


def test_a_repeated_advice_or_reversal_is_the_same_message_under_its_repeat_mti() -> None:
    capture = build(REFERENCE, TERMINAL, REQUESTS[3][1], "42", "4242", NOW, original=AS_PREAUTH)
    reversal = reversal_of(REFERENCE, build(REFERENCE, TERMINAL, SALE, "42", "4242", NOW), "43", NOW)
    assert repeat_of(REFERENCE, capture) == {**capture, "t": "0221"}
    assert repeat_of(REFERENCE, reversal) == {**reversal, "t": "0401"}
    assert repeat_of(REFERENCE, {**reversal, "t": "0401"}) == {**reversal, "t": "0401"}
    with pytest.raises(ValueError, match="not repeated"):
        repeat_of(REFERENCE, build(REFERENCE, TERMINAL, SALE, "42", "4242", NOW))


@pytest.mark.parametrize(("kind", "code"), [(Kind.SIGN_ON, "001"), (Kind.SIGN_OFF, "002"), (Kind.ECHO, "301")])
def test_network_messages_are_0800_with_field_70_and_the_terminal_id(kind: Kind, code: str) -> None:
    fields = on_wire(network(REFERENCE, kind, TERMINAL, "7", NOW))
    assert fields == {"t": "0800", "7": "1126093015", "11": "000007", "41": "TERM01  ", "70": code}


@pytest.mark.parametrize(
    "terminal",
    [
        {"acquirer": "123456789012"},
        {"acquirer": "12a"},
        {"terminal_id": "TERMINAL9"},
        {"acceptor_id": ""},
        {"mcc": "599"},
    ],
)
def test_a_terminal_the_fields_cannot_hold_is_refused(terminal: dict[str, str]) -> None:
    values = {"acquirer": "12345", "terminal_id": "TERM01", "acceptor_id": "SHOP1", "mcc": "5999", **terminal}
    with pytest.raises(ValueError):
        Terminal(**values)
