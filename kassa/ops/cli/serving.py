"""Serving: ``kassa serve``, ``kassa worker``, ``kassa db``."""

from __future__ import annotations

import asyncio
import signal

import click

from kassa.ops import demo
from kassa.ops.cli.common import settings


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
@click.option("--demo", "with_demo", is_flag=True, help="Create a sandbox demo merchant on first start.")
def serve(host: str | None, port: int | None, worker_count: int | None, processes: int, with_demo: bool) -> None:
    """Run the API and its job workers."""
    import socket

    from kassa.api.app import create_app
    from kassa.ops import processes as supervisor
    from kassa.ops.connections import ConnectionLimits
    from kassa.runtime import build_services
    from kassa.storage.migrate import upgrade

    configured = settings()
    upgrade(configured.database_url)
    host, port = host or configured.host, port or configured.port
    if with_demo:
        demo.announce(demo.ensure(configured), configured, host, port)
    workers = configured.workers if worker_count is None else worker_count

    def run(sockets: list[socket.socket] | None) -> None:
        app = create_app(build_services(configured, workers))
        limits = ConnectionLimits(configured.header_timeout, configured.body_timeout, configured.max_header_bytes)
        supervisor.serve(app, host, port, sockets, trusted_proxies=configured.trusted_proxies, limits=limits)

    if processes == 1:
        run(None)
        return
    sockets = supervisor.listening_sockets(host, port, processes)
    raise SystemExit(supervisor.supervise(sockets, lambda sock: run([sock])))


@click.command()
@click.option("--workers", "worker_count", type=click.IntRange(min=1), default=1, help="Job workers in this process.")
def worker(worker_count: int) -> None:
    """Run job workers alone (any number of them, on any machine sharing the database)."""
    from kassa.runtime import build_services, run_workers, settle_garbage_collector

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
