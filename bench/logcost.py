"""What the request's log line costs: the call the pipeline makes for every request, with the handler a
deployment has (``kassa.logs.configure``, JSON lines to a file here), at INFO (the default) against
WARNING (the line skipped), in CPU time of the calling thread, best of several rounds, so that other
processes on the machine do not count. Each call is followed by a turn of the event loop, which writes
the lines of its turn together: one line a turn, the dearest case. A line through ``logging`` (any
other line: the worker's, the dispatcher's) is measured beside it. Run: ``python -m bench.logcost`` (it
configures this process's logging: ``python -m bench`` runs it as a process of its own)."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.server import pinned
from kassa import logs, randomness

TARGET_US = 5.0
_CALLS = 20_000
_ROUNDS = 7


@dataclass(frozen=True)
class LogCost:
    request_us: float  # the request line at INFO, less the same call at WARNING
    other_us: float  # a line through logging, at INFO

    def note(self) -> str:
        met = "met" if self.request_us <= TARGET_US else "missed"
        return (
            f"log line cost per request: {self.request_us:.1f} µs (at INFO, the default, over WARNING; "
            f"target <= {TARGET_US:g} µs: {met}); any other line, through logging and masked: "
            f"{self.other_us:.1f} µs"
        )


async def _per_call(call: Callable[[], None]) -> float:
    """Thread CPU µs of ``call`` and one turn of the event loop (which writes the request's line)."""
    best = float("inf")
    for _ in range(_ROUNDS):
        started = time.thread_time()
        for _ in range(_CALLS):
            call()
            await asyncio.sleep(0)
        best = min(best, time.thread_time() - started)
    return best / _CALLS * 1e6


async def measure() -> LogCost:
    serial = randomness.uuid4()
    worker = logging.getLogger("kassa.engine.worker")
    fields = {"order": 123456, "transaction": 234567, "stage": "approved", "worker": "worker-1"}

    def request() -> None:
        logs.log_request(serial, "sale", 200, time.perf_counter())

    def other() -> None:
        worker.info("transaction processed", extra=fields)

    with tempfile.TemporaryDirectory(prefix="kassa-logcost-") as tmp, open(Path(tmp) / "kassa.log", "w") as stream:
        logs.configure("INFO", stream)
        logs.serial_var.set(serial)
        at_info, other_at_info = await _per_call(request), await _per_call(other)
        logging.getLogger().setLevel(logging.WARNING)
        at_warning = await _per_call(request)
    return LogCost(max(at_info - at_warning, 0.0), max(other_at_info - at_warning, 0.0))


def in_own_process(core: int | None) -> str:
    """The note, measured by ``python -m bench.logcost`` on ``core``: configuring logging is for a
    process of its own."""
    root = str(Path(__file__).resolve().parent.parent)
    argv = pinned(core, [sys.executable, "-m", "bench.logcost"])
    done = subprocess.run(argv, env=dict(os.environ, PYTHONPATH=root), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"log line cost per request: not measured ({done.stderr.strip()[-500:]})"
    return done.stdout.strip()


def main() -> None:
    print(asyncio.run(measure()).note())


if __name__ == "__main__":
    main()
