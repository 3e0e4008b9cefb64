"""Risk rules as pure decisions: what each block list holds, what a velocity limit lets through, which
orders a rule's scope covers, and what an operator may type."""

from __future__ import annotations

import pytest

from kassa.domain import risk
from kassa.domain.risk import Kind, Mode, Per, Rule, RuleError, Sale, Velocity
from kassa.domain.transactions import TxType

CARD = "ab" * 32


def sale(**changes: object) -> Sale:
    values: dict[str, object] = dict(
        merchant_id=1,
        endpoint_id=10,
        amount=1000,
        currency="EUR",
        card_fingerprint=CARD,
        bin="411111",
        email="Buyer@Example.com",
        ip="203.0.113.7",
    )
    return Sale(**{**values, **changes})  # type: ignore[arg-type]


def block(kind: Kind, *entries: str, mode: Mode = Mode.ENFORCE, merchant_id: int | None = 1) -> Rule:
    return Rule(1, kind, mode, merchant_id=merchant_id, entries=risk.checked_entries(kind, entries))


def test_card_block_list_holds_the_card_by_fingerprint_only() -> None:
    rule = block(Kind.CARD, CARD)
    assert rule.listed(sale())
    assert not rule.listed(sale(card_fingerprint="cd" * 32))
    assert not rule.listed(sale(card_fingerprint=None))


def test_bin_block_list_holds_single_bins_and_ranges() -> None:
    rule = block(Kind.BIN, "411111", "520000-520099", "530000-530000")
    assert rule.listed(sale(bin="411111"))
    assert rule.listed(sale(bin="520000"))
    assert rule.listed(sale(bin="520050"))
    assert rule.listed(sale(bin="520099"))
    assert rule.listed(sale(bin="530000"))
    for outside in ("411112", "519999", "520100", "530001", "100000"):
        assert not rule.listed(sale(bin=outside)), outside


def test_overlapping_bin_ranges_hold_their_union() -> None:
    rule = block(Kind.BIN, "400000-400500", "400400-400900", "401000-401000")
    assert rule.listed(sale(bin="400700"))
    assert not rule.listed(sale(bin="400950"))


def test_email_block_list_ignores_case_and_spaces() -> None:
    rule = block(Kind.EMAIL, " buyer@EXAMPLE.com ")
    assert rule.listed(sale(email="BUYER@example.com"))
    assert not rule.listed(sale(email="other@example.com"))
    assert not rule.listed(sale(email=""))


def test_ip_block_list_holds_addresses_and_networks_of_both_families() -> None:
    rule = block(Kind.IP, "198.51.100.0/24", "203.0.113.7", "2001:db8::/32")
    assert rule.listed(sale(ip="198.51.100.200"))
    assert rule.listed(sale(ip="203.0.113.7"))
    assert rule.listed(sale(ip="2001:db8:1::5"))
    assert not rule.listed(sale(ip="198.51.101.1"))
    assert not rule.listed(sale(ip="203.0.113.8"))
    assert not rule.listed(sale(ip="2001:db9::1"))
    assert not rule.listed(sale(ip=None))
    assert not rule.listed(sale(ip="not-an-address"))


@pytest.mark.parametrize("sent", ["203.0.113.07", "203.0.113.7 ", "203.0.113.7\x00", "203.0.113", "0xcb.0.113.7"])
def test_an_ip_address_sent_malformed_is_on_no_list_even_one_that_reads_as_a_listed_address(sent: str) -> None:
    rule = block(Kind.IP, "203.0.113.0/24")
    assert not rule.listed(sale(ip=sent))


def test_a_rule_applies_to_its_merchant_or_its_endpoint_only() -> None:
    by_merchant = block(Kind.CARD, CARD)
    by_endpoint = Rule(2, Kind.CARD, Mode.ENFORCE, endpoint_id=10, entries=(CARD,))
    assert by_merchant.applies_to(sale()) and not by_merchant.applies_to(sale(merchant_id=2))
    assert by_endpoint.applies_to(sale()) and not by_endpoint.applies_to(sale(endpoint_id=11))
    assert risk.applicable([by_merchant, by_endpoint], sale(merchant_id=2)) == (by_endpoint,)


