import datetime

import pytest

from kassa.domain import cards
from kassa.domain.cards import (
    Brand,
    CardError,
    Expiry,
    bin_of,
    brand_of,
    cvv_valid,
    last_four,
    luhn_valid,
    mask_pan,
    mask_stored,
    normalize_pan,
    parse_expiry,
)

TODAY = datetime.date(2025, 6, 15)

BRANDED_PANS = [
    ("4111111111111111", Brand.VISA),
    ("4012888888881881", Brand.VISA),
    ("4000000000006", Brand.VISA),
    ("5555555555554444", Brand.MASTERCARD),
    ("5105105105105100", Brand.MASTERCARD),
    ("2221000000000009", Brand.MASTERCARD),
    ("2720000000000005", Brand.MASTERCARD),
    ("378282246310005", Brand.AMEX),
    ("340000000000009", Brand.AMEX),
    ("2200000000000004", Brand.MIR),
    ("2204000000000000", Brand.MIR),
    ("6200000000000005", Brand.UNIONPAY),
    ("8100000000000002", Brand.UNIONPAY),
    ("3530111333300000", Brand.JCB),
    ("3589000000000003", Brand.JCB),
    ("6011111111111117", Brand.DISCOVER),
    ("6440000000000005", Brand.DISCOVER),
    ("6500000000000002", Brand.DISCOVER),
    ("30569309025904", Brand.DINERS),
    ("36000000000008", Brand.DINERS),
    ("38000000000006", Brand.DINERS),
    ("39000000000005", Brand.DINERS),
    ("5000000000000009", Brand.MAESTRO),
    ("5600000000000003", Brand.MAESTRO),
    ("5800000000000001", Brand.MAESTRO),
    ("6304000000000000", Brand.MAESTRO),
    ("6700000000000000", Brand.MAESTRO),
]

# Just outside a range: each would be misbranded by an off-by-one in the IIN table.
UNBRANDED_PANS = [
    "2205000000000009",
    "2220000000000000",
    "2721000000000004",
    "3527000000000008",
    "3590000000000000",
    "30600000000001",
    "6010000000000005",
    "6430000000000007",
    "5900000000000000",
    "1000000000000008",
    "9000000000000001",
]


@pytest.mark.parametrize("pan", [pan for pan, _ in BRANDED_PANS] + UNBRANDED_PANS)
def test_every_sample_pan_passes_luhn(pan: str) -> None:
    assert luhn_valid(pan)


def test_brand_values_are_upper_case_wire_names() -> None:
    assert [brand.value for brand in Brand] == [
        "VISA",
        "MASTERCARD",
        "AMEX",
        "MIR",
        "UNIONPAY",
        "JCB",
        "DISCOVER",
        "DINERS",
        "MAESTRO",
    ]
    assert Brand("MIR") is Brand.MIR


@pytest.mark.parametrize(("pan", "brand"), BRANDED_PANS)
def test_brand_of_recognises_iin_ranges(pan: str, brand: Brand) -> None:
    assert brand_of(pan) is brand


@pytest.mark.parametrize("pan", UNBRANDED_PANS)
def test_brand_of_returns_none_outside_known_ranges(pan: str) -> None:
    assert brand_of(pan) is None


def test_discover_6011_is_not_confused_with_neighbouring_six_ranges() -> None:
    assert brand_of("6011000990139424") is Brand.DISCOVER
    assert brand_of("6200000000000005") is Brand.UNIONPAY
    assert brand_of("6500000000000002") is Brand.DISCOVER
    assert brand_of("6010000000000005") is None


def test_brand_of_works_on_a_bin_alone() -> None:
    assert brand_of("411111") is Brand.VISA
    assert brand_of("601100") is Brand.DISCOVER


@pytest.mark.parametrize("pan", ["", "4111 1111 1111 1111", "\u0664111111111111111"])
def test_brand_of_returns_none_for_text_that_is_not_a_normalized_pan(pan: str) -> None:
    assert brand_of(pan) is None


