"""Serving: ``kassa serve``, ``kassa worker``, ``kassa db``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import click

from kassa.ops import demo
from kassa.ops.cli.common import settings, vault
from kassa.settings import Settings, listen_address
from kassa.storage.migrate import upgrade, upgrade_quietly

log = logging.getLogger("kassa.serve")
FC = TypeVar("FC", bound=Callable[..., object])


def _address_option(flag: str, help_text: str) -> Callable[[FC], FC]:
    """A ``HOST:PORT`` option, given to the command as ``{name}_address``: checked when parsed."""
    return click.option(
        flag,
        f"{flag.removeprefix('--').replace('-', '_')}_address",
        callback=lambda _c, _p, value: None if value is None else _address(value),
        default=None,
        help=help_text,
    )


@click.command()
@click.option("--host", default=None, help="Address to listen on (KASSA_HOST).")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Port to listen on (KASSA_PORT).")
@click.option(
    "--workers",
    "worker_count",
    type=click.IntRange(min=0),
    default=None,
    help="Job workers in each process (KASSA_WORKERS; 0: API only).",
)
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    default=1,
    help="Server processes sharing the port (each with its own job workers); more than 1 is for PostgreSQL.",
)
@_address_option("--console", "HOST:PORT of the operator console (KASSA_CONSOLE; --demo opens it at 127.0.0.1:8081).")
@_address_option("--ops", "HOST:PORT of /metrics, /livez and /readyz (KASSA_OPS; --demo opens it at 127.0.0.1:8082).")
@click.option("--demo", "with_demo", is_flag=True, help="Create a sandbox demo merchant and operator on first start.")
@_address_option(
    "--demo-acquirer",
    "With --demo: HOST:PORT of an ISO 8583 acquirer host (`kassa acquirer-sim`) the demo's payments go to; "
    "without it they go to the built-in sandbox.",
)
def serve(
    host: str | None,
    port: int | None,
    worker_count: int | None,
    processes: int,
    console_address: tuple[str, int] | None,
    ops_address: tuple[str, int] | None,
    with_demo: bool,
    demo_acquirer_address: tuple[str, int] | None,
) -> None:
    """Run the API and its job workers, and the operator console and the operations listener when they
    have an address. SIGTERM stops gracefully; with --processes, SIGHUP restarts the processes one by one."""
    configured = settings()
    vault()  # keys it cannot use (a key file's) stop it here, in one line, before any process starts
    upgrade_quietly(configured.database_url)
    host, port = host or configured.host, port or configured.port
    console = console_address or configured.console or (demo.CONSOLE if with_demo else None)
    ops = ops_address or configured.ops or (demo.OPS if with_demo else None)
    if with_demo:
        demo.announce(demo.ensure(configured, demo_acquirer_address), configured, host, port, console, ops)
    workers = configured.workers if worker_count is None else worker_count
    listeners = Listeners((host, port), console, ops)
    log.info("serving", extra={**listeners.shown(), "processes": processes, "workers_per_process": workers})
    if processes == 1:
        # Ctrl-C: uvicorn has stopped gracefully, then raised the interrupt again for click to print "Aborted!"
        with contextlib.suppress(KeyboardInterrupt):
            _run(configured, workers, listeners, None, None)
        return
    with _figures_of_all_processes():
        raise SystemExit(_supervised(configured, workers, listeners, processes))


@dataclass(frozen=True)
class Listeners:
    api: tuple[str, int]
    console: tuple[str, int] | None
    ops: tuple[str, int] | None

    def shown(self) -> dict[str, str]:
        named = {"api": self.api, "console": self.console, "ops": self.ops}
        return {name: f"{address[0]}:{address[1]}" for name, address in named.items() if address is not None}

    def addresses(self) -> list[tuple[str, int]]:
        return [self.api, *(address for address in (self.console, self.ops) if address is not None)]


def _address(text: str) -> tuple[str, int]:
    try:
        return listen_address(text)
    except ValueError as problem:
        raise click.BadParameter(str(problem)) from None


def _run(
    configured: Settings,
    workers: int,
    listeners: Listeners,
    sockets: tuple[socket.socket, ...] | None,
    on_ready: Callable[[], None] | None,
) -> None:
    """One server process: the API, and the console and the operations listener when they have addresses
    (on ``sockets`` when the parent bound them, in the order of ``Listeners.addresses``)."""
    from kassa.api.app import create_app
    from kassa.console.app import create_console
    from kassa.ops import processes as supervisor
    from kassa.ops.connections import ConnectionLimits
    from kassa.ops.hosts import guarded
    from kassa.ops.probes import create_probes
    from kassa.runtime import build_services

    services = build_services(configured, workers)
    bound = iter([[sock] for sock in sockets] if sockets else [])
    api_sockets = next(bound, None)
    companions = []
    for address, make in ((listeners.console, create_console), (listeners.ops, create_probes)):
        if address is not None:
            app = guarded(make(services), address[0], configured.operator_hosts)
            companions.append(supervisor.Companion(app, *address, next(bound, None)))
    limits = ConnectionLimits(configured.header_timeout, configured.body_timeout, configured.max_header_bytes)
    supervisor.serve(
        create_app(services),
        *listeners.api,
        api_sockets,
        trusted_proxies=configured.trusted_proxies,
        limits=limits,
        companions=companions,
        grace_seconds=configured.shutdown_grace,
        on_stop=services.begin_stopping,
        on_ready=on_ready,
    )


def _supervised(configured: Settings, workers: int, listeners: Listeners, processes: int) -> int:
    from kassa.ops import processes as supervisor

    per_listener = [supervisor.listening_sockets(host, port, processes) for host, port in listeners.addresses()]
    slots = [tuple(sockets) for sockets in zip(*per_listener, strict=True)]

    def forget(pid: int) -> None:
        from prometheus_client import multiprocess

        # Its live gauges go; its counts stay in the sums. (Untyped in prometheus-client 0.26.)
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]

    return supervisor.supervise(
        slots, lambda sockets, ready: _run(configured, workers, listeners, sockets, ready), forget
    )


@contextlib.contextmanager
def _figures_of_all_processes() -> Iterator[None]:
    """prometheus-client's multiprocess mode, for the children to add their figures up (``kassa.metrics``):
    a directory of this server's own, empty at start and removed at the end."""
    folder = tempfile.mkdtemp(prefix="kassa-metrics-")
    # Read by prometheus-client when first imported, so set before (``kassa.metrics.MULTIPROCESS_DIR``).
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
    try:
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@click.command()
@click.option("--workers", "worker_count", type=click.IntRange(min=1), default=1, help="Job workers in this process.")
@_address_option(
    "--ops", "HOST:PORT of this worker's /metrics, /livez and /readyz (not KASSA_OPS: that is the server's)."
)
def worker(worker_count: int, ops_address: tuple[str, int] | None) -> None:
    """Run job workers alone (any number of them, on any machine sharing the database). SIGTERM lets the
    work in hand finish within KASSA_SHUTDOWN_GRACE and hands back the rest."""
    from kassa.runtime import build_services, run_workers, settle_garbage_collector

    vault()  # keys it cannot use stop it here, in one line
    configured = settings()
    services = build_services(configured, worker_count)
    ops = ops_address  # KASSA_OPS names the server's listener, often in an environment the workers share
    settle_garbage_collector()

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, _stopper(services.begin_stopping, stop))
        if ops is None:
            await run_workers(services, stop)
            return
        from kassa.ops.hosts import guarded
        from kassa.ops.probes import create_probes
        from kassa.ops.processes import beside

        probes = beside(guarded(create_probes(services), ops[0], configured.operator_hosts), *ops)
        serving = asyncio.create_task(probes.serve())
        try:
            await run_workers(services, stop)
        finally:
            probes.should_exit = True
            await serving

    try:
        asyncio.run(run())
    finally:
        services.db.close()


def _stopper(begin_stopping: Callable[[], None], stop: asyncio.Event) -> Callable[[], None]:
    def stopping() -> None:
        begin_stopping()
        stop.set()

    return stopping


@click.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply every pending migration."""
    upgrade(settings().database_url)
    click.echo("database is up to date")


COMMANDS = (serve, worker, db)
