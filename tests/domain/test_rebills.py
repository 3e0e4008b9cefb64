"""The amounts a rebill tries (CONTRACT §17's enumerate_amounts): each once, highest first, after its amount."""

from __future__ import annotations

from kassa.domain.rebills import kept, lower_amounts, next_amount


def test_the_lower_amounts_are_kept_once_each_highest_first_without_the_amount_itself() -> None:
    lower = lower_amounts([500, 1000, 800, 500], 1000)
    assert lower == (800, 500)
    assert kept(lower) == "800,500"
    assert kept(lower_amounts([1000], 1000)) is None


def test_after_a_decline_the_next_amount_is_the_highest_kept_below_it() -> None:
    assert next_amount("800,500", 1000) == 800
    assert next_amount("800,500", 800) == 500
    assert next_amount("800,500", 500) is None
    assert next_amount(None, 1000) is None
