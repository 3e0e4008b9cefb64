"""``python -m bench.overload``: the gateway offered twice what it can finish, end to end (issue 30).

One ``kassa serve`` (the API and one job worker; every setting at its default, ``KASSA_OVERLOAD_JOB_AGE``
included) on a fresh database; sales with a ``server_callback_url`` sent at fixed rates by
``bench/openloop.py``; callbacks recorded by ``bench/receiver.py``. The server is pinned to core 0, the load
and the receiver to core 1, as in the end-to-end rows of ``python -m bench``.

1. Capacity (skipped with ``--capacity``): sales offered at ``--calibrate-rate`` for ``--calibrate-seconds``,
   more than the gateway finishes; the capacity is the rate of approved callbacks over the last two thirds
   of that run, the gateway saturated and refusing what it cannot finish.
2. On another fresh database, in one open-loop run: half the capacity for ``--before`` seconds, twice the
   capacity for ``--seconds``, half the capacity for ``--after`` seconds; then up to ``--grace`` seconds
   for the last callbacks.

Prints, per phase: offered and accepted per second, refused (503, code 11), anything else, and the p50 and
p99 of the accepted from request (when it was due) to its approved callback; the sales accepted with no
approved callback after the grace (lost); and the recovery: the seconds after the burst until the p99 of
a 1-second window (requests by when they were due) is back to normal, normal being the larger of 1.5
times the p99 before the burst and the 50 ms target of a healthy gateway. The machine's load average is
printed too: on a machine others share, the windows' p99 moves with their work.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import probe
from bench.bodies import MerchantKeys, callback_sale_bodies, write_lines
from bench.endtoend import ENV, CallbackReceiver, percentile
from bench.load import LoadResult
from bench.openloop import MARK, due_offsets
from bench.postgres import fresh_database
from bench.probe import CpuUse
from bench.scenarios import Row, bootstrap_merchant, say
from bench.server import PREFIX, KassaDeployment, Server, pinned

HEALTHY_P99_MS = 50.0
NORMAL_FACTOR = 1.5
# The one receiver stands for the receivers of many merchants: with the default limits (16 callbacks in
# flight to one host, 32 of one merchant) it would be the run's bottleneck, not the gateway's capacity.
ONE_RECEIVER_FOR_MANY = {"KASSA_CALLBACK_PER_HOST": "256", "KASSA_CALLBACK_PER_MERCHANT": "256"}


@dataclass(frozen=True)
class Phase:
    name: str
    rate: float
    seconds: float


@dataclass(frozen=True)
class Request:
    phase: str
    due: float  # CLOCK_MONOTONIC, shared with the receiver's arrival times
    answer_ms: float  # due to answered
    status: int
    order_id: str
    latency_ms: float | None  # due to approved callback; None when refused or lost


@dataclass(frozen=True)
class Run:
    requests: list[Request]
    burst_end: float
    socket_errors: int
    waited_s: float


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.overload", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="seconds of the burst at twice the capacity")
    parser.add_argument("--before", type=float, default=10, help="seconds at half the capacity before the burst")
    parser.add_argument("--after", type=float, default=20, help="seconds at half the capacity after the burst")
    parser.add_argument("--grace", type=float, default=30, help="seconds to wait for the last callbacks")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--capacity", type=float, default=0, help="sales/s the gateway finishes (default: measured)")
    parser.add_argument("--calibrate-rate", type=float, default=2000, help="sales/s offered to measure the capacity")
    parser.add_argument("--calibrate-seconds", type=float, default=9, help="seconds of the capacity run")
    parser.add_argument("--connections", type=int, default=100, help="connections of the load generator")
    return parser.parse_args(argv)


@contextlib.contextmanager
def gateway(backend: str, work_dir: Path, name: str) -> Iterator[tuple[Server, MerchantKeys]]:
    """``kassa serve`` on a fresh, migrated database of ``backend`` with one merchant."""
    with contextlib.ExitStack() as stack:
        data_dir = work_dir / name
        data_dir.mkdir()
        url = stack.enter_context(fresh_database()) if backend == "postgresql" else f"sqlite:///{data_dir}/kassa.db"
        deployment = KassaDeployment(url, data_dir)
        deployment.upgrade()
        merchant = bootstrap_merchant(deployment, f"overload-{name}")
        server = deployment.server(0 if probe.cores() >= 2 else None, name)
        server.env.update(ONE_RECEIVER_FOR_MANY)
        yield stack.enter_context(server), merchant


def run(
    server: Server, merchant: MerchantKeys, work_dir: Path, phases: Sequence[Phase], args: argparse.Namespace
) -> Run:
    """The phases in one open-loop run, then the wait for callbacks; every request with its outcome."""
    load_core = 1 if probe.cores() >= 2 else None
    receiver = CallbackReceiver(work_dir, load_core)
    planned = due_offsets([(p.rate, p.seconds) for p in phases])
    bodies, out = work_dir / f"bodies-{receiver.port}.txt", work_dir / f"answers-{receiver.port}.txt"
    write_lines(bodies, callback_sale_bodies(merchant, f"o{receiver.port}", len(planned), receiver.url))
    schedule = ",".join(f"{p.rate:.3f}:{p.seconds:g}" for p in phases)
    argv = [sys.executable, "-m", "bench.openloop", server.url, f"{PREFIX}/api/v2/sale/{merchant.endpoint_id}"]
    argv += [str(bodies), schedule, "0", str(args.connections), str(out)]
    seconds = sum(p.seconds for p in phases)
    done = subprocess.run(pinned(load_core, argv), env=ENV, capture_output=True, text=True, timeout=seconds + 300)
    line = next((x for x in done.stdout.splitlines() if x.startswith(MARK)), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"open-loop generator failed ({done.returncode}): {done.stderr[-2000:]}")
    answers = [row.split(" ") for row in out.read_text().splitlines()]
    accepted = sum(1 for a in answers if a[3] == "200")
    waited = receiver.wait_for(accepted, args.grace)
    arrivals: dict[str, float] = {}
    for arrived, _client_orderid, order_id, status in receiver.stop():
        if status == "approved":
            arrivals.setdefault(order_id, arrived)
    ends = list(_phase_ends(phases))
    start = float(answers[0][1]) - planned[int(answers[0][0])]
    requests = []
    for index, due, answered, status, order_id in answers:
        phase = phases[next(n for n, end in enumerate(ends) if int(index) < end)].name
        called_back = arrivals.get(order_id) if status == "200" else None
        latency = None if called_back is None else (called_back - float(due)) * 1000
        answer_ms = (float(answered) - float(due)) * 1000
        requests.append(Request(phase, float(due), answer_ms, int(status), order_id, latency))
    burst_end = start + sum(p.seconds for p in phases[:2])
    return Run(requests, burst_end, int(json.loads(line[len(MARK) :])["socket_errors"]), waited)


def _phase_ends(phases: Sequence[Phase]) -> Iterator[int]:
    """The index after the last request of each phase."""
    total = 0
    for p in phases:
        total += round(p.rate * p.seconds)
        yield total


def capacity(args: argparse.Namespace, work_dir: Path) -> float:
    say(f"capacity: {args.calibrate_rate:,.0f} sales/s offered for {args.calibrate_seconds:g} s")
    phase = Phase("capacity", args.calibrate_rate, args.calibrate_seconds)
    with gateway(args.backend, work_dir, "capacity") as (server, merchant):
        measured = run(server, merchant, work_dir, [phase], args)
    start = min(r.due for r in measured.requests)
    seconds = float(args.calibrate_seconds)
    since, until = start + seconds / 3, start + seconds
    called_back = [r.due + r.latency_ms / 1000 for r in measured.requests if r.latency_ms is not None]
    return sum(1 for arrived in called_back if since <= arrived < until) / (until - since)


def recovery(
    requests: Sequence[Request], burst_end: float, after: float, normal_ms: float
) -> tuple[float | None, list[float | None]]:
    """Seconds after the burst until the first 1-second window whose p99 is at most ``normal_ms`` (None: none
    within ``after``), and each window's p99 (None: the window accepted nothing)."""
    windows: list[list[float]] = [[] for _ in range(math.floor(after))]
    for r in requests:
        slot = math.floor(r.due - burst_end)
        if r.latency_ms is not None and 0 <= slot < len(windows):
            windows[slot].append(r.latency_ms)
    p99s = [percentile(sorted(w), 0.99) if w else None for w in windows]
    return next((float(n) for n, p99 in enumerate(p99s) if p99 is not None and p99 <= normal_ms), None), p99s


