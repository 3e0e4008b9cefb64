"""The reference dialect of CONTRACT §15: its messages go on the wire in pyiso8583's ``default_ascii`` formats
(read back here by pyiso8583 alone), field 48 and field 90 are built as the contract spells them, field 39
means what its table says, and what logs see of a message holds no card number or CVV2."""

from __future__ import annotations

from importlib import resources

import iso8583
import orjson
import pytest
from iso8583.specs import default_ascii

from kassa.domain.lifecycle import Stage
from kassa.processors.iso8583 import dialect
from kassa.processors.iso8583.dialect import DialectError, Kind, MessageError, Original

REFERENCE = dialect.load("reference")
PAN = "4111111111111111"

FINANCIAL = {
    "2": PAN,
    "4": "000000001042",
    "7": "1126093015",
    "11": "000042",
    "12": "103015",
    "13": "1126",
    "14": "2812",
    "18": "5999",
    "22": "810",
    "25": "59",
    "32": "12345",
    "37": "000000004242",
    "41": "TERM0001",
    "42": "SHOP00000000001",
    "43": "Kassa test shop".ljust(40),
    "49": "978",
}
SALE = {"t": "0200", **FINANCIAL, "3": "000000", "48": "CV003123MI001C"}
ORIGINAL = "0200" + "000042" + "1126093015" + "00000012345" + "0" * 11

# One message of each kind of §15's table, and the answer to each.
MESSAGES = {
    Kind.SALE: SALE,
    Kind.PREAUTH: {**SALE, "t": "0100"},
    Kind.VERIFICATION: {**SALE, "t": "0100", "4": "000000000000"},
    Kind.CAPTURE: {"t": "0220", **FINANCIAL, "3": "000000", "38": "A1B2C3", "90": ORIGINAL},
    Kind.VOID: {"t": "0400", **FINANCIAL, "3": "000000", "90": ORIGINAL},
    Kind.REFUND: {"t": "0200", **FINANCIAL, "3": "200000", "90": ORIGINAL},
    Kind.CREDIT: {"t": "0200", **FINANCIAL, "3": "260000"},
    Kind.REVERSAL: {"t": "0401", **FINANCIAL, "3": "000000", "90": ORIGINAL},
    Kind.SIGN_ON: {"t": "0800", "7": "1126093015", "11": "000001", "70": "001"},
    Kind.SIGN_OFF: {"t": "0800", "7": "1126093015", "11": "000002", "70": "002"},
    Kind.ECHO: {"t": "0800", "7": "1126093015", "11": "000003", "70": "301"},
}
ANSWERS = [
    {"t": "0110", "3": "000000", "4": "000000001042", "11": "000042", "37": "000000004242", "38": "A1B2C3", "39": "00",
     "41": "TERM0001", "49": "978"},
    {"t": "0210", "3": "000000", "11": "000042", "37": "000000004242", "39": "51", "41": "TERM0001"},
    {"t": "0230", "11": "000042", "39": "00", "41": "TERM0001"},
    {"t": "0410", "11": "000042", "39": "25", "41": "TERM0001"},
    {"t": "0810", "7": "1126093015", "11": "000001", "39": "00", "70": "001"},
]  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "mti", "processing_code"),
    [
        (Kind.SALE, "0200", "000000"),
        (Kind.PREAUTH, "0100", "000000"),
        (Kind.VERIFICATION, "0100", "000000"),
        (Kind.CAPTURE, "0220", "000000"),
        (Kind.VOID, "0400", None),
        (Kind.REFUND, "0200", "200000"),
        (Kind.CREDIT, "0200", "260000"),
        (Kind.REVERSAL, "0400", None),
        (Kind.SIGN_ON, "0800", None),
    ],
)
def test_each_kind_of_message_has_the_mti_and_processing_code_of_the_contracts_table(
    kind: Kind, mti: str, processing_code: str | None
) -> None:
    message = REFERENCE.messages[kind]
    assert (message.mti, message.processing_code) == (mti, processing_code)


def test_advices_and_reversals_are_repeated_under_their_repeat_mti_and_network_codes_are_the_contracts() -> None:
    messages = REFERENCE.messages
    assert [messages[kind].repeat for kind in (Kind.CAPTURE, Kind.VOID, Kind.REVERSAL)] == ["0221", "0401", "0401"]
    assert [messages[kind].network_code for kind in (Kind.SIGN_ON, Kind.SIGN_OFF, Kind.ECHO)] == ["001", "002", "301"]
    assert messages[Kind.VERIFICATION].zero_amount
    assert REFERENCE.always == {"22": "810", "25": "59"}
    assert [REFERENCE.tag(meaning) for meaning in ("cvv2", "eci", "cavv", "ds_transaction_id", "initiator")] == [
        "CV", "EC", "CA", "DS", "MI"
    ]  # fmt: skip
    assert REFERENCE.additional.initiators == {"cardholder": "C", "recurring": "R", "unscheduled": "U"}


