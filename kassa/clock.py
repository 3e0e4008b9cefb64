"""The gateway's clock: every stored time is integer epoch milliseconds, taken here."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def date_time_text(ms: int) -> str:
    """Epoch milliseconds as the API writes a date (``2026-11-23T05:13:35Z``: UTC, to the second).
    Through ``time.gmtime``: a third of ``datetime``'s cost, and a status call writes one."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))
