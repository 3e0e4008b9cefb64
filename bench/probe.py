"""CPU use during a load run: the server process sampled in the background, and snapshots of the whole
machine and of the PostgreSQL backends, so a run disturbed by other work on the machine shows it."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class CpuSampler:
    """Samples ``cpu_seconds()`` every ``interval``; ``share()`` is the CPU used per wall second over the
    middle of the run (the first quarter and last tenth are dropped: generator start-up and wind-down)."""

    def __init__(self, cpu_seconds: Callable[[], float], interval: float = 0.2) -> None:
        self._cpu_seconds = cpu_seconds
        self._interval = interval
        self._samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-cpu-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._samples.append((time.monotonic(), self._cpu_seconds()))
            except OSError:  # the process is gone
                return
            self._stop.wait(self._interval)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def share(self) -> float:
        count = len(self._samples)
        if count < 3:
            return 0.0
        first, last = self._samples[count // 4], self._samples[count - 1 - count // 10]
        wall = last[0] - first[0]
        return (last[1] - first[1]) / wall if wall > 0 else 0.0


def cores() -> int:
    """The cores the bench may use (``nproc``): what the machine's limits are counted in."""
    return len(os.sched_getaffinity(0))


def machine_busy_seconds() -> float:
    """CPU time every core of the machine spent on anything but idling, so far (/proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def process_cpu_seconds(pid: int | str) -> float:
    """User plus system CPU time of every thread of one process so far."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def processes_cpu_seconds(pids: Sequence[int]) -> float:
    """CPU time so far of the processes in ``pids`` that are still alive."""
    total = 0.0
    for pid in pids:
        try:
            total += process_cpu_seconds(pid)
        except OSError:  # gone meanwhile
            continue
    return total


@dataclass(frozen=True)
class CpuSnapshot:
    at: float
    machine: float
    server: float
    postgres: float

    @classmethod
    def take(cls, server_cpu_seconds: float, postgres_pids: Sequence[int]) -> CpuSnapshot:
        """Now; ``server_cpu_seconds`` is the server's CPU time so far (all its processes), ``postgres_pids``
        are the PostgreSQL backends serving it."""
        return cls(time.monotonic(), machine_busy_seconds(), server_cpu_seconds, processes_cpu_seconds(postgres_pids))


@dataclass(frozen=True)
class CpuUse:
    """Cores used over a run (1.0 = one core busy all the time) by the server, its PostgreSQL backends,
    and the rest of the machine once the load generator's share is taken out."""

    server: float
    postgres: float
    others: float

    @classmethod
    def between(cls, start: CpuSnapshot, end: CpuSnapshot, generator: float) -> CpuUse:
        wall = end.at - start.at
        if wall <= 0:
            return cls(0.0, 0.0, 0.0)
        server = (end.server - start.server) / wall
        postgres = (end.postgres - start.postgres) / wall
        others = (end.machine - start.machine) / wall - server - postgres - generator
        return cls(server, postgres, max(0.0, others))


def wait_until_quiet(
    timeout: float, threshold: float = 0.15, window: float = 1.0, own: Callable[[], float] = lambda: 0.0
) -> float:
    """Wait (at most ``timeout`` s) for a ``window`` in which the machine, apart from the CPU time counted
    by ``own``, uses less than ``threshold`` of a core; returns the cores so used in the last window."""
    deadline = time.monotonic() + timeout
    while True:
        before = machine_busy_seconds() - own()
        time.sleep(window)
        busy = (machine_busy_seconds() - own() - before) / window
        if busy < threshold or time.monotonic() >= deadline:
            return busy