@pytest.mark.parametrize("kind", list(Kind))
def test_every_kind_of_message_goes_on_the_wire_as_default_ascii_and_comes_back_whole(kind: Kind) -> None:
    message = MESSAGES[kind]
    data = dialect.encode(REFERENCE, message)
    assert data[:4] == message["t"].encode()
    read, _ = iso8583.decode(data, default_ascii)  # pyiso8583 alone, as another party would read it
    assert {field: value for field, value in read.items() if field not in ("h", "p", "1")} == message
    assert dialect.decode(REFERENCE, data) == message


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda answer: answer["t"])
def test_every_answer_comes_back_whole(answer: dict[str, str]) -> None:
    assert dialect.decode(REFERENCE, dialect.encode(REFERENCE, answer)) == answer


def test_bitmaps_are_sixteen_hexadecimal_characters_each_and_the_secondary_is_there_only_for_fields_past_64() -> None:
    sale = dialect.encode(REFERENCE, SALE)
    assert int(sale[4:20], 16) >> 63 == 0  # no secondary bitmap
    reversal = dialect.encode(REFERENCE, MESSAGES[Kind.REVERSAL])
    assert int(reversal[4:20], 16) >> 63 == 1
    assert int(reversal[20:36], 16) == 1 << (128 - 90)  # field 90 alone of the second 64


def test_amount_stan_and_rrn_are_zero_padded_on_the_left_and_texts_with_spaces_on_the_right() -> None:
    short = {**SALE, "4": "1042", "11": "42", "37": "4242", "41": "T1", "42": "S1", "43": "Kassa"}
    read = dialect.decode(REFERENCE, dialect.encode(REFERENCE, short))
    assert (read["4"], read["11"], read["37"]) == ("000000001042", "000042", "000000004242")
    assert (read["41"], read["42"], read["43"]) == ("T1".ljust(8), "S1".ljust(15), "Kassa".ljust(40))


def test_a_field_the_dialect_does_not_use_is_refused_both_ways() -> None:
    with pytest.raises(MessageError, match="field 35 is not in the reference dialect"):
        dialect.encode(REFERENCE, {**SALE, "35": f"{PAN}=2812"})
    foreign, _ = iso8583.encode({**SALE, "35": f"{PAN}=2812"}, default_ascii)
    with pytest.raises(MessageError, match="field 35 is not in the reference dialect"):
        dialect.decode(REFERENCE, bytes(foreign))


def test_a_malformed_field_is_refused_without_its_value_in_the_message() -> None:
    with pytest.raises(MessageError) as letters:
        dialect.encode(REFERENCE, {**SALE, "2": "4111x11111111111"})
    assert "4111" not in str(letters.value)
    assert "field 2" in str(letters.value)
    with pytest.raises(MessageError, match="field 14"):
        dialect.encode(REFERENCE, {**SALE, "14": "28121"})
    with pytest.raises(MessageError):
        dialect.decode(REFERENCE, dialect.encode(REFERENCE, SALE)[:-3])


def test_field_48_items_are_a_two_character_tag_three_digits_of_length_and_the_value() -> None:
    built = dialect.build_tlv(REFERENCE, {"CV": "123", "EC": "05", "DS": "f" * 36, "MI": "R"})
    assert built == "CV003123EC00205DS036" + "f" * 36 + "MI001R"
    assert dialect.parse_tlv(REFERENCE, built) == {"CV": "123", "EC": "05", "DS": "f" * 36, "MI": "R"}
    assert dialect.parse_tlv(REFERENCE, "") == {}


@pytest.mark.parametrize("text", ["CV0031", "CV00", "CVabc123", "C"])
def test_a_malformed_field_48_is_refused(text: str) -> None:
    with pytest.raises(MessageError, match="field 48"):
        dialect.parse_tlv(REFERENCE, text)


def test_field_48_refuses_a_tag_of_another_size_or_a_value_too_long_for_its_length() -> None:
    with pytest.raises(MessageError):
        dialect.build_tlv(REFERENCE, {"CVV": "123"})
    with pytest.raises(MessageError):
        dialect.build_tlv(REFERENCE, {"DS": "x" * 1000})