def test_a_rule_has_one_scope() -> None:
    with pytest.raises(RuleError, match="--merchant or --endpoint"):
        Rule(1, Kind.CARD, Mode.ENFORCE, merchant_id=1, endpoint_id=10)
    with pytest.raises(RuleError, match="--merchant or --endpoint"):
        Rule(1, Kind.CARD, Mode.ENFORCE)


def test_a_count_limit_lets_through_up_to_its_limit() -> None:
    rule = Rule(3, Kind.COUNT, Mode.ENFORCE, merchant_id=1, velocity=Velocity(Per.CARD, 5, 3_600_000))
    assert not risk.exceeds(rule, 4, sale())
    assert risk.exceeds(rule, 5, sale())


def test_a_sum_limit_counts_the_amount_being_opened() -> None:
    rule = Rule(4, Kind.SUM, Mode.ENFORCE, merchant_id=1, velocity=Velocity(Per.EMAIL, 5000, 86_400_000, "EUR"))
    assert not risk.exceeds(rule, 4000, sale(amount=1000))
    assert risk.exceeds(rule, 4000, sale(amount=1001))


def test_a_sum_limit_counts_its_currency_only() -> None:
    rule = Rule(4, Kind.SUM, Mode.ENFORCE, merchant_id=1, velocity=Velocity(Per.EMAIL, 5000, 86_400_000, "EUR"))
    assert risk.velocity_key(rule, sale()) == "buyer@example.com"
    assert risk.velocity_key(rule, sale(currency="USD")) is None


def test_a_velocity_key_is_missing_when_the_sale_has_nothing_to_count_by() -> None:
    rule = Rule(5, Kind.COUNT, Mode.ENFORCE, merchant_id=1, velocity=Velocity(Per.IP, 5, 3_600_000))
    assert risk.velocity_key(rule, sale()) == "203.0.113.7"
    assert risk.velocity_key(rule, sale(ip=None)) is None


def test_a_window_is_counted_in_twelve_buckets() -> None:
    hour = Velocity(Per.CARD, 5, 3_600_000)
    assert hour.bucket_ms == 300_000
    assert risk.bucket_of(hour, 1_000_123) == 900_000
    assert risk.window_start(hour, 1_000_123) == 900_000 - 11 * 300_000


def test_enforcing_list_filters_and_dry_run_lists_only_count() -> None:
    dry = Rule(1, Kind.CARD, Mode.DRY_RUN, merchant_id=1, entries=(CARD,))
    enforced = Rule(2, Kind.BIN, Mode.ENFORCE, merchant_id=1, entries=("411111",))
    assert risk.screen_lists([dry], sale()) == risk.Verdict(None, (dry,))
    assert risk.screen_lists([dry, enforced], sale()) == risk.Verdict(enforced, (dry,))
    assert risk.screen_lists([enforced], sale(bin="511111")) == risk.PASSED


def test_every_dry_run_list_holding_a_sale_counts_it_whichever_list_filters_it() -> None:
    first = Rule(1, Kind.BIN, Mode.ENFORCE, merchant_id=1, entries=("411111",))
    second = Rule(2, Kind.CARD, Mode.ENFORCE, merchant_id=1, entries=(CARD,))
    dry = Rule(3, Kind.IP, Mode.DRY_RUN, merchant_id=1, entries=("203.0.113.0/24",))
    assert risk.screen_lists([first, second, dry], sale()) == risk.Verdict(first, (dry,))


def test_error_codes_name_the_kind_outside_the_contracts_codes() -> None:
    codes = [int(code) for code in risk.ERROR_CODES.values()]
    assert len(set(codes)) == len(Kind)
    assert all(code >= 4000 for code in codes)


