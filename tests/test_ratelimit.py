"""The rate limiter (kassa/ratelimit.py): GCRA on the gateway's clock, a key per client address (an IPv6
client's /64) or merchant, memory bounded whatever the number of keys."""

from __future__ import annotations

from kassa.ratelimit import Limits, RateLimiter, address_key
from kassa.settings import Settings

T0 = 1_700_000_000_000


def test_a_burst_is_admitted_at_once_and_the_next_request_waits_for_one_interval() -> None:
    limiter = RateLimiter(rate=10, burst=5)
    assert [limiter.wait_ms("a", T0) for _ in range(5)] == [0] * 5
    assert limiter.wait_ms("a", T0) == 100
    assert limiter.wait_ms("a", T0 + 99) == 1
    assert limiter.wait_ms("a", T0 + 100) == 0


def test_a_refused_request_does_not_use_up_the_budget() -> None:
    limiter = RateLimiter(rate=1, burst=1)
    assert limiter.wait_ms("a", T0) == 0
    for _ in range(100):
        assert limiter.wait_ms("a", T0 + 500) == 500
    assert limiter.wait_ms("a", T0 + 1000) == 0


def test_a_steady_client_at_the_rate_is_never_refused() -> None:
    limiter = RateLimiter(rate=50, burst=1)
    assert all(limiter.wait_ms("a", T0 + 20 * n) == 0 for n in range(1000))


def test_keys_have_budgets_of_their_own() -> None:
    limiter = RateLimiter(rate=1, burst=2)
    assert [limiter.wait_ms("a", T0) for _ in range(3)] == [0, 0, 1000]
    assert [limiter.wait_ms("b", T0) for _ in range(3)] == [0, 0, 1000]


def test_an_idle_key_gets_its_whole_burst_back() -> None:
    limiter = RateLimiter(rate=2, burst=4)
    for _ in range(4):
        limiter.wait_ms("a", T0)
    assert [limiter.wait_ms("a", T0 + 60_000) for _ in range(5)] == [0, 0, 0, 0, 500]


def test_memory_stays_bounded_when_every_request_comes_from_a_new_address() -> None:
    limiter = RateLimiter(rate=1, burst=1, max_keys=1000)
    for n in range(100_000):
        limiter.wait_ms(f"10.{n >> 16}.{(n >> 8) & 255}.{n & 255}", T0 + n)
    assert len(limiter) <= 1000


def test_an_ipv6_client_is_limited_by_its_slash_64_and_an_ipv4_client_by_its_address() -> None:
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::2") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("::ffff:198.51.100.7") == address_key("198.51.100.7") == "198.51.100.7"
    assert address_key("not an address") == "not an address"  # a proxy's odd X-Forwarded-For still counts


def test_limits_are_off_when_their_rate_is_zero_and_the_merchant_limit_is_off_by_default() -> None:
    limits = Limits.from_settings(Settings.from_env({}))
    assert limits.addresses is not None and limits.merchants is None
    off = Limits.from_settings(Settings.from_env({"KASSA_ADDRESS_RATE": "0"}))
    assert off.address_wait_ms("198.51.100.7") == 0
    assert off.merchant_wait_ms(1) == 0
