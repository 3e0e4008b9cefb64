"""Isolation (issue 30): a healthy merchant's sales end to end while another merchant has ``queued`` callbacks
waiting for a receiver that is dead, against the same run with none queued.

Three runs, each on a fresh database with a fresh ``kassa serve`` (server pinned to core 0, load and
receivers to core 1, as in the end-to-end rows): nothing queued (the reference); the other merchant's
callbacks queued to a receiver that accepts connections and never answers (each attempt waits for
``KASSA_CALLBACK_TIMEOUT``); and to a port that refuses connections. The queued callbacks are written
straight into the database (due now, first attempts, one order of the other merchant) once the server is up,
just before the healthy merchant's load; the healthy merchant's sales carry a ``server_callback_url`` to
``bench/receiver.py``, and its p99 from request to approved callback is held to 1.5x the reference's.
"""

from __future__ import annotations

import contextlib
import socket
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, text

from bench import probe
from bench.bodies import MerchantKeys
from bench.claims import numbers
from bench.endtoend import CallbackReceiver, EndToEndSpec, run_endtoend
from bench.postgres import fresh_database
from bench.probe import CpuUse
from bench.scenarios import Row, bootstrap_merchant, say
from bench.seed import create_orders
from bench.server import KassaDeployment, free_port
from kassa.clock import now_ms
from kassa.domain.callbacks import destination
from kassa.storage.database import sqlalchemy_url

CASES = {
    "none": "",
    "silent": "to a receiver that accepts connections and never answers",
    "refusing": "to a port that refuses connections",
}


@dataclass(frozen=True)
class Spec:
    queued: int  # callbacks of the other merchant
    rate: float  # the healthy merchant's sales per second
    duration: float
    grace: float


class SilentReceiver:
    """Accepts connections and holds them open, reading nothing and answering nothing, until closed."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/callback"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:  # closed
                return
            self._held.append(connection)

    def close(self) -> None:
        self._listener.close()
        for connection in self._held:
            connection.close()


def measure(backend: str, spec: Spec, connections: int) -> list[Row]:
    """A row per case: the healthy merchant's sales end to end, its p99 held to the reference's."""
    return [_run(backend, spec, connections, case) for case in CASES]


def _run(backend: str, spec: Spec, connections: int, case: str) -> Row:
    two_cores = probe.cores() >= 2
    server_core, load_core = (0, 1) if two_cores else (None, None)
    queued = 0 if case == "none" else spec.queued
    beside = f"{queued:,} callbacks of another queued {CASES[case]}" if queued else "nothing else queued"
    name = f"healthy merchant at {spec.rate:,.0f}/s, {beside}, {backend}"
    say(f"isolation: {name}")
    with contextlib.ExitStack() as stack:
        work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kassa-isolation-")))
        data_dir = work_dir / "data"
        data_dir.mkdir()
        url = stack.enter_context(fresh_database()) if backend == "postgresql" else f"sqlite:///{data_dir}/kassa.db"
        deployment = KassaDeployment(url, data_dir)
        deployment.upgrade()
        healthy = bootstrap_merchant(deployment, "healthy")
        other = bootstrap_merchant(deployment, "other")
        server = stack.enter_context(deployment.server(server_core, f"isolation-{case}"))
        if case != "none":
            dead_url = _dead_receiver(stack, case)
            create_orders(server.url, other, 1)
            _queue(url, other, dead_url, queued)
        receiver = CallbackReceiver(work_dir, load_core)
        e2e = EndToEndSpec(spec.rate, spec.duration, spec.grace, connections, load_core)
        outcome = run_endtoend(server.url, healthy, data_dir, e2e, receiver)
    facts = (
        f"{name}: {outcome.accepted:,} of {outcome.planned:,} sales accepted; {outcome.approved:,} approved"
        f" callbacks, {outcome.lost:,} lost; request to answer p99 {outcome.answer_p99_ms:.1f} ms",
    )
    kind = f"isolation-{case}"
    return Row(name, outcome.load, 0, 0.0, CpuUse(0.0, 0.0, 0.0), kind=kind, backend=backend, lost=outcome.lost,
               facts=facts)  # fmt: skip


def _dead_receiver(stack: contextlib.ExitStack, case: str) -> str:
    if case == "refusing":
        return f"http://127.0.0.1:{free_port()}/callback"  # nothing listens there
    silent = SilentReceiver()
    stack.callback(silent.close)
    return silent.url


def _queue(database_url: str, merchant: MerchantKeys, url: str, count: int) -> None:
    """``count`` callbacks of ``merchant``'s one order to ``url``, due now, each its own URL (none waits for
    another), and the destination's queue head."""
    engine = create_engine(sqlalchemy_url(database_url))
    now, target = now_ms(), destination(url)
    try:
        with engine.begin() as conn:
            order_id, tx_id, merchant_id = conn.execute(
                text(
                    "SELECT o.id, t.id, o.merchant_id FROM orders o JOIN transactions t ON t.order_id = o.id"
                    " JOIN merchants m ON m.id = o.merchant_id WHERE m.login = :login LIMIT 1"
                ),
                {"login": merchant.login},
            ).one()
            conn.execute(
                text(
                    "INSERT INTO callbacks (order_id, transaction_id, kind, url, fields, state, attempts,"
                    " next_attempt_at_ms, created_at_ms, destination, merchant_id, lane)"
                    f" SELECT :order_id, :tx_id, 'notify', :url || '?n=' || n, '{{}}', 'pending', 0, :now, :now,"
                    f" :destination, :merchant_id, 0 FROM {numbers(conn.dialect.name, 0, count)}"
                ),
                {"order_id": order_id, "tx_id": tx_id, "url": url, "now": now}
                | {"destination": target, "merchant_id": merchant_id},
            )
            conn.execute(
                text(
                    "INSERT INTO callback_destinations (destination, first_at_ms, retry_at_ms, failures,"
                    " failed_at_ms, probe_at_ms) VALUES (:destination, :now, NULL, 0, 0, 0)"
                ),
                {"destination": target, "now": now},
            )
    finally:
        engine.dispose()