@pytest.mark.parametrize("digits", ["4111111111111111", "378282246310005", "0", "00", "18", "79927398713"])
def test_luhn_accepts_valid_check_digit(digits: str) -> None:
    assert luhn_valid(digits)


@pytest.mark.parametrize(
    "digits", ["4111111111111112", "4111111111111121", "79927398710", "1", "", "4111-1111", "\u0660"]
)
def test_luhn_rejects_wrong_check_digit_and_non_digits(digits: str) -> None:
    assert not luhn_valid(digits)


@pytest.mark.parametrize(
    "text",
    ["4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111", "4111 1111-1111 1111"],
)
def test_normalize_pan_removes_separators_between_digit_groups(text: str) -> None:
    assert normalize_pan(text) == "4111111111111111"


def test_normalize_pan_accepts_twelve_and_nineteen_digits() -> None:
    assert normalize_pan("400000000002") == "400000000002"
    assert normalize_pan("4000000000000000006") == "4000000000000000006"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "40000000007",  # 11 digits
        "40000000000000000002",  # 20 digits
        " 4111111111111111",
        "4111111111111111 ",
        "4111  1111 1111 1111",
        "4111--1111-1111-1111",
        "-4111111111111111",
        "4111.1111.1111.1111",
        "4111/1111/1111/1111",
        "411111111111111a",
        "\u0664" + "\u0661" * 15,  # Arabic-Indic digits
    ],
)
def test_normalize_pan_refuses_wrong_length_or_characters(text: str) -> None:
    with pytest.raises(CardError, match="must be 12 to 19 digits"):
        normalize_pan(text)


def test_normalize_pan_refuses_luhn_failure() -> None:
    with pytest.raises(CardError, match="fails the Luhn check"):
        normalize_pan("4111111111111112")


@pytest.mark.parametrize("text", ["4111111111111112", "4111 1111 1111 111x", "41111111111111111111"])
def test_card_errors_never_echo_the_pan(text: str) -> None:
    with pytest.raises(CardError) as caught:
        normalize_pan(text)
    digits = text.replace(" ", "")
    assert digits not in str(caught.value)
    assert digits[-4:] not in str(caught.value)
    assert caught.value.field is None


@pytest.mark.parametrize(
    ("cvv", "brand", "valid"),
    [
        ("1234", Brand.AMEX, True),
        ("123", Brand.AMEX, False),
        ("123", Brand.VISA, True),
        ("1234", Brand.VISA, False),
        ("123", Brand.MASTERCARD, True),
        ("123", Brand.MIR, True),
        ("1234", Brand.MAESTRO, False),
        ("12", Brand.VISA, False),
        ("123", None, True),
        ("1234", None, True),
        ("12", None, False),
        ("12345", None, False),
        ("", None, False),
        ("12a", Brand.VISA, False),
        (" 123", Brand.VISA, False),
        ("\u0661\u0662\u0663", Brand.VISA, False),
    ],
)
def test_cvv_length_depends_on_brand(cvv: str, brand: Brand | None, valid: bool) -> None:
    assert cvv_valid(cvv, brand) is valid


@pytest.mark.parametrize(
    ("month", "year", "expiry"),
    [
        ("1", "29", Expiry(1, 2029)),
        ("01", "2029", Expiry(1, 2029)),
        ("9", "2030", Expiry(9, 2030)),
        ("12", "30", Expiry(12, 2030)),
        ("10", "2075", Expiry(10, 2075)),
    ],
)
def test_parse_expiry_accepts_short_and_long_forms(month: str, year: str, expiry: Expiry) -> None:
    assert parse_expiry(month, year, TODAY) == expiry


def test_card_is_valid_through_last_day_of_expiry_month() -> None:
    assert parse_expiry("06", "2025", datetime.date(2025, 6, 30)) == Expiry(6, 2025)
    assert parse_expiry("06", "25", datetime.date(2025, 6, 1)) == Expiry(6, 2025)


