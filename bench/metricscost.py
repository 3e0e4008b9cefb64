"""What the request's figures cost: the call the pipeline makes for every request
(``kassa.metrics.requests.record``: a count by operation, status and error code, and a latency
observation), in CPU time of the calling thread, best of several rounds so that other processes on the
machine do not count. Measured twice, each in a process of its own, since prometheus-client picks its
storage when first imported: one server process (values in memory), and ``--processes N`` (values in
memory-mapped files, added up at scrape time). Run: ``python -m bench.metricscost``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.server import pinned

TARGET_US = 5.0
_CALLS = 50_000
_ROUNDS = 7
# A realistic mix: a few operations, statuses and codes, so the label lookups are not all one hit.
_MIX = [("sale", 200, 0), ("status", 200, 0), ("sale", 400, 2), ("preauth", 200, 0), ("status", 401, 10)]


def per_call() -> float:
    from kassa import metrics

    record = metrics.requests.record
    calls = [_MIX[n % len(_MIX)] for n in range(_CALLS)]
    best = float("inf")
    for _ in range(_ROUNDS):
        started = time.thread_time()
        for operation, status, code in calls:
            record(operation, status, code, 0.0042)
        best = min(best, time.thread_time() - started)
    return best / _CALLS * 1e6


def _measured(core: int | None, multiprocess_dir: str | None) -> float | str:
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    if multiprocess_dir is not None:
        env["PROMETHEUS_MULTIPROC_DIR"] = multiprocess_dir
    argv = pinned(core, [sys.executable, "-m", "bench.metricscost", "--one"])
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"not measured ({done.stderr.strip()[-300:]})"
    return float(done.stdout)


def note(core: int | None = None) -> str:
    single = _measured(core, None)
    with tempfile.TemporaryDirectory(prefix="kassa-metricscost-") as folder:
        several = _measured(core, folder)
    figures = [f for f in (single, several) if isinstance(f, float)]
    met = "met" if len(figures) == 2 and max(figures) <= TARGET_US else "missed"
    shown = [f"{f:.1f} µs" if isinstance(f, float) else f for f in (single, several)]
    return (
        f"metrics cost per request: {shown[0]} in one server process, {shown[1]} with --processes "
        f"(memory-mapped values); target <= {TARGET_US:g} µs: {met}"
    )


def main() -> None:
    if sys.argv[1:] == ["--one"]:
        print(f"{per_call():.3f}")
        return
    print(note())


if __name__ == "__main__":
    main()
