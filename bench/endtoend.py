"""End to end: sales at a fixed rate (``bench/openloop.py``), each with a ``server_callback_url`` pointing at
a callback receiver in its own process (``bench/receiver.py``); the latency of a sale is the arrival of
its ``approved`` callback minus the time the sale was due to be sent. A sale answered 200 whose approved
callback has not arrived ``grace`` seconds after the load ended is *lost*."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.bodies import MerchantKeys, callback_sale_bodies, write_lines
from bench.load import LoadResult
from bench.openloop import MARK
from bench.probe import process_cpu_seconds
from bench.server import PREFIX, free_port, pinned

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


@dataclass(frozen=True)
class EndToEndSpec:
    rate: float
    duration: float
    grace: float
    connections: int
    core: int | None


@dataclass(frozen=True)
class EndToEndResult:
    load: LoadResult  # latencies: request due -> approved callback; rps: answers per second achieved
    planned: int
    accepted: int
    approved: int
    other_callbacks: int
    lost: int
    answer_p50_ms: float
    answer_p99_ms: float
    late_sends: int
    waited_s: float
    receiver_cpu_s: float  # CPU time of the callback receiver over its whole life


def percentile(ordered: Sequence[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else 0.0


class CallbackReceiver:
    """``bench/receiver.py`` as a subprocess: started, asked how many callbacks it has, stopped for its records."""

    def __init__(self, work_dir: Path, core: int | None) -> None:
        self.port = free_port()
        self.out = work_dir / f"callbacks-{self.port}.txt"
        argv = pinned(core, [sys.executable, "-m", "bench.receiver", str(self.port), str(self.out)])
        self.process = subprocess.Popen(argv, env=ENV, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "READY":
            raise RuntimeError("the callback receiver did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    def count(self) -> int:
        return int(httpx.get(f"http://127.0.0.1:{self.port}/_count", timeout=5).text)

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.process.pid)

    def wait_for(self, count: int, grace: float) -> float:
        """Waits up to ``grace`` s for ``count`` callbacks; returns the seconds waited."""
        started = time.monotonic()
        while self.count() < count and time.monotonic() - started < grace:
            time.sleep(0.1)
        return time.monotonic() - started

    def stop(self) -> list[tuple[float, str, str, str]]:
        """(arrival, client_orderid, orderid, status) of every callback received."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)
        records = []
        for line in self.out.read_text().splitlines():
            arrived, client_orderid, orderid, status = line.split(" ")
            records.append((float(arrived), client_orderid, orderid, status))
        return records


def run_endtoend(
    base_url: str, merchant: MerchantKeys, work_dir: Path, spec: EndToEndSpec, receiver: CallbackReceiver
) -> EndToEndResult:
    planned = round(spec.rate * spec.duration)
    bodies = work_dir / f"e2e-{receiver.port}.txt"
    write_lines(bodies, callback_sale_bodies(merchant, f"e2e-{receiver.port}", planned, receiver.url))
    out = work_dir / f"e2e-answers-{receiver.port}.txt"
    path = f"{PREFIX}/api/v2/sale/{merchant.endpoint_id}"
    argv = [sys.executable, "-m", "bench.openloop", base_url, path, str(bodies)]
    argv += [str(spec.rate), str(spec.duration), str(spec.connections), str(out)]
    done = subprocess.run(
        pinned(spec.core, argv), env=ENV, capture_output=True, text=True, timeout=spec.duration + 300, check=False
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith(MARK)), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"open-loop generator failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads(line[len(MARK) :])
    answers = [row.split(" ") for row in out.read_text().splitlines()]
    accepted = {a[4]: float(a[1]) for a in answers if a[3] == "200" and a[4] != "-"}  # orderid -> due
    answer_ms = sorted((float(a[2]) - float(a[1])) * 1000 for a in answers)
    waited = receiver.wait_for(len(accepted), spec.grace)
    receiver_cpu = receiver.cpu_seconds()
    arrivals: dict[str, float] = {}
    other = 0
    for arrived, _client_orderid, orderid, status in receiver.stop():
        if status == "approved":
            arrivals.setdefault(orderid, arrived)
        else:
            other += 1
    latencies = sorted((arrivals[o] - due) * 1000 for o, due in accepted.items() if o in arrivals)
    non_200 = sum(1 for a in answers if a[3] != "200")
    first_error = next((f"HTTP {a[3]}" for a in answers if a[3] != "200"), "")
    wall = float(summary["wall_s"])
    load = LoadResult(
        requests=len(answers),
        duration_s=wall,
        p50_ms=percentile(latencies, 0.50),
        p99_ms=percentile(latencies, 0.99),
        p999_ms=percentile(latencies, 0.999),
        non_200=non_200,
        socket_errors=int(summary["socket_errors"]),
        sent=len(answers),
        wraps=0,
        first_error=first_error,
        generator="open-loop",
        generator_cpu=float(summary["cpu_s"]) / wall if wall else 0.0,
    )
    return EndToEndResult(
        load=load,
        planned=planned,
        accepted=len(accepted),
        approved=len(latencies),
        other_callbacks=other,
        lost=len(accepted) - len(latencies),
        answer_p50_ms=percentile(answer_ms, 0.50),
        answer_p99_ms=percentile(answer_ms, 0.99),
        late_sends=int(summary["late_sends"]),
        waited_s=waited,
        receiver_cpu_s=receiver_cpu,
    )