def test_error_message_names_the_limit_never_the_entry() -> None:
    listed = block(Kind.EMAIL, "buyer@example.com")
    assert "buyer" not in listed.error_message()
    assert listed.error_message() == "Refused by risk rule 1: the e-mail address is on a block list"
    limit = Rule(7, Kind.SUM, Mode.ENFORCE, endpoint_id=10, velocity=Velocity(Per.CARD, 50000, 86_400_000, "EUR"))
    assert limit.error_message() == "Refused by risk rule 7: more than 50000 EUR minor units per card in 1d"


@pytest.mark.parametrize(
    ("kind", "entry", "message"),
    [
        (Kind.CARD, "4111111111111111", "fingerprint"),
        (Kind.BIN, "41111", "6-digit BIN"),
        (Kind.BIN, "400099-400000", "6-digit BIN"),
        (Kind.EMAIL, "nobody", "e-mail"),
        (Kind.IP, "300.1.1.1", "IP address"),
    ],
)
def test_bad_entries_are_refused_naming_the_option(kind: Kind, entry: str, message: str) -> None:
    with pytest.raises(RuleError, match=f"--value.*{message}"):
        risk.checked_entries(kind, [entry])


def test_a_card_entry_is_never_quoted_back() -> None:
    with pytest.raises(RuleError) as refused:
        risk.checked_entries(Kind.CARD, ["4111111111111111"])
    assert "4111" not in str(refused.value)


def test_a_limit_needs_its_options() -> None:
    with pytest.raises(RuleError, match="--per"):
        risk.checked_velocity(Kind.COUNT, None, 5, "1h", None)
    with pytest.raises(RuleError, match="--limit"):
        risk.checked_velocity(Kind.COUNT, "card", 0, "1h", None)
    with pytest.raises(RuleError, match="--window"):
        risk.checked_velocity(Kind.COUNT, "card", 5, "1 hour", None)
    with pytest.raises(RuleError, match="--currency"):
        risk.checked_velocity(Kind.SUM, "card", 5, "1h", None)
    with pytest.raises(RuleError, match="--per, --limit"):
        risk.checked_velocity(Kind.BIN, "card", 5, "1h", None)
    assert risk.checked_velocity(Kind.SUM, "ip", 500, "7d", "eur") == Velocity(Per.IP, 500, 7 * 86_400_000, "EUR")


def test_windows_read_and_print_alike() -> None:
    assert risk.parse_window("30m") == 1_800_000
    assert risk.describe_window(risk.parse_window("24h")) == "1d"
    with pytest.raises(RuleError, match="at least 1m"):
        risk.parse_window("10s")


def test_ten_thousand_entries_are_looked_up_without_a_scan() -> None:
    entries = [f"{400000 + 2 * i:06d}-{400000 + 2 * i:06d}" for i in range(10_000)]
    rule = block(Kind.BIN, *entries)
    assert rule.listed(sale(bin="419998"))
    assert not rule.listed(sale(bin="419999"))


def three_ds(rule_id: int, amount: int, currency: str = "EUR", mode: Mode = Mode.ENFORCE) -> Rule:
    return Rule(rule_id, Kind.THREE_DS, mode, merchant_id=1, threshold=risk.Threshold(amount, currency))


def test_a_three_ds_rule_holds_a_cardholders_payment_above_its_amount_in_its_currency_only() -> None:
    rule = three_ds(8, 50000)
    assert risk.above_threshold([rule], sale(amount=50001, cardholder_payment=True)) == (rule,)
    assert risk.above_threshold([rule], sale(amount=50000, cardholder_payment=True)) == ()
    assert risk.above_threshold([rule], sale(amount=90000, currency="USD", cardholder_payment=True)) == ()
    assert risk.above_threshold([rule], sale(amount=90000, cardholder_payment=False)) == ()


