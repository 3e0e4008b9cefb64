"""Where a live callback connects: only to public addresses on web ports, whatever its name answered when
it was checked (DNS rebinding). The only double is DNS itself: an event loop whose name lookups answer
as an attacker's name server would."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from kassa.engine.callbacks import courier
from kassa.storage.callbacks import Attempt

NAME = "rebinding.example"
PUBLIC = "93.184.215.14"  # a global address; no test connects to it
REFUSED = "refused: the address points to a private, loopback, link-local or reserved address"


class RebindingDns(asyncio.SelectorEventLoop):
    """Answers ``NAME`` with a public address to the first lookup and loopback to every later one, as a
    name with a zero TTL can; other names resolve as usual."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0

    async def getaddrinfo(self, host: Any, port: Any, **hints: Any) -> Any:
        if host != NAME:
            return await super().getaddrinfo(host, port, **hints)
        self.lookups += 1
        address = PUBLIC if self.lookups == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, int(port)))]


def _attempt(target: str, live: bool) -> tuple[Attempt, int]:
    """One attempt at ``target`` as the dispatcher makes it, and how many lookups of ``NAME`` it made."""
    dns = RebindingDns()

    async def attempt() -> Attempt:
        async with courier(timeout_seconds=2, connections=4) as sender:
            return await sender.attempt(target, {"status": "approved"}, live)

    with asyncio.Runner(loop_factory=lambda: dns) as runner:
        return runner.run(attempt()), dns.lookups


def test_live_callback_is_refused_when_its_name_turns_to_loopback_after_passing_the_check() -> None:
    attempt, lookups = _attempt(f"http://{NAME}:8080/cb", live=True)
    assert (attempt.http_status, attempt.error) == (None, REFUSED)
    assert lookups >= 2  # the connection's own lookup was the one refused


def test_live_callback_on_another_port_is_refused_before_any_lookup() -> None:
    attempt, lookups = _attempt(f"http://{NAME}:9999/cb", live=True)
    assert (attempt.error, lookups) == ("refused: the address must use port 80, 443, 8080 or 8443", 0)


def test_live_callback_to_a_loopback_address_is_refused() -> None:
    attempt, _ = _attempt("http://127.0.0.1:8080/cb", live=True)
    assert attempt.error == REFUSED