def table(run_: Run, phases: Sequence[Phase]) -> tuple[list[str], float]:
    """The table's lines, and the p99 of the phase before the burst."""
    lines = [
        "| phase | offered/s | accepted/s | refused (503) | other | lost | p50 ms | p99 ms | answer p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    before_p99 = 0.0
    for p in phases:
        mine = [r for r in run_.requests if r.phase == p.name]
        accepted = [r for r in mine if r.status == 200]
        latencies = sorted(r.latency_ms for r in accepted if r.latency_ms is not None)
        refused = sum(1 for r in mine if r.status == 503)
        other = len(mine) - len(accepted) - refused
        lost = len(accepted) - len(latencies)
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        if p is phases[0]:
            before_p99 = p99
        lines.append(
            f"| {p.name} ({p.seconds:g} s) | {p.rate:,.0f} | {len(accepted) / p.seconds:,.0f} | {refused:,} | {other:,}"
            f" | {lost:,} | {p50:,.1f} | {p99:,.1f} | {percentile(sorted(r.answer_ms for r in mine), 0.99):,.1f} |"
        )
    return lines, before_p99


@dataclass(frozen=True)
class Outcome:
    backend: str
    capacity: float
    given: bool  # the capacity was given, not measured
    phases: list[Phase]
    run: Run
    episodes: int  # of load shedding, from the server's log
    normal_ms: float
    recovered_s: float | None
    window_p99s: list[float | None]

    @property
    def accepted(self) -> list[Request]:
        return [r for r in self.run.requests if r.status == 200]

    @property
    def lost(self) -> int:
        return sum(1 for r in self.accepted if r.latency_ms is None)

    @property
    def refused(self) -> int:
        return sum(1 for r in self.run.requests if r.status == 503)


def measure(args: argparse.Namespace, work_dir: Path) -> Outcome:
    """The capacity (measured unless given), then the burst between its calmer phases, on ``args.backend``."""
    measured = args.capacity or capacity(args, work_dir)
    say(f"capacity {measured:,.0f} sales/s; the burst offers {2 * measured:,.0f}/s for {args.seconds:g} s")
    phases = [
        Phase("before", measured / 2, args.before),
        Phase("burst", 2 * measured, args.seconds),
        Phase("after", measured / 2, args.after),
    ]
    with gateway(args.backend, work_dir, f"overload-{args.backend}") as (server, merchant):
        outcome = run(server, merchant, work_dir, phases, args)
        episodes = server.log_path.read_text().count("load shedding started")
    _lines, before_p99 = table(outcome, phases)
    normal = max(NORMAL_FACTOR * before_p99, HEALTHY_P99_MS)
    recovered, p99s = recovery(outcome.requests, outcome.burst_end, args.after, normal)
    return Outcome(args.backend, measured, bool(args.capacity), phases, outcome, episodes, normal, recovered, p99s)


def summary(o: Outcome, after_s: float) -> list[str]:
    """What the table does not show: whether every accepted sale was called back, and the recovery."""
    shown = ", ".join("-" if p99 is None else f"{p99:,.0f}" for p99 in o.window_p99s[:12])
    when = f"{o.recovered_s:g} s" if o.recovered_s is not None else f"not within {after_s:g} s"
    return [
        f"accepted sales: {len(o.accepted):,}, all called back: {'yes' if not o.lost else f'no, {o.lost:,} lost'}"
        f" (waited {o.run.waited_s:.1f} s after the load; {o.run.socket_errors} socket errors)",
        f"the server's log: {o.episodes} episode(s) of load shedding",
        f"load average of the machine at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}",
        f"recovery: {when} after the burst until a 1-second window's p99 is at most {o.normal_ms:,.0f} ms"
        f" (1.5x the p99 before, at least {HEALTHY_P99_MS:.0f} ms); p99 of the windows after it, ms"
        f" (-: none accepted): {shown}",
    ]


def row(o: Outcome, after_s: float) -> Row:
    """The burst as a row of ``python -m bench``: accepted/s and the p50 and p99 to callback of its accepted
    sales; the lost, the refused and the recovery beside them; the phases' table among the notes."""
    burst = [r for r in o.run.requests if r.phase == "burst"]
    latencies = sorted(r.latency_ms for r in burst if r.latency_ms is not None)
    seconds = o.phases[1].seconds
    accepted = sum(1 for r in burst if r.status == 200)
    result = LoadResult(  # requests: the accepted, so that the rate is theirs
        requests=accepted,
        duration_s=seconds,
        p50_ms=percentile(latencies, 0.50),
        p99_ms=percentile(latencies, 0.99),
        p999_ms=percentile(latencies, 0.999),
        non_200=sum(1 for r in burst if r.status != 200),
        socket_errors=o.run.socket_errors,
        sent=len(burst),
        wraps=0,
        first_error="HTTP 503 (refused)" if o.refused else "",
        generator="open-loop",
        generator_cpu=0.0,
    )
    name = f"overload: 2x capacity ({2 * o.capacity:,.0f}/s for {seconds:g} s), {o.backend}"
    lines, _ = table(o.run, o.phases)
    facts = tuple(f"{name}: {line}" for line in (*lines, *summary(o, after_s)))
    return Row(
        name, result, 0, 0.0, CpuUse(0.0, 0.0, 0.0), kind="overload", backend=o.backend, lost=o.lost,
        facts=facts, refused=o.refused, recovery_s=o.recovered_s,
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="kassa-overload-") as tmp:
        o = measure(args, Path(tmp))
    lines, _ = table(o.run, o.phases)
    print(f"Overload on {args.backend}: capacity {o.capacity:,.0f} sales/s ({'given' if o.given else 'measured'})")
    print()
    print("\n".join(lines))
    print()
    for line in summary(o, args.after):
        print(f"- {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
