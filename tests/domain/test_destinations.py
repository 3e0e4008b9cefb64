from collections.abc import Callable, Mapping

import orjson
import pytest

from kassa.domain.destinations import (
    BankAccount,
    DestinationError,
    EWallet,
    Kind,
    Phone,
    bank_account,
    ewallet,
    kind_of,
    mask_account,
    mask_name,
    phone,
    trigger_digits,
    unsealed,
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
    assert (
        str(error) == "payout_method is required, or the fields of a card, bank account, e-wallet or phone destination"
    )


def test_a_bank_account_keeps_its_fields() -> None:
    form = {**BANK, "routing_number": "021000021", "bank_branch": "Main street", "bank_city": "Springfield"}
    assert bank_account(form) == BankAccount(
        number="40817810099910004312",
        bank_name="Example Bank",
        routing_number="021000021",
        bic=None,
        iban=None,
        holder_name="John Smith",
        extra={"bank_branch": "Main street", "bank_city": "Springfield"},
    )


def test_an_account_number_is_kept_without_its_spaces_and_hyphens() -> None:
    assert bank_account({**BANK, "account_number": "4081 7810-0999"}).number == "408178100999"


@pytest.mark.parametrize("number", ["4081781009991000431240817810099910004", "40817.810", "4081781009\u0669"])
def test_an_account_number_other_than_34_letters_and_digits_is_refused_naming_it(number: str) -> None:
    error = refusal(bank_account, {**BANK, "account_number": number})
    assert error.field == "account_number" and number not in str(error)


def test_a_bank_account_without_account_number_or_iban_is_refused_naming_account_number() -> None:
    error = refusal(bank_account, {**BANK, "account_number": ""})
    assert error.field == "account_number" and "iban" in str(error)


def test_an_iban_sent_alone_stands_in_for_the_account_number() -> None:
    account = bank_account({**BANK, "account_number": "", "iban": "gb82 west 1234 5698 7654 32"})
    assert account.number == account.iban == "GB82WEST12345698765432"


def test_an_iban_sent_with_an_account_number_leaves_the_account_number_as_sent() -> None:
    account = bank_account({**BANK, "iban": "DE89370400440532013000"})
    assert (account.number, account.iban) == ("40817810099910004312", "DE89370400440532013000")


@pytest.mark.parametrize("iban", ["GB82WEST12345698765432", "DE89370400440532013000", "DE89 3704 0044 0532 0130 00"])
def test_a_good_iban_is_kept_upper_case_without_spaces(iban: str) -> None:
    assert bank_account({**BANK, "iban": iban.lower()}).iban == iban.replace(" ", "")


@pytest.mark.parametrize("iban", ["GB83WEST12345698765432", "DE88370400440532013000", "GB28WEST12345698765432"])
def test_a_bad_iban_check_digit_is_refused_naming_iban(iban: str) -> None:
    error = refusal(bank_account, {**BANK, "iban": iban})
    assert (error.field, str(error)) == ("iban", "iban fails its check digits")


@pytest.mark.parametrize(
    "iban", ["GB82", "82WEST12345698765432", "GB82WEST1234569876543.", "GB82WEST1234569876543\u0662"]
)
def test_text_not_shaped_as_an_iban_is_refused_naming_iban(iban: str) -> None:
    error = refusal(bank_account, {**BANK, "iban": iban})
    assert error.field == "iban" and iban not in str(error)


def test_an_iban_of_the_wrong_length_for_its_country_is_refused_naming_iban() -> None:
    # Check digits recomputed for the shortened number, so only the German length (22) is wrong.
    error = refusal(bank_account, {**BANK, "iban": "DE5137040044053201300"})
    assert (error.field, str(error)) == ("iban", "iban does not have the length and layout of its country's IBANs")


@pytest.mark.parametrize(
    ("bic", "kept"), [("DEUTDEFF", "DEUTDEFF"), ("DEUTDEFF500", "DEUTDEFF500"), ("deut deff", "DEUTDEFF")]
)
def test_a_good_bic_is_kept_upper_case(bic: str, kept: str) -> None:
    assert bank_account({**BANK, "bank_bic": bic}).bic == kept


@pytest.mark.parametrize("bic", ["DEUTDEF", "DEUTDEFF5", "DEUTDEFF5000"])
def test_a_bic_of_other_than_8_or_11_characters_is_refused_naming_bank_bic(bic: str) -> None:
    error = refusal(bank_account, {**BANK, "bank_bic": bic})
    assert (error.field, str(error)) == ("bank_bic", "bank_bic must be 8 or 11 characters")


@pytest.mark.parametrize("bic", ["1EUTDEFF", "DEUTXXFF", "DEUT_EFF", "DEUTDEF\u00c4"])
def test_a_bic_out_of_swift_layout_is_refused_naming_bank_bic(bic: str) -> None:
    assert refusal(bank_account, {**BANK, "bank_bic": bic}).field == "bank_bic"


@pytest.mark.parametrize("routing", ["011000015", "021000021"])
def test_a_good_aba_routing_number_is_kept(routing: str) -> None:
    assert bank_account({**BANK, "routing_number": routing}).routing_number == routing


def test_a_bad_aba_check_digit_is_refused_naming_routing_number() -> None:
    error = refusal(bank_account, {**BANK, "routing_number": "011000016"})
    assert (error.field, str(error)) == ("routing_number", "routing_number fails its ABA check digit")


@pytest.mark.parametrize("routing", ["01100001", "0110000150", "01100001a", "\uff1011000015"])
def test_a_routing_number_of_other_than_9_digits_is_refused_naming_it(routing: str) -> None:
    error = refusal(bank_account, {**BANK, "routing_number": routing})
    assert (error.field, str(error)) == ("routing_number", "routing_number must be 9 digits")


def test_the_holder_is_the_customer_when_account_name_is_not_sent() -> None:
    form = {**BANK, "account_name": "", "first_name": "Jane", "last_name": "Doe"}
    assert bank_account(form).holder_name == "Jane Doe"


def test_a_bank_account_may_name_no_holder_as_spec_mds_own_v4_example_does() -> None:
    assert bank_account({**BANK, "account_name": ""}).holder_name == ""


@pytest.mark.parametrize("kind", [Kind.BANK, Kind.EWALLET, Kind.PHONE])
def test_a_destination_comes_back_from_the_fields_it_was_stored_with(kind: Kind) -> None:
    destination = {Kind.BANK: bank_account, Kind.EWALLET: ewallet, Kind.PHONE: phone}[kind](FORMS[kind])
    assert unsealed(kind, orjson.loads(orjson.dumps(destination))) == destination


def test_a_bank_account_without_bank_name_is_refused_naming_it() -> None:
    assert refusal(bank_account, {**BANK, "bank_name": ""}).field == "bank_name"


def test_an_ewallet_keeps_its_type_and_wallet() -> None:
    assert ewallet(EWALLET) == EWallet("paypal", "john@example.com")


@pytest.mark.parametrize("missing", ["ewallet_type", "ewallet_wallet"])
def test_an_ewallet_without_a_field_is_refused_naming_it(missing: str) -> None:
    assert refusal(ewallet, {**EWALLET, missing: ""}).field == missing


@pytest.mark.parametrize(
    ("text", "number"),
    [("+447911123456", "+447911123456"), ("+14155552671", "+14155552671"), ("+44 7911 123-456", "+447911123456")],
)
def test_a_valid_phone_number_is_kept_in_e164_form(text: str, number: str) -> None:
    assert phone({**PHONE, "receiver_phone": text}) == Phone(number, "BANK01", "John Smith")


@pytest.mark.parametrize(
    "text",
    [
        "07911123456",  # no country code: no country to read it in
        "447911123456",
        "+1415555",  # too short for the North American plan
        "+999123456789",  # no such country code
        "+1 800 FLOWERS",
        "+447911123456 ext 12",
        "+(44) 7911 123456",
        "+\u0664\u06647911123456",  # Arabic-Indic digits, which phonenumbers would read
        "+44--7911123456",
    ],
)
def test_a_phone_number_not_valid_in_e164_form_is_refused_naming_receiver_phone(text: str) -> None:
    error = refusal(phone, {**PHONE, "receiver_phone": text})
    assert error.field == "receiver_phone"
    assert str(error) == "receiver_phone must be a valid phone number in E.164 form, such as +447911123456"


@pytest.mark.parametrize("missing", ["receiver_phone", "receiver_bank_id", "receiver_name"])
def test_a_phone_payout_without_a_field_is_refused_naming_it(missing: str) -> None:
    assert refusal(phone, {**PHONE, missing: ""}).field == missing


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


@pytest.mark.parametrize(
    ("field", "number"),
    [
        ("account_number", "40817810099910004312!"),
        ("iban", "GB83WEST12345698765432"),
        ("iban", "GB82WEST1234569876543"),
        ("routing_number", "011000016"),
    ],
)
def test_no_bank_account_refusal_contains_the_number(field: str, number: str) -> None:
    error = refusal(bank_account, {**BANK, field: number})
    assert error.field == field and number not in str(error) and number[-8:] not in str(error)


@pytest.mark.parametrize("number", ["+33612345", "+121255501", "0612345678"])
def test_no_phone_refusal_contains_the_number(number: str) -> None:
    error = refusal(phone, {**PHONE, "receiver_phone": number})
    assert number not in str(error) and number[-6:] not in str(error)


def test_no_kind_refusal_contains_the_card_number() -> None:
    assert CARD["credit_card_number"] not in str(refusal(kind_of, {**CARD, **BANK}))
