"""The gateway's clock: every stored time is integer epoch milliseconds, taken here."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
