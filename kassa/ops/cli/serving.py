"""Serving: ``kassa serve``, ``kassa worker``, ``kassa db``."""

from __future__ import annotations

import asyncio
import signal
import socket

import click

from kassa.ops import demo
from kassa.ops.cli.common import settings, vault
from kassa.settings import Settings, listen_address


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
@click.option(
    "--console",
    "console_address",
    callback=lambda _c, _p, value: None if value is None else _address(value),
    default=None,
    help="HOST:PORT of the operator console (KASSA_CONSOLE; --demo opens it at 127.0.0.1:8081).",
)
@click.option("--demo", "with_demo", is_flag=True, help="Create a sandbox demo merchant and operator on first start.")
def serve(
    host: str | None,
    port: int | None,
    worker_count: int | None,
    processes: int,
    console_address: tuple[str, int] | None,
    with_demo: bool,
) -> None:
    """Run the API and its job workers, and the operator console when it has an address."""
    from kassa.storage.migrate import upgrade

    configured = settings()
    vault()  # keys it cannot use (a key file's) stop it here, in one line, before any process starts
    upgrade(configured.database_url)
    host, port = host or configured.host, port or configured.port
    console = console_address or configured.console or (demo.CONSOLE if with_demo else None)
    if with_demo:
        demo.announce(demo.ensure(configured), configured, host, port, console)
    workers = configured.workers if worker_count is None else worker_count
    _run(configured, host, port, workers, processes, console)


def _address(text: str) -> tuple[str, int]:
    try:
        return listen_address(text)
    except ValueError as problem:
        raise click.BadParameter(str(problem)) from None


def _run(
    configured: Settings, host: str, port: int, workers: int, processes: int, console: tuple[str, int] | None
) -> None:
    from kassa.api.app import create_app
    from kassa.console.app import create_console
    from kassa.ops import processes as supervisor
    from kassa.ops.connections import ConnectionLimits
    from kassa.runtime import build_services

    def run(sockets: list[socket.socket] | None, console_sockets: list[socket.socket] | None) -> None:
        services = build_services(configured, workers)
        companion = None
        if console is not None:
            companion = supervisor.Companion(create_console(services), *console, console_sockets)
        limits = ConnectionLimits(configured.header_timeout, configured.body_timeout, configured.max_header_bytes)
        trusted = configured.trusted_proxies
        app = create_app(services)
        supervisor.serve(app, host, port, sockets, trusted_proxies=trusted, limits=limits, companion=companion)

    if processes == 1:
        run(None, None)
        return
    sockets = supervisor.listening_sockets(host, port, processes)
    consoles = supervisor.listening_sockets(*console, processes) if console else [None] * processes
    pairs = dict(zip(sockets, consoles, strict=True))
    raise SystemExit(supervisor.supervise(sockets, lambda sock: run([sock], _one(pairs[sock]))))


def _one(sock: socket.socket | None) -> list[socket.socket] | None:
    return None if sock is None else [sock]


@click.command()
@click.option("--workers", "worker_count", type=click.IntRange(min=1), default=1, help="Job workers in this process.")
def worker(worker_count: int) -> None:
    """Run job workers alone (any number of them, on any machine sharing the database)."""
    from kassa.runtime import build_services, run_workers, settle_garbage_collector

    vault()  # keys it cannot use stop it here, in one line
    services = build_services(settings(), worker_count)
    settle_garbage_collector()

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run_workers(services, stop)

    try:
        asyncio.run(run())
    finally:
        services.db.close()


@click.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply every pending migration."""
    from kassa.storage.migrate import upgrade  # alembic is slow to import; only this command needs it

    upgrade(settings().database_url)
    click.echo("database is up to date")


COMMANDS = (serve, worker, db)
