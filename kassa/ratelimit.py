"""Request rate limits per client address and per merchant (CONTRACT §12, code 11).

Each limit is a GCRA (the generic cell rate algorithm, a token bucket kept as one number per key): a key
may send ``burst`` requests at once and then ``rate`` a second; a refused request costs nothing, so a
client that keeps knocking is let in as soon as its budget allows. Times come from ``kassa.clock``, so a
test gateway's moved clock refills budgets without sleeping. The state is this process's alone: with
``kassa serve --processes N`` a client whose connections land on several processes gets up to N times
the limit (README, *Limits and timeouts*).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kassa import clock

if TYPE_CHECKING:
    from kassa.settings import Settings

# Keys live only while their budget is not full again (at most burst / rate seconds after their last
# request), so a sweep of the finished ones keeps the table small; this bounds it against a flood from
# ever new addresses.
DEFAULT_MAX_KEYS = 100_000


class RateLimiter:
    """GCRA: per key, the theoretical arrival time ``tat`` of its next request, in epoch ms. A request at
    ``now`` is admitted when ``tat`` is at most ``burst`` intervals ahead of ``now`` after adding its own."""

    def __init__(self, rate: float, burst: int, *, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        self._interval_ms = 1000.0 / rate
        self._tolerance_ms = self._interval_ms * burst
        self._max_keys = max_keys
        self._tat: dict[object, float] = {}

    def wait_ms(self, key: object, now_ms: int) -> int:
        """0 when the request is admitted (and counted); else how long until it would be, in ms (≥ 1)."""
        tat = self._tat.get(key, now_ms)
        next_tat = (tat if tat > now_ms else now_ms) + self._interval_ms
        late = next_tat - now_ms - self._tolerance_ms
        if late > 0:
            return max(1, int(late + 0.999))
        self._tat[key] = next_tat
        if len(self._tat) > self._max_keys:
            self._sweep(now_ms)
        return 0

    def _sweep(self, now_ms: int) -> None:
        """Forgets keys whose budget is full again (the same as never seen). If a flood of live keys leaves
        the table more than half full, it starts afresh: every key gets a full burst once more, which is
        milder than running out of memory, and the sweeps stay rare whatever the flood."""
        self._tat = {key: tat for key, tat in self._tat.items() if tat > now_ms}
        if len(self._tat) > self._max_keys // 2:
            self._tat.clear()

    def __len__(self) -> int:
        return len(self._tat)


def address_key(host: str) -> str:
    """The key of a client address: itself for IPv4 (an IPv4-mapped IPv6 address is its IPv4), its /64
    for IPv6, where one subscriber gets a whole /64 and could otherwise rotate through it. By the socket
    module's parser: ``ipaddress`` took 70 µs for the same."""
    if ":" not in host:
        return host
    try:
        packed = socket.inet_pton(socket.AF_INET6, host)
    except OSError:
        return host
    if packed[:12] == _IPV4_MAPPED:
        return socket.inet_ntop(socket.AF_INET, packed[12:])
    return socket.inet_ntop(socket.AF_INET6, packed[:8] + bytes(8)) + "/64"


_IPV4_MAPPED = bytes(10) + b"\xff\xff"


@dataclass(frozen=True, slots=True)
class Limits:
    """The process's limits; either may be off (None)."""

    addresses: RateLimiter | None
    merchants: RateLimiter | None

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            _limiter(settings.address_rate, settings.address_burst),
            _limiter(settings.merchant_rate, settings.merchant_burst),
        )

    def address_wait_ms(self, host: str | None) -> int:
        if self.addresses is None or host is None:
            return 0
        return self.addresses.wait_ms(address_key(host), clock.now_ms())

    def merchant_wait_ms(self, merchant_id: int) -> int:
        if self.merchants is None:
            return 0
        return self.merchants.wait_ms(merchant_id, clock.now_ms())


def _limiter(rate: float, burst: int) -> RateLimiter | None:
    return RateLimiter(rate, burst) if rate > 0 else None


def retry_after(wait_ms: int) -> str:
    """``Retry-After`` in whole seconds (RFC 9110 §10.2.3), rounded up: asking back sooner is refused."""
    return str(-(-wait_ms // 1000))
