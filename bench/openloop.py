"""Open-loop load at a fixed rate (wrk cannot do that and Debian has no wrk2): request *i* is due at
``start + i / rate`` whatever happened to the ones before, so a slow server cannot slow the load down
and hide its own stalls (coordinated omission); latencies are taken from the due time, not the send.

Keep-alive connections take the next due request as soon as they are free; when all are busy the
request goes out late and its latency includes the wait. Times are ``time.monotonic()``
(CLOCK_MONOTONIC, shared by every process of the machine, so the callback receiver's arrival times
compare with them).

Run: ``python -m bench.openloop URL PATH BODIES RATE DURATION CONNECTIONS OUT``. RATE may also be phases,
``RATE:SECONDS,RATE:SECONDS,...`` one after the other (DURATION is then their sum, and ignored). Writes one
line per request to OUT: ``index due answered http_status paynet_order_id``, and prints
``BENCH_OPENLOOP {json}``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import uvloop

from bench.http1 import form_post, read_response

MARK = "BENCH_OPENLOOP "
START_DELAY = 0.3


@dataclass
class Plan:
    bodies: list[bytes]
    offsets: list[float]  # when each request is due, in seconds after ``start``
    start: float
    total: int
    due: itertools.count[int] = field(default_factory=itertools.count)
    records: list[tuple[int, float, float, int, str]] = field(default_factory=list)
    socket_errors: int = 0
    late_sends: int = 0


def _order_id(status: int, body: bytes) -> str:
    if status != 200:
        return "-"
    try:
        return str(orjson.loads(body).get("paynet-order-id") or "-")
    except orjson.JSONDecodeError:
        return "-"


async def _connection(url: str, path: str, plan: Plan) -> None:
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        while (index := next(plan.due)) < plan.total:
            due = plan.start + plan.offsets[index]
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            elif wait < -0.001:
                plan.late_sends += 1
            writer.write(form_post(parts.netloc, path, plan.bodies[index % len(plan.bodies)]))
            status, body = await read_response(reader)
            plan.records.append((index, due, time.monotonic(), status, _order_id(status, body)))
    except (OSError, asyncio.IncompleteReadError):
        plan.socket_errors += 1
    finally:
        writer.close()


async def run(url: str, path: str, plan: Plan, connections: int) -> float:
    """Returns the wall time from the first due request to the last answer."""
    await asyncio.gather(*(_connection(url, path, plan) for _ in range(connections)))
    return time.monotonic() - plan.start


def phases(rate: str, duration: str) -> list[tuple[float, float]]:
    """``RATE`` for ``DURATION`` seconds, or the phases ``RATE:SECONDS,...`` that RATE spells."""
    if ":" not in rate:
        return [(float(rate), float(duration))]
    return [(float(r), float(s)) for r, s in (phase.split(":") for phase in rate.split(","))]


def due_offsets(planned: list[tuple[float, float]]) -> list[float]:
    offsets: list[float] = []
    begins = 0.0
    for rate, seconds in planned:
        offsets += [begins + n / rate for n in range(round(rate * seconds))]
        begins += seconds
    return offsets


def main() -> None:
    url, path, bodies_file, rate, duration, connections, out = sys.argv[1:8]
    bodies = Path(bodies_file).read_bytes().splitlines()
    offsets = due_offsets(phases(rate, duration))
    plan = Plan(bodies, offsets, time.monotonic() + START_DELAY, min(len(bodies), len(offsets)))
    wall = uvloop.run(run(url, path, plan, int(connections)))
    with Path(out).open("w") as lines:
        for index, due, answered, status, order_id in plan.records:
            lines.write(f"{index} {due!r} {answered!r} {status} {order_id}\n")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary = {
        "planned": plan.total,
        "answered": len(plan.records),
        "wall_s": wall,
        "socket_errors": plan.socket_errors,
        "late_sends": plan.late_sends,
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }
    print(MARK + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
