from collections.abc import Callable, Mapping

import pytest

from kassa.domain.destinations import (
    DestinationError,
    EWallet,
    Kind,
    ewallet,
    kind_of,
    mask_account,
    mask_name,
    trigger_digits,
)

CARD = {"credit_card_number": "4111111111111111", "expire_month": "12", "expire_year": "2030"}
BANK = {"account_number": "40817810099910004312", "bank_name": "Example Bank", "account_name": "John Smith"}
EWALLET = {"ewallet_type": "paypal", "ewallet_wallet": "john@example.com"}
PHONE = {"receiver_phone": "+447911123456", "receiver_bank_id": "BANK01", "receiver_name": "John Smith"}
FORMS = {Kind.CARD: CARD, Kind.BANK: BANK, Kind.EWALLET: EWALLET, Kind.PHONE: PHONE}


def refusal(build: Callable[[Mapping[str, str]], object], form: Mapping[str, str]) -> DestinationError:
    with pytest.raises(DestinationError) as caught:
        build(form)
    return caught.value


@pytest.mark.parametrize("kind", list(Kind))
def test_each_kind_is_recognised_from_its_fields(kind: Kind) -> None:
    assert kind_of(FORMS[kind]) is kind


@pytest.mark.parametrize("kind", list(Kind))
def test_each_kind_is_recognised_by_payout_method(kind: Kind) -> None:
    assert kind_of({**FORMS[kind], "payout_method": kind.value}) is kind


@pytest.mark.parametrize("name", ["destination-card-ref-id", "destination_card_ref_id"])
def test_a_card_reference_in_either_spelling_is_a_card_destination(name: str) -> None:
    assert kind_of({name: "1234567"}) is Kind.CARD


def test_the_customer_name_does_not_decide_the_kind() -> None:
    assert kind_of({**EWALLET, "first_name": "John", "last_name": "Smith"}) is Kind.EWALLET


def test_fields_sent_empty_do_not_decide_the_kind() -> None:
    assert kind_of({**EWALLET, "credit_card_number": "", "account_number": ""}) is Kind.EWALLET


def test_payout_method_alone_names_the_kind_whose_fields_are_then_missing() -> None:
    assert kind_of({"payout_method": "bank"}) is Kind.BANK


def test_fields_of_two_kinds_are_refused_naming_the_fields() -> None:
    error = refusal(kind_of, {**CARD, "iban": "DE89370400440532013000"})
    assert error.field == "iban"
    assert "credit_card_number" in str(error) and "iban" in str(error)


def test_fields_of_three_kinds_are_refused_naming_each_kind() -> None:
    message = str(refusal(kind_of, {"receiver_phone": "+447911123456", "bank_name": "B", "ewallet_type": "x"}))
    assert "bank (bank_name)" in message and "ewallet (ewallet_type)" in message and "phone (receiver_phone)" in message


def test_a_payout_method_contradicting_the_fields_is_refused_naming_them() -> None:
    error = refusal(kind_of, {**BANK, **CARD, "payout_method": "bank"})
    assert error.field == "credit_card_number"
    assert "payout_method is bank" in str(error) and "credit_card_number, expire_month, expire_year" in str(error)


def test_an_unknown_payout_method_is_refused_naming_payout_method() -> None:
    error = refusal(kind_of, {**BANK, "payout_method": "crypto"})
    assert error.field == "payout_method"
    assert str(error) == "payout_method must be one of card, bank, ewallet, phone"


def test_a_payout_without_destination_fields_is_refused_naming_payout_method() -> None:
    error = refusal(kind_of, {"amount": "10.00", "first_name": "John"})
    assert error.field == "payout_method"
    assert str(error) == "a payout needs a destination: card, bank account, e-wallet or phone fields"


def test_an_ewallet_keeps_its_type_and_wallet() -> None:
    assert ewallet(EWALLET) == EWallet("paypal", "john@example.com")


@pytest.mark.parametrize("missing", ["ewallet_type", "ewallet_wallet"])
def test_an_ewallet_without_a_field_is_refused_naming_it(missing: str) -> None:
    assert refusal(ewallet, {**EWALLET, missing: ""}).field == missing


@pytest.mark.parametrize(
    ("number", "digits"),
    [("4111111111111116", "116"), ("GB82 WEST 1234 5698 7654 32", "432"), ("+447911123456", "456"), ("12-34", "234")],
)
def test_the_sandbox_triggers_are_the_last_three_characters_of_the_number(number: str, digits: str) -> None:
    assert trigger_digits(number) == digits


@pytest.mark.parametrize(
    ("number", "masked"),
    [
        ("40817810099910004312", "****4312"),
        ("GB82 WEST 1234 5698 7654 32", "****5432"),
        ("12345678", "****5678"),
        ("123456", "****456"),
        ("1234", "****34"),
        ("1", "****"),
    ],
)
def test_an_account_mask_shows_at_most_the_last_four_and_half_of_a_short_number(number: str, masked: str) -> None:
    assert mask_account(number) == masked


@pytest.mark.parametrize("number", ["40817810099910004312", "DE89370400440532013000", "12345", "1234567"])
def test_an_account_mask_never_reveals_more_than_four_characters(number: str) -> None:
    shown = mask_account(number).lstrip("*")
    assert len(shown) <= min(4, len(number) // 2) and number.endswith(shown)


@pytest.mark.parametrize(
    ("name", "masked"), [("John Smith", "J*** S****"), ("  Ann   Lee ", "A** L**"), ("Élodie", "É*****"), ("J", "J")]
)
def test_a_name_mask_keeps_the_first_letter_of_each_word(name: str, masked: str) -> None:
    assert mask_name(name) == masked


def test_no_kind_refusal_contains_the_card_number() -> None:
    assert CARD["credit_card_number"] not in str(refusal(kind_of, {**CARD, **BANK}))
