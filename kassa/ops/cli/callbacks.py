"""The callback outbox: ``kassa callbacks``."""

from __future__ import annotations

from typing import Any

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.ops.cli.common import emit, iso_time, json_option, read, write
from kassa.storage import callbacks as callback_store


@click.group()
def callbacks() -> None:
    """The callback outbox: every attempt, and redelivery."""


@callbacks.command("list")
@click.option("--order", "order_id", type=int, default=None)
@click.option("--status", "state", type=click.Choice(["pending", "delivered", "failed"]), default=None)
@json_option
def callbacks_list(order_id: int | None, state: str | None, as_json: bool) -> None:
    """Callbacks, newest first, with every delivery attempt."""

    def query(conn: Connection) -> list[dict[str, Any]]:
        return [
            {
                "id": c["id"],
                "order": c["order_id"],
                "kind": c["kind"],
                "url": c["url"],
                "status": c["state"],
                "attempts": [
                    {
                        "at": iso_time(a["at_ms"]),
                        "http_status": a["http_status"],
                        "error": a["error"],
                        "latency_ms": a["latency_ms"],
                    }
                    for a in callback_store.attempts_of(conn, c["id"])
                ],
            }
            for c in callback_store.listing(conn, order_id, state)
        ]

    data = read(query)
    lines = [f"{c['id']}\torder {c['order']}\t{c['kind']}\t{c['status']}\t{len(c['attempts'])} attempts" for c in data]
    emit(as_json, data, lines)


@callbacks.command("redeliver")
@click.argument("callback_id", type=int, required=False)
@click.option("--order", "order_id", type=int, default=None, help="Every callback of this order.")
@json_option
def callbacks_redeliver(callback_id: int | None, order_id: int | None, as_json: bool) -> None:
    """Queue callbacks again, due now."""
    if (callback_id is None) == (order_id is None):
        raise click.UsageError("name one callback ID or --order N")
    count = write(lambda conn: callback_store.redeliver(conn, now_ms(), callback_id, order_id))
    emit(as_json, {"requeued": count}, [f"{count} callbacks queued again"])


COMMANDS = (callbacks,)