def test_field_90_is_original_mti_stan_transmission_time_acquirer_in_eleven_digits_and_eleven_zeros() -> None:
    original = Original.of(SALE)
    text = dialect.original_data(original)
    assert text == "020000004211260930150000001234500000000000"
    assert len(text) == 42
    assert dialect.parse_original_data(text) == original


@pytest.mark.parametrize("text", ["0200", "0200000042112609301500000012345000000000x0"])
def test_a_malformed_field_90_is_refused(text: str) -> None:
    with pytest.raises(MessageError, match="field 90"):
        dialect.parse_original_data(text)


@pytest.mark.parametrize(
    ("code", "stage", "error_code"),
    [
        ("00", Stage.APPROVED, None),
        ("08", Stage.APPROVED, None),
        ("11", Stage.APPROVED, None),
        ("51", Stage.DECLINED, "116"),
        ("54", Stage.DECLINED, "101"),
        ("57", Stage.DECLINED, "119"),
        ("41", Stage.DECLINED, "208"),
        ("43", Stage.DECLINED, "209"),
        ("14", Stage.DECLINED, "111"),
        ("61", Stage.DECLINED, "121"),
        ("65", Stage.DECLINED, "123"),
        ("91", Stage.ERROR, "907"),
        ("96", Stage.ERROR, "909"),
        ("05", Stage.DECLINED, "100"),
        ("N7", Stage.DECLINED, "100"),
    ],
)
def test_field_39_gives_the_outcome_and_error_code_of_the_contracts_table(
    code: str, stage: Stage, error_code: str | None
) -> None:
    answer = dialect.answer_of(REFERENCE, {"t": "0210", "39": code, "37": "000000004242", "38": "A1B2C3"})
    assert (answer.stage, answer.error_code) == (stage, error_code)
    assert answer.rrn == "000000004242"
    assert answer.approval_code == ("A1B2C3" if stage is Stage.APPROVED else None)
    assert (answer.error_message is None) == (stage is Stage.APPROVED)


def test_an_answer_without_field_39_is_refused() -> None:
    with pytest.raises(MessageError, match="field 39"):
        dialect.answer_of(REFERENCE, {"t": "0210", "11": "000042"})


@pytest.mark.parametrize(("mti", "answer"), [("0100", "0110"), ("0200", "0210"), ("0221", "0230"), ("0401", "0410"),
                                             ("0800", "0810")])  # fmt: skip
def test_an_answers_mti_is_its_requests_function_plus_one(mti: str, answer: str) -> None:
    assert dialect.answer_mti(mti) == answer


def test_an_answer_has_no_answer_mti() -> None:
    with pytest.raises(MessageError):
        dialect.answer_mti("0210")


def test_what_logs_see_of_a_message_never_holds_its_card_number_expiry_track_data_or_cvv2() -> None:
    message = {**SALE, "48": "CV0044321CA028AAABBBCCCDDDEEEFFF0001112223MI001C", "35": f"{PAN}=28121010000",
               "45": f"B{PAN}^DOE/JOHN^2812101"}  # fmt: skip
    shown = dialect.masked(REFERENCE, message)
    text = orjson.dumps(shown).decode()
    assert PAN not in text
    assert "4321" not in text
    assert "AAABBB" not in text
    assert "2812" not in text
    assert shown["2"] == "411111******1111"
    assert shown["48"] == "CV004****CA028" + "*" * 28 + "MI001C"
    assert shown["4"] == message["4"]
    assert message["2"] == PAN  # the message itself is left as it was


def test_an_unreadable_field_48_or_a_too_short_card_number_is_hidden_whole() -> None:
    shown = dialect.masked(REFERENCE, {"t": "0200", "2": "41111111", "48": "CV0094321"})
    assert shown == {"t": "0200", "2": "********", "48": "*********"}


@pytest.mark.parametrize("name", ["nonexistent", "../reference", "Reference", ""])
def test_a_dialect_that_is_not_there_is_refused_by_name(name: str) -> None:
    with pytest.raises(DialectError):
        dialect.load(name)


@pytest.mark.parametrize(
    "name",
    sorted(
        path.name.removesuffix(".toml")
        for path in resources.files("kassa.processors.iso8583").joinpath("dialects").iterdir()
        if path.name.endswith(".toml")
    ),
)
def test_every_dialect_file_loads_and_carries_every_kind_of_message(name: str) -> None:
    loaded = dialect.load(name)  # a file that cannot be used is a DialectError naming what is wrong
    assert set(loaded.messages) == set(Kind)
    assert dialect.decode(loaded, dialect.encode(loaded, {"t": "0800", "7": "1126093015", "11": "000001"}))
