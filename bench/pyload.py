"""Fallback load generator for machines without wrk: asyncio (uvloop) over raw keep-alive sockets.
It is slower than wrk, so on a fast server it may be the bottleneck; the table says which one ran.

Run: ``python -m bench.pyload URL PATH BODIES DURATION CONNECTIONS [HEADERS|- [EXPECTED_STATUS]]``; prints one
``BENCH_RESULT`` line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import uvloop

from bench.http1 import form_post, read_response
from bench.load import RESULT_MARK, LoadResult, LoadSpec, run_generator
from bench.server import pinned


@dataclass
class Tally:
    bodies: list[bytes]
    expected: int = 200
    latencies_us: list[float] = field(default_factory=list)
    sent: int = 0
    wraps: int = 0
    non_200: int = 0
    socket_errors: int = 0
    first_error: str = ""

    def next_body(self) -> bytes:
        if self.sent and self.sent % len(self.bodies) == 0:
            self.wraps += 1
        body = self.bodies[self.sent % len(self.bodies)]
        self.sent += 1
        return body

    def record(self, status: int, body: bytes, started: float) -> None:
        self.latencies_us.append((time.perf_counter() - started) * 1e6)
        if status != self.expected:
            self.non_200 += 1
            self.first_error = self.first_error or f"{status} {body[:300].decode(errors='replace')}"


EXTRA_HEADERS = ""  # "Name: value\r\n" lines from the optional headers file


async def _connection(url: str, path: str, tally: Tally, deadline: float) -> None:
    parts = urlsplit(url)
    try:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    except OSError:
        tally.socket_errors += 1
        return
    try:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            writer.write(form_post(parts.netloc, path, tally.next_body(), EXTRA_HEADERS))
            status, body = await read_response(reader)
            tally.record(status, body, started)
    except (OSError, asyncio.IncompleteReadError):
        tally.socket_errors += 1
    finally:
        writer.close()


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else 0.0


async def _run(
    url: str, path: str, bodies: list[bytes], duration: float, connections: int, expected: int
) -> dict[str, object]:
    tally = Tally(bodies, expected)
    started = time.perf_counter()
    deadline = started + duration
    await asyncio.gather(*(_connection(url, path, tally, deadline) for _ in range(connections)))
    ordered = sorted(tally.latencies_us)
    return {
        "requests": len(ordered),
        "duration_us": (time.perf_counter() - started) * 1e6,
        "p50_us": _percentile(ordered, 0.50),
        "p99_us": _percentile(ordered, 0.99),
        "p999_us": _percentile(ordered, 0.999),
        "non_200": tally.non_200,
        "socket_errors": tally.socket_errors,
        "sent": tally.sent,
        "wraps": tally.wraps,
        "first_error": tally.first_error,
    }


def run_pyload(spec: LoadSpec) -> LoadResult:
    argv = [sys.executable, "-m", "bench.pyload", spec.url, spec.path, str(spec.bodies)]
    argv += [str(spec.duration), str(spec.connections)]
    argv += ["-" if spec.headers is None else str(spec.headers), str(spec.expected_status)]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    return run_generator(pinned(spec.core, argv), "python", timeout=spec.duration + 120, env=env)


def main() -> None:
    global EXTRA_HEADERS
    url, path, bodies_file, duration, connections = sys.argv[1:6]
    if len(sys.argv) > 6 and sys.argv[6] != "-":
        EXTRA_HEADERS = "".join(f"{line}\r\n" for line in Path(sys.argv[6]).read_text().splitlines() if line)
    expected = int(sys.argv[7]) if len(sys.argv) > 7 else 200
    bodies = Path(bodies_file).read_bytes().splitlines()
    result = uvloop.run(_run(url, path, bodies, float(duration), int(connections), expected))
    print(RESULT_MARK + json.dumps(result))


if __name__ == "__main__":
    main()
