"""Callback fields and the retry schedule."""

from __future__ import annotations

import hashlib

from kassa.domain.callbacks import REACHABLE, Outage, RetrySchedule, retry_delay_ms, signed, unreachable

SCHEDULE = RetrySchedule(base_seconds=15, factor=1.435, max_attempts=30)


def test_default_schedule_spreads_thirty_attempts_over_about_fourteen_days() -> None:
    delays = [retry_delay_ms(n, 15, 1.435) for n in range(1, 30)]
    assert delays == sorted(delays)
    assert 13 * 86400_000 <= sum(delays) <= 15 * 86400_000


def test_control_signs_status_orderid_and_client_orderid() -> None:
    fields = {"status": "approved", "orderid": "17", "client_orderid": "abc", "amount": "1.00"}
    expected = hashlib.sha1(b"approved17abckey", usedforsecurity=False).hexdigest()
    assert signed(fields, "key") == {**fields, "control": expected}


def test_a_destination_that_cannot_be_reached_is_probed_again_on_the_callback_schedule() -> None:
    outage = SCHEDULE.outage_after(REACHABLE, reached=False, started_ms=1_000, ended_ms=2_000)
    assert outage == Outage(failures=1, failed_at_ms=2_000, probe_at_ms=2_000 + 15_000)
    again = SCHEDULE.outage_after(outage, reached=False, started_ms=17_000, ended_ms=18_000)
    assert again == Outage(failures=2, failed_at_ms=18_000, probe_at_ms=18_000 + retry_delay_ms(2, 15, 1.435))


def test_attempts_in_flight_together_when_a_destination_fails_count_as_one_failure() -> None:
    outage = SCHEDULE.outage_after(REACHABLE, reached=False, started_ms=1_000, ended_ms=2_000)
    assert SCHEDULE.outage_after(outage, reached=False, started_ms=1_500, ended_ms=2_500) == outage


def test_an_answer_ends_the_outage_and_the_probes_never_wait_longer_than_the_last_retry() -> None:
    outage = Outage(failures=200, failed_at_ms=0, probe_at_ms=0)
    later = SCHEDULE.outage_after(outage, reached=False, started_ms=10, ended_ms=10)
    assert later.probe_at_ms == 10 + retry_delay_ms(29, 15, 1.435)
    assert SCHEDULE.outage_after(later, reached=True, started_ms=20, ended_ms=30) == REACHABLE


def test_no_answer_or_an_unavailable_server_counts_against_the_destination_other_answers_do_not() -> None:
    assert unreachable(None, "ConnectError") and unreachable(None, "timeout")
    assert unreachable(None, "refused: the address points to a private address")
    assert all(unreachable(status, None) for status in (429, 502, 503, 504))
    assert not unreachable(None, "unsendable URL: invalid port")  # all such URLs share one key
    assert not any(unreachable(status, None) for status in (200, 404, 500))


def test_a_callback_is_retried_after_its_delay_until_its_last_attempt() -> None:
    assert SCHEDULE.retry_at_ms(1, 5_000) == 5_000 + 15_000
    assert SCHEDULE.retry_at_ms(30, 5_000) is None
