import pytest

from kassa.domain.money import (
    CURRENCIES,
    MAX_MINOR,
    NUMERIC,
    AmountError,
    Currency,
    currency,
    format_amount,
    numeric_code,
    parse_amount,
)

USD = currency("USD")
JPY = currency("JPY")
KWD = currency("KWD")

COMMON_CODES = (
    "USD EUR GBP RUB UAH KZT BYN CNY JPY KRW INR BRL MXN CAD AUD NZD CHF SEK NOK DKK PLN CZK HUF RON "
    "BGN TRY ILS AED SAR QAR KWD BHD OMR JOD TND LYD IQD CLP ISK VND IDR THB MYR SGD HKD TWD PHP ZAR "
    "NGN EGP KES GEL AMD AZN UZS KGS TJS MDL RSD"
)


@pytest.mark.parametrize("code", COMMON_CODES.split())
def test_commonly_used_currencies_are_known(code: str) -> None:
    assert currency(code).code == code


@pytest.mark.parametrize(
    ("code", "exponent"),
    [
        ("USD", 2),
        ("EUR", 2),
        ("RUB", 2),
        ("HUF", 2),
        ("IDR", 2),
        ("JPY", 0),
        ("KRW", 0),
        ("VND", 0),
        ("CLP", 0),
        ("ISK", 0),
        ("XOF", 0),
        ("KWD", 3),
        ("BHD", 3),
        ("OMR", 3),
        ("JOD", 3),
        ("TND", 3),
        ("LYD", 3),
        ("IQD", 3),
    ],
)
def test_currency_carries_iso_minor_unit(code: str, exponent: int) -> None:
    assert currency(code) == Currency(code, exponent)


def test_currency_table_holds_only_upper_case_alpha3_codes() -> None:
    assert all(len(code) == 3 and code.isascii() and code.isupper() for code in CURRENCIES)
    assert all(cur.code == code for code, cur in CURRENCIES.items())


@pytest.mark.parametrize("code", ["usd", "Usd", "US", "USDD", "", " USD", "XXX", "ZZZ", "XAU"])
def test_currency_refuses_lower_case_malformed_and_unknown_codes(code: str) -> None:
    with pytest.raises(AmountError, match="ISO 4217"):
        currency(code)


def test_currency_is_immutable() -> None:
    with pytest.raises(AttributeError):
        USD.exponent = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "cur", "minor"),
    [
        ("10", USD, 1000),
        ("10.4", USD, 1040),
        ("10.42", USD, 1042),
        ("0.5", USD, 50),
        ("0.05", USD, 5),
        ("010.00", USD, 1000),
        ("0", USD, 0),
        ("0.00", USD, 0),
        ("500", JPY, 500),
        ("1.234", KWD, 1234),
        ("1.2", KWD, 1200),
        ("9999999999.99", USD, 999999999999),
    ],
)
def test_parse_amount_converts_major_units_exactly(text: str, cur: Currency, minor: int) -> None:
    assert parse_amount(text, cur) == minor


def test_parse_amount_is_exact_where_float_would_round() -> None:
    assert parse_amount("0.29", USD) == 29
    assert parse_amount("1.15", USD) == 115


@pytest.mark.parametrize(
    "text",
    [
        "",
        "+10",
        "-10",
        "1e3",
        "1E3",
        "1,00",
        "1 000",
        " 10",
        "10 ",
        "10\n",
        "1.",
        ".5",
        "1..0",
        "1.0.0",
        "abc",
        "0x10",
        "1_000",
        "\u0661\u0660",  # Arabic-Indic digits: isdigit() accepts them
        "\uff11\uff10",  # fullwidth digits
        "NaN",
        "Infinity",
    ],
)
def test_parse_amount_refuses_malformed_text(text: str) -> None:
    with pytest.raises(AmountError):
        parse_amount(text, USD)


@pytest.mark.parametrize("text", ["1.5", "1.0"])
def test_jpy_refuses_fraction_digits(text: str) -> None:
    with pytest.raises(AmountError, match="at most 0 fraction digits for JPY"):
        parse_amount(text, JPY)


def test_usd_refuses_third_fraction_digit() -> None:
    with pytest.raises(AmountError, match="at most 2 fraction digits"):
        parse_amount("1.234", USD)


def test_kwd_refuses_fourth_fraction_digit() -> None:
    with pytest.raises(AmountError):
        parse_amount("1.2345", KWD)


@pytest.mark.parametrize(("cur", "largest"), [(JPY, "1000000000000"), (USD, "10000000000.00"), (KWD, "1000000000.000")])
def test_the_largest_amount_is_a_trillion_minor_units_in_every_currency(cur: Currency, largest: str) -> None:
    assert parse_amount(largest, cur) == MAX_MINOR == 10**12


@pytest.mark.parametrize(
    ("cur", "text"),
    [(JPY, "1000000000001"), (USD, "10000000000.01"), (KWD, "1000000000.001"), (KWD, "999999999999999.999")],
)
def test_amount_above_the_largest_is_refused_naming_the_largest(cur: Currency, text: str) -> None:
    with pytest.raises(AmountError, match=f"at most {format_amount(MAX_MINOR, cur)} {cur.code}"):
        parse_amount(text, cur)


@pytest.mark.parametrize("text", ["1" * 5000, "0" * 40 + "1", "9" * 30 + ".99"])
def test_digit_strings_of_any_length_are_refused_without_converting_them(text: str) -> None:
    with pytest.raises(AmountError, match="at most"):
        parse_amount(text, USD)


def test_a_sum_of_a_million_largest_amounts_fits_64_bit_columns() -> None:
    assert 1_000_000 * MAX_MINOR < 2**63


@pytest.mark.parametrize(
    ("minor", "cur", "text"),
    [
        (1042, USD, "10.42"),
        (1000, USD, "10.00"),
        (5, USD, "0.05"),
        (0, USD, "0.00"),
        (500, JPY, "500"),
        (0, JPY, "0"),
        (1234, KWD, "1.234"),
        (1, KWD, "0.001"),
        (-1042, USD, "-10.42"),
        (-5, USD, "-0.05"),
    ],
)
def test_format_amount_prints_every_minor_digit(minor: int, cur: Currency, text: str) -> None:
    assert format_amount(minor, cur) == text


@pytest.mark.parametrize("cur", [USD, JPY, KWD])
@pytest.mark.parametrize("minor", [0, 1, 9, 10, 99, 100, 101, 1042, 123456789])
def test_format_amount_round_trips_through_parse_amount(minor: int, cur: Currency) -> None:
    assert parse_amount(format_amount(minor, cur), cur) == minor


def test_every_currency_has_its_own_three_digit_iso_numeric_code() -> None:
    codes = [numeric_code(cur) for cur in CURRENCIES.values()]
    assert all(len(code) == 3 and code.isdigit() for code in codes)
    assert len(set(codes)) == len(codes)
    assert NUMERIC.keys() == CURRENCIES.keys()


@pytest.mark.parametrize(
    ("code", "numeric"),
    [("EUR", "978"), ("USD", "840"), ("GBP", "826"), ("JPY", "392"), ("KWD", "414"), ("ALL", "008"),
     ("BYN", "933"), ("XCG", "532"), ("ZWG", "924"), ("VES", "928")],
)  # fmt: skip
def test_numeric_code_is_iso_4217s(code: str, numeric: str) -> None:
    assert numeric_code(currency(code)) == numeric
