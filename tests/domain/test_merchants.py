"""Endpoints and groups as the request path sees them."""

from __future__ import annotations

from dataclasses import replace

from kassa.domain.merchants import Endpoint, Merchant, Mode

SHOP = Merchant(1, "shop", "k" * 32, classic=False)
USD = Endpoint(7, SHOP, False, "USD", Mode.SANDBOX, False, "", None, None, False, True)


def test_an_endpoints_replay_window_is_its_own_in_milliseconds() -> None:
    assert USD.replay_window_ms == 0
    assert replace(USD, replay_window_seconds=60).replay_window_ms == 60_000


def test_a_group_call_takes_the_longest_replay_window_of_its_members() -> None:
    eur = replace(USD, id=8, currency="EUR", replay_window_seconds=600)
    group = Endpoint(9, SHOP, True, None, Mode.SANDBOX, False, "", None, None, False, True, (USD, eur))
    assert group.replay_window_ms == 600_000
