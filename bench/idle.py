"""What an idle gateway costs: statements, transactions and CPU a second with nothing to do (docs/
performance.md, "Idle"). Two measures of the same idleness, on a fresh database of each backend:

- in process: the services ``kassa serve`` runs (one job worker, the callback dispatcher, the scheduler and
  the signal of other processes' work), statements counted at the driver, write units and commits as
  ``bench.stages`` counts them, CPU by ``time.process_time``;
- a real ``kassa serve``: its CPU from ``/proc`` and the claims its ``/metrics`` counts over the window.

Run: ``python -m bench.idle [--seconds 20]``."""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.stages import Counts, Tracer, _counting_writes
from kassa.runtime import build_services, run_workers
from kassa.settings import Settings
from kassa.storage.migrate import upgrade
from tests.ops.test_probes import scrape, value
from tests.support.databases import fresh_postgres
from tests.support.gateway import TEST_VAULT_KEY, Gateway

# The test gateway's settings that differ from the defaults an operator's process runs with.
_DEFAULTS = {"KASSA_POLL_INTERVAL": "0.2", "KASSA_OVERLOAD_JOB_AGE": "1", "KASSA_DB_THREADS": "16"}
_SETTLE = 3.0  # seconds after start: start-up's claims and the scheduler's first tick are not idleness


@contextmanager
def _database(backend: str, folder: Path) -> Iterator[str]:
    if backend == "postgresql":
        with fresh_postgres("kassa_idle", migrated=True) as url:
            yield url
        return
    url = f"sqlite:///{folder / 'idle.db'}"
    upgrade(url)
    yield url


async def _in_process(url: str, folder: Path, seconds: float) -> dict[str, float]:
    env = {**os.environ, **_DEFAULTS, "KASSA_DATABASE_URL": url, "KASSA_VAULT_KEY": TEST_VAULT_KEY}
    env["KASSA_DATA_DIR"] = str(folder)
    counts = Counts()
    tracer = Tracer(counts)  # statements at the driver: the prepared ones bypass SQLAlchemy's events
    services = build_services(Settings.from_env(env), 1)
    _counting_writes(services.db, tracer)
    stop = asyncio.Event()
    running = asyncio.create_task(run_workers(services, stop))
    await asyncio.sleep(_SETTLE)
    tracer.switch(True)
    cpu, started = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    elapsed = time.monotonic() - started
    tracer.switch(False)
    figures = {
        "statements": counts.statements / elapsed,
        "writes": counts.writes / elapsed,
        "commits": counts.commits / elapsed,
        "cpu_ms": (time.process_time() - cpu) * 1000 / elapsed,
    }
    stop.set()
    await running
    services.db.close()
    return figures


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _claims(gateway: Gateway) -> float:
    samples = scrape(gateway)
    return sum(value(samples, "kassa_queue_claims_total", consumer=kind) for kind in ("worker", "callbacks"))


def _served(url: str, folder: Path, seconds: float) -> dict[str, float]:
    gateway = Gateway(url, folder, extra_env=_DEFAULTS).start()
    try:
        assert gateway.process is not None
        time.sleep(_SETTLE)
        claims, cpu, started = _claims(gateway), _cpu_seconds(gateway.process.pid), time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - started
        return {
            "claims": (_claims(gateway) - claims) / elapsed,
            "cpu_ms": (_cpu_seconds(gateway.process.pid) - cpu) * 1000 / elapsed,
        }
    finally:
        gateway.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    seconds = parser.parse_args().seconds
    print(f"idle, {seconds:g} s after {_SETTLE:g} s of start-up; per second")
    print(
        f"{'backend':<11} {'statements':>10} {'write units':>11} {'commits':>8} {'CPU ms':>7} | serve: claims, CPU ms"
    )
    for backend in ("sqlite", "postgresql"):
        with tempfile.TemporaryDirectory() as folder, _database(backend, Path(folder)) as url:
            inside = asyncio.run(_in_process(url, Path(folder), seconds))
            served = _served(url, Path(folder), seconds)
        print(
            f"{backend:<11} {inside['statements']:>10.1f} {inside['writes']:>11.1f} {inside['commits']:>8.1f}"
            f" {inside['cpu_ms']:>7.2f} | {served['claims']:>6.1f} {served['cpu_ms']:>7.2f}"
        )


if __name__ == "__main__":
    main()
