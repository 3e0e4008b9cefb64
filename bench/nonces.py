"""Where the vault's nonces come from, measured: ``os.urandom`` against ``kassa.randomness`` (blocks of
``os.urandom``), drawn as a sale draws them (two 12-byte nonces between about 100 µs of the event loop's
own Python work) while a thread like the database writer keeps inserting rows into SQLite. ``os.urandom``
lets go of the interpreter lock for its system call and the busy thread takes it; the pool makes one such
call per 4 KiB. Prints the median, mean and 99th percentile of a pair of draws, alone and beside the writer.
Run: ``python -m bench.nonces [seconds]``."""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable

from kassa import randomness

_NONCE = 12
_ROWS = 20  # a writer's unit: Python work building the rows, then sqlite3 (which lets go of the lock)


def _writer(stop: threading.Event) -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT)")
    while not stop.is_set():
        db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [(None, "x" * 50, "y" * 80, str(n)) for n in range(_ROWS)])
        db.execute("DELETE FROM t")
    db.close()


def _pairs(draw: Callable[[int], bytes], seconds: float) -> str:
    taken: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(n * n for n in range(800))  # the request's own work, about 100 µs
        started = time.perf_counter()
        draw(_NONCE)
        draw(_NONCE)
        taken.append(time.perf_counter() - started)
    taken.sort()
    mean = sum(taken) / len(taken)
    median, p99 = taken[len(taken) // 2], taken[len(taken) * 99 // 100]
    return f"median {median * 1e6:.1f} µs, mean {mean * 1e6:.1f} µs, p99 {p99 * 1e6:.1f} µs"


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    sources = {"os.urandom": os.urandom, "kassa.randomness": randomness.token_bytes}
    for name, draw in sources.items():
        print(f"alone, {name}: two nonces {_pairs(draw, seconds)}")
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(stop,))
    writer.start()
    try:
        for name, draw in sources.items():
            print(f"beside a busy writer thread, {name}: two nonces {_pairs(draw, seconds)}")
    finally:
        stop.set()
        writer.join()


if __name__ == "__main__":
    main()
