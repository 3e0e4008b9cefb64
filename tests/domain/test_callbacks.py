"""Callback fields and the retry schedule."""

from __future__ import annotations

import hashlib

from kassa.domain.callbacks import retry_delay_ms, signed


def test_default_schedule_spreads_thirty_attempts_over_about_fourteen_days() -> None:
    delays = [retry_delay_ms(n, 15, 1.435) for n in range(1, 30)]
    assert delays == sorted(delays)
    assert 13 * 86400_000 <= sum(delays) <= 15 * 86400_000


def test_control_signs_status_orderid_and_client_orderid() -> None:
    fields = {"status": "approved", "orderid": "17", "client_orderid": "abc", "amount": "1.00"}
    expected = hashlib.sha1(b"approved17abckey", usedforsecurity=False).hexdigest()
    assert signed(fields, "key") == {**fields, "control": expected}