def test_other_kinds_are_not_three_ds_rules() -> None:
    limit = Rule(4, Kind.SUM, Mode.ENFORCE, merchant_id=1, velocity=Velocity(Per.EMAIL, 5000, 86_400_000, "EUR"))
    assert risk.above_threshold([limit, block(Kind.BIN, "411111")], sale(amount=90000, cardholder_payment=True)) == ()


def test_sales_preauths_and_card_to_card_transfers_the_cardholder_makes_are_compared_and_nothing_else() -> None:
    assert risk.cardholder_payment(TxType.SALE, merchant_initiated=False)
    assert risk.cardholder_payment(TxType.PREAUTH, merchant_initiated=False)
    assert risk.cardholder_payment(TxType.TRANSFER, merchant_initiated=False)  # its source card is charged
    assert not risk.cardholder_payment(TxType.SALE, merchant_initiated=True)  # a rebill, a recurring charge
    for other in (TxType.PAYOUT, TxType.DEPOSIT_TRANSFER, TxType.ACCOUNT_VERIFICATION):
        assert not risk.cardholder_payment(other, merchant_initiated=False), other


def test_an_enforcing_three_ds_rule_mandates_a_challenge_and_dry_run_ones_alone_do_not() -> None:
    enforcing, dry = three_ds(8, 100), three_ds(9, 100, mode=Mode.DRY_RUN)
    assert risk.three_ds_mode([dry, enforcing]) is Mode.ENFORCE
    assert risk.three_ds_mode([dry]) is Mode.DRY_RUN
    assert risk.three_ds_mode([]) is None


def test_an_unauthenticated_payment_is_filtered_by_the_first_enforcing_rule_and_counted_by_dry_run_ones() -> None:
    first, second, dry = three_ds(8, 100), three_ds(5, 200), three_ds(9, 100, mode=Mode.DRY_RUN)
    assert risk.unauthenticated([first, dry, second]) == risk.Verdict(second, (dry,))
    assert risk.unauthenticated([dry]) == risk.Verdict(None, (dry,))


def test_a_three_ds_rules_message_names_its_amount() -> None:
    assert three_ds(8, 50000).error_message() == (
        "Refused by risk rule 8: 3-D Secure is required above 50000 EUR minor units"
        " and the card's issuer offered no authentication"
    )
    assert three_ds(8, 50000).error_code == "4201"


def test_a_three_ds_rule_needs_an_amount_and_a_known_currency() -> None:
    assert risk.checked_threshold(Kind.THREE_DS, 50000, " eur") == risk.Threshold(50000, "EUR")
    assert risk.checked_threshold(Kind.THREE_DS, 0, "JPY") == risk.Threshold(0, "JPY")
    with pytest.raises(RuleError, match="--amount"):
        risk.checked_threshold(Kind.THREE_DS, None, "EUR")
    with pytest.raises(RuleError, match="--amount"):
        risk.checked_threshold(Kind.THREE_DS, -1, "EUR")
    with pytest.raises(RuleError, match="--currency is required"):
        risk.checked_threshold(Kind.THREE_DS, 50000, None)
    with pytest.raises(RuleError, match="--currency: 'EUX'"):
        risk.checked_threshold(Kind.THREE_DS, 50000, "eux")
    with pytest.raises(RuleError, match="--amount is for a three-ds-above rule"):
        risk.checked_threshold(Kind.SUM, 50000, "EUR")
    assert risk.checked_threshold(Kind.SUM, None, "EUR") is None


def test_a_three_ds_rule_takes_a_currency_but_no_limit() -> None:
    assert risk.checked_velocity(Kind.THREE_DS, None, None, None, "EUR") is None
    with pytest.raises(RuleError, match="--per, --limit and --window are for limits"):
        risk.checked_velocity(Kind.THREE_DS, None, 5, None, "EUR")
    with pytest.raises(RuleError, match="--currency is for sum limits"):
        risk.checked_velocity(Kind.BIN, None, None, None, "EUR")