def test_stored_expiry_passes_on_the_first_day_of_the_next_month() -> None:
    assert not Expiry(6, 2025).passed(datetime.date(2025, 6, 30))
    assert Expiry(6, 2025).passed(datetime.date(2025, 7, 1))
    assert Expiry(12, 2024).passed(datetime.date(2025, 1, 1))


def test_card_is_expired_from_first_day_of_next_month() -> None:
    with pytest.raises(CardError, match="card is expired") as caught:
        parse_expiry("06", "2025", datetime.date(2025, 7, 1))
    assert caught.value.field is None


def test_card_from_earlier_year_is_expired_even_with_later_month() -> None:
    with pytest.raises(CardError, match="card is expired"):
        parse_expiry("12", "2024", TODAY)


@pytest.mark.parametrize("month", ["0", "00", "13", "001", "", "1a", " 1", "+1", "-1", "\u0661"])
def test_parse_expiry_names_month_field_when_month_is_wrong(month: str) -> None:
    with pytest.raises(CardError, match="expire_month must be 01 to 12") as caught:
        parse_expiry(month, "2029", TODAY)
    assert caught.value.field == "expire_month"


@pytest.mark.parametrize("year", ["9", "029", "20290", "", "2o29", " 29", "\u0662\u0669"])
def test_parse_expiry_names_year_field_when_year_has_wrong_digit_count(year: str) -> None:
    with pytest.raises(CardError, match="expire_year must be 2 or 4 digits") as caught:
        parse_expiry("01", year, TODAY)
    assert caught.value.field == "expire_year"


def test_parse_expiry_refuses_more_than_fifty_years_ahead() -> None:
    with pytest.raises(CardError, match="expire_year") as caught:
        parse_expiry("01", "2076", TODAY)
    assert caught.value.field == "expire_year"


def test_expiry_is_immutable() -> None:
    with pytest.raises(AttributeError):
        Expiry(1, 2029).month = 2  # type: ignore[misc]


def test_bin_and_last_four_take_the_ends_of_the_pan() -> None:
    assert bin_of("4111111111111111") == "411111"
    assert last_four("378282246310005") == "0005"


@pytest.mark.parametrize(
    ("pan", "masked"),
    [
        ("4111111111111111", "411111******1111"),
        ("378282246310005", "378282*****0005"),
        ("400000000002", "400000**0002"),
        ("4000000000000000006", "400000*********0006"),
    ],
)
def test_mask_pan_keeps_only_bin_and_last_four(pan: str, masked: str) -> None:
    assert mask_pan(pan) == masked


def test_mask_pan_works_for_numbers_failing_luhn() -> None:
    assert mask_pan("4111111111111112") == "411111******1112"


@pytest.mark.parametrize("helper", [bin_of, last_four, mask_pan])
@pytest.mark.parametrize("pan", ["41111111111", "4111 1111 1111 1111", ""])
def test_pan_helpers_refuse_text_that_is_not_a_normalized_pan(helper: object, pan: str) -> None:
    assert callable(helper)
    with pytest.raises(CardError):
        helper(pan)


def test_stored_card_is_masked_to_its_brands_usual_length() -> None:
    assert mask_stored("411111", "1111", "VISA") == "411111******1111"
    assert mask_stored("378282", "0005", "AMEX") == "378282*****0005"


def test_the_rules_a_browser_gets_are_the_gateways_own() -> None:
    rules = cards.browser_rules()
    assert (rules["panRange"], rules["maxYearsAhead"], rules["cvvLengthsUnknown"]) == ([12, 19], 50, [3, 4])
    assert rules["cvvLengths"] == {brand.value: [4] if brand is Brand.AMEX else [3] for brand in Brand}
    assert rules["brands"][0][0] == max(length for length, *_ in cards.IIN_RANGES)  # longest prefix first
