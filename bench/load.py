"""One load run: what to send, and what came back. The generator is wrk when available (see ``wrk.py``),
else the slower pure-Python generator of ``pyload.py``; both print the same ``BENCH_RESULT`` JSON line."""

from __future__ import annotations

import json
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

RESULT_MARK = "BENCH_RESULT "


@dataclass(frozen=True)
class LoadSpec:
    """POST every line of ``bodies`` in turn to ``url`` + ``path`` for ``duration`` seconds; ``headers`` is
    an optional file of extra request headers, one ``Name: value`` a line; an answer with another status
    than ``expected_status`` counts as an error."""

    url: str
    path: str
    bodies: Path
    duration: float
    connections: int
    core: int | None
    headers: Path | None = None
    expected_status: int = 200


@dataclass(frozen=True)
class LoadResult:
    requests: int
    duration_s: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    non_200: int
    socket_errors: int
    sent: int
    wraps: int
    first_error: str
    generator: str
    generator_cpu: float

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s else 0.0

    @property
    def errors(self) -> int:
        return self.non_200 + self.socket_errors


def parse_result(output: str, generator: str, generator_cpu: float) -> LoadResult:
    """The ``BENCH_RESULT {json}`` line of a generator's output, times in microseconds."""
    line = next((x for x in output.splitlines() if x.startswith(RESULT_MARK)), None)
    if line is None:
        raise RuntimeError(f"{generator} printed no result:\n{output[-3000:]}")
    data = json.loads(line[len(RESULT_MARK) :])
    return LoadResult(
        requests=int(data["requests"]),
        duration_s=data["duration_us"] / 1e6,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        p999_ms=data["p999_us"] / 1000,
        non_200=int(data["non_200"]),
        socket_errors=int(data["socket_errors"]),
        sent=int(data["sent"]),
        wraps=int(data["wraps"]),
        first_error=str(data["first_error"]),
        generator=generator,
        generator_cpu=generator_cpu,
    )


def run_generator(argv: list[str], generator: str, timeout: float, env: dict[str, str] | None = None) -> LoadResult:
    """Run a generator to completion; its CPU share is its (user + system) time over wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=env)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{generator} failed ({done.returncode}): {done.stderr[-2000:]}")
    return parse_result(done.stdout, generator, cpu / wall if wall else 0.0)
