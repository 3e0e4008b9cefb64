"""The operator command line: ``kassa``. Every command reads ``KASSA_DATABASE_URL`` and takes ``--json``."""

from __future__ import annotations

import asyncio
import datetime
import secrets
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click
import orjson
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from kassa import logs
from kassa.clock import now_ms
from kassa.domain import cards, money
from kassa.domain.lifecycle import Stage, Status, TxType, order_stage, status_of
from kassa.domain.merchants import Endpoint, Merchant, Mode
from kassa.ops import demo
from kassa.settings import SettingError, Settings
from kassa.storage import callbacks as callback_store
from kassa.storage import ledger as ledger_store
from kassa.storage import merchants as merchant_store
from kassa.storage import orders as order_store
from kassa.storage import settlement
from kassa.storage import threeds as threeds_store
from kassa.storage.database import Database, open_database

T = TypeVar("T")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@contextmanager
def _database() -> Iterator[Database]:
    db = open_database(Settings.from_env().database_url, threads=1)
    try:
        yield db
    finally:
        db.close()


def _write(unit: Callable[[Connection], T], taken: str = "that name or id is already taken") -> T:
    with _database() as db:
        try:
            return db.write_sync(unit)
        except merchant_store.NotFound as missing:
            raise click.ClickException(str(missing)) from None
        except IntegrityError:
            raise click.ClickException(taken) from None


def _emit(as_json: bool, data: Any, lines: Sequence[str]) -> None:
    if as_json:
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        for line in lines:
            click.echo(line)


@click.group()
def main() -> None:
    """Operate a Kassa gateway."""
    try:
        settings = Settings.from_env()
    except SettingError as problem:  # one line naming the variable, before any command starts
        raise click.ClickException(str(problem)) from None
    logs.configure(settings.log_level)


@main.command()
@click.option("--host", default=None, help="Address to listen on (KASSA_HOST).")
@click.option("--port", type=int, default=None, help="Port to listen on (KASSA_PORT).")
@click.option("--workers", "worker_count", type=int, default=None, help="Job workers in each process.")
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
    from kassa.runtime import build_services
    from kassa.storage.migrate import upgrade

    settings = Settings.from_env()
    upgrade(settings.database_url)
    host, port = host or settings.host, port or settings.port
    if with_demo:
        demo.announce(demo.ensure(settings), settings, host, port)
    workers = settings.workers if worker_count is None else worker_count

    def run(sockets: list[socket.socket] | None) -> None:
        supervisor.serve(create_app(build_services(settings, workers)), host, port, sockets)

    if processes == 1:
        run(None)
        return
    sockets = supervisor.listening_sockets(host, port, processes)
    raise SystemExit(supervisor.supervise(sockets, lambda sock: run([sock])))


@main.command()
@click.option("--workers", "worker_count", type=int, default=1, help="Job workers in this process.")
def worker(worker_count: int) -> None:
    """Run job workers alone (any number of them, on any machine sharing the database)."""
    from kassa.runtime import build_services, run_workers, settle_garbage_collector

    services = build_services(Settings.from_env(), worker_count)
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


@main.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Apply every pending migration."""
    from kassa.storage.migrate import upgrade  # alembic is slow to import; only this command needs it

    upgrade(Settings.from_env().database_url)
    click.echo("database is up to date")


@main.group()
def merchant() -> None:
    """Merchants: login and control key."""


def _merchant_dict(m: Merchant) -> dict[str, Any]:
    return {"id": m.id, "login": m.login, "control_key": m.control_key, "classic": m.classic}


@merchant.command("create")
@click.option("--login", required=True)
@click.option("--control-key", default=None, help="Default: a random 32-character key.")
@click.option("--classic", is_flag=True, help="Answer non-JSON clients in the classic key=value format.")
@json_option
def merchant_create(login: str, control_key: str | None, classic: bool, as_json: bool) -> None:
    """Create a merchant."""
    key = control_key or secrets.token_hex(16)
    created = _write(
        lambda conn: merchant_store.create_merchant(conn, login, key, classic, now_ms()), f"login {login} is taken"
    )
    _emit(
        as_json,
        _merchant_dict(created),
        [f"merchant {created.login} created, control key {created.control_key}"],
    )


@merchant.command("list")
@json_option
def merchant_list(as_json: bool) -> None:
    """List merchants."""
    with _database() as database:
        found = database.read_sync(merchant_store.list_merchants)
    _emit(
        as_json,
        [_merchant_dict(m) for m in found],
        [f"{m.id}\t{m.login}\tclassic={m.classic}" for m in found],
    )


@main.group()
def endpoint() -> None:
    """Endpoints (one currency each) and endpoint groups."""


def _minor(text: str | None, currency: str) -> int | None:
    if text is None:
        return None
    try:
        return money.parse_amount(text, money.currency(currency))
    except money.AmountError as problem:
        raise click.BadParameter(str(problem)) from None


def _endpoint_dict(e: Endpoint) -> dict[str, Any]:
    return {
        "id": e.id,
        "merchant": e.merchant.login,
        "kind": "group" if e.is_group else "endpoint",
        "currency": e.currency,
        "mode": e.mode.value,
        "classic": e.classic,
        "descriptor": e.descriptor,
        "min_amount": e.min_amount,
        "max_amount": e.max_amount,
        "members": [m.id for m in e.members],
    }


@endpoint.command("create")
@click.option("--merchant", "login", required=True, help="The owning merchant's login.")
@click.option("--currency", required=True)
@click.option("--id", "endpoint_id", type=int, default=None)
@click.option("--mode", type=click.Choice([m.value for m in Mode]), default="sandbox")
@click.option("--classic", is_flag=True)
@click.option("--descriptor", default="")
@click.option("--min-amount", default=None, help="Decimal, in the endpoint's currency.")
@click.option("--max-amount", default=None, help="Decimal, in the endpoint's currency.")
@click.option("--multi-capture", is_flag=True, help="Allow several partial captures of one preauth.")
@json_option
def endpoint_create(
    login: str,
    currency: str,
    endpoint_id: int | None,
    mode: str,
    classic: bool,
    descriptor: str,
    min_amount: str | None,
    max_amount: str | None,
    multi_capture: bool,
    as_json: bool,
) -> None:
    """Create an endpoint for one currency."""
    try:
        code = money.currency(currency).code
    except money.AmountError as problem:
        raise click.BadParameter(str(problem), param_hint="--currency") from None
    low, high = _minor(min_amount, code), _minor(max_amount, code)

    def create(conn: Connection) -> Endpoint:
        owner = merchant_store.merchant_by_login(conn, login)
        spec = merchant_store.EndpointSpec(
            owner.id, code, Mode(mode), classic, descriptor, low, high, multi_capture, endpoint_id
        )
        return merchant_store.load_endpoint(conn, merchant_store.create_endpoint(conn, spec, now_ms()))

    created = _write(create, f"endpoint id {endpoint_id} is taken")
    _emit(as_json, _endpoint_dict(created), [f"endpoint {created.id} ({code}, {mode}) created for {login}"])


@endpoint.command("list")
@json_option
def endpoint_list(as_json: bool) -> None:
    """List endpoints and groups."""
    with _database() as database:
        found = database.read_sync(merchant_store.list_endpoints)
    _emit(
        as_json,
        [_endpoint_dict(e) for e in found],
        [
            f"{e.id}\t{'group' if e.is_group else e.currency}\t{e.mode.value}\t{e.merchant.login}\t{e.descriptor}"
            for e in found
        ],
    )


@main.group()
def group() -> None:
    """Endpoint groups: one id that picks a member endpoint by currency."""


@group.command("create")
@click.option("--merchant", "login", required=True)
@click.option("--endpoints", required=True, help="Comma-separated member endpoint ids.")
@json_option
def group_create(login: str, endpoints: str, as_json: bool) -> None:
    """Create an endpoint group."""
    try:
        member_ids = [int(part) for part in endpoints.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter("must be endpoint ids separated by commas", param_hint="--endpoints") from None

    def create(conn: Connection) -> Endpoint:
        owner = merchant_store.merchant_by_login(conn, login)
        group_id = merchant_store.create_group(conn, owner.id, member_ids, now_ms())
        return merchant_store.load_endpoint(conn, group_id)

    created = _write(create)
    _emit(as_json, _endpoint_dict(created), [f"group {created.id} created with endpoints {member_ids}"])


@main.group()
def order() -> None:
    """Orders and their transactions."""


def _amount_text(minor: int, currency: str) -> str:
    return money.format_amount(minor, money.currency(currency))


@order.command("show")
@click.argument("order_id", type=int)
@json_option
def order_show(order_id: int, as_json: bool) -> None:
    """One order with every transaction (card data masked)."""

    def query(conn: Connection) -> tuple[order_store.OrderSnapshot | None, dict[int, Any]]:
        snapshot = order_store.order_by_id(conn, order_id)
        if snapshot is None:
            return None, {}
        return snapshot, {tx["id"]: threeds_store.of_transaction(conn, tx["id"]) for tx in snapshot.transactions}

    with _database() as database:
        snapshot, authentications = database.read_sync(query)
    if snapshot is None:
        raise click.ClickException(f"no order {order_id}")
    o, card = snapshot.order, snapshot.card
    data = {
        "id": o["id"],
        "client_orderid": o["client_orderid"],
        "endpoint_id": o["endpoint_id"],
        "amount": _amount_text(o["amount"], o["currency"]),
        "currency": o["currency"],
        "card": cards.mask_stored(card["bin"], card["last_four"], card["brand"]) if card else None,
        "transactions": [_transaction_dict(tx, authentications.get(tx["id"])) for tx in snapshot.transactions],
    }
    lines = [f"order {o['id']} ({o['client_orderid']}) {data['amount']} {o['currency']} card {data['card']}"]
    lines += [
        f"  {t['serial_number']}  {t['order_stage']:<24} {t['amount']} {t['error_code'] or ''}"
        for t in data["transactions"]
    ]
    _emit(as_json, data, lines)


_THREE_DS_FIELDS = (
    "version", "path", "server_trans_id", "acs_trans_id", "comp_ind", "trans_status", "eci", "authentication_value",
)  # fmt: skip


def _transaction_dict(tx: Any, authentication: Any = None) -> dict[str, Any]:
    """A transaction for operators; with the EMV 3-D Secure data of its authentication, if any."""
    stage = Stage(tx["stage"])
    three_ds = {name: authentication[name] for name in _THREE_DS_FIELDS} if authentication else None
    return {
        "three_ds": three_ds,
        "serial_number": tx["serial_number"],
        "type": tx["tx_type"],
        "status": status_of(stage).value,
        "order_stage": order_stage(TxType(tx["tx_type"]), stage),
        "amount": _amount_text(tx["amount"], tx["currency"]),
        "error_code": tx["error_code"],
        "error_message": tx["error_message"],
        "approval_code": tx["approval_code"],
    }


@order.command("list")
@click.option("--merchant", "login", default=None)
@click.option("--status", type=click.Choice([s.value for s in Status]), default=None)
@click.option("--limit", type=int, default=50)
@json_option
def order_list(login: str | None, status: str | None, limit: int, as_json: bool) -> None:
    """Orders, newest first, with the status of their latest transaction."""

    def query(conn: Connection) -> list[Any]:
        merchant_id = merchant_store.merchant_by_login(conn, login).id if login else None
        return order_store.list_orders(conn, merchant_id, status, limit)

    with _database() as database:
        try:
            rows = database.read_sync(query)
        except merchant_store.NotFound as missing:
            raise click.ClickException(str(missing)) from None
    data = [
        {
            "id": r["id"],
            "client_orderid": r["client_orderid"],
            "endpoint_id": r["endpoint_id"],
            "type": r["tx_type"],
            "status": status_of(Stage(r["stage"])).value,
            "amount": _amount_text(r["amount"], r["currency"]),
            "currency": r["currency"],
        }
        for r in rows
    ]
    _emit(
        as_json,
        data,
        [f"{d['id']}\t{d['client_orderid']}\t{d['type']}\t{d['status']}\t{d['amount']} {d['currency']}" for d in data],
    )


@main.command()
@click.option("--endpoint", "endpoint_id", type=int, default=None, help="Only this endpoint's orders.")
@json_option
def settle(endpoint_id: int | None, as_json: bool) -> None:
    """Settle approved sales and captures now (the scheduler does it at the daily cut-off)."""
    count = _write(lambda conn: settlement.settle(conn, now_ms(), endpoint_id))
    _emit(as_json, {"settled_orders": count}, [f"{count} orders settled"])


@main.group()
def ledger() -> None:
    """The double-entry ledger."""


@ledger.command("balance")
@click.option("--merchant", "login", required=True)
@json_option
def ledger_balance(login: str, as_json: bool) -> None:
    """Held, captured-unsettled and settled balance per currency."""

    def query(conn: Connection) -> list[ledger_store.CurrencyBalance]:
        return ledger_store.merchant_balances(conn, merchant_store.merchant_by_login(conn, login).id)

    rows = _write(query)
    data = [
        {
            "currency": b.currency,
            "held": _amount_text(b.held, b.currency),
            "captured_unsettled": _amount_text(b.captured, b.currency),
            "settled": _amount_text(b.settled, b.currency),
        }
        for b in rows
    ]
    lines = ["currency  held  captured-unsettled  settled"]
    lines += [f"{d['currency']}  {d['held']}  {d['captured_unsettled']}  {d['settled']}" for d in data]
    _emit(as_json, data, lines)


@ledger.command("check")
@json_option
def ledger_check(as_json: bool) -> None:
    """Verify that postings balance and that every order's amounts agree with its transactions."""
    with _database() as database:
        problems = database.read_sync(ledger_store.check)
    _emit(as_json, {"ok": not problems, "problems": problems}, problems or ["ledger is consistent"])
    if problems:
        raise SystemExit(1)


@main.group()
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
                        "at": _iso(a["at_ms"]),
                        "http_status": a["http_status"],
                        "error": a["error"],
                        "latency_ms": a["latency_ms"],
                    }
                    for a in callback_store.attempts_of(conn, c["id"])
                ],
            }
            for c in callback_store.listing(conn, order_id, state)
        ]

    with _database() as database:
        data = database.read_sync(query)
    lines = [f"{c['id']}\torder {c['order']}\t{c['kind']}\t{c['status']}\t{len(c['attempts'])} attempts" for c in data]
    _emit(as_json, data, lines)


@callbacks.command("redeliver")
@click.argument("callback_id", type=int, required=False)
@click.option("--order", "order_id", type=int, default=None, help="Every callback of this order.")
@json_option
def callbacks_redeliver(callback_id: int | None, order_id: int | None, as_json: bool) -> None:
    """Queue callbacks again, due now."""
    if (callback_id is None) == (order_id is None):
        raise click.UsageError("name one callback ID or --order N")
    count = _write(lambda conn: callback_store.redeliver(conn, now_ms(), callback_id, order_id))
    _emit(as_json, {"requeued": count}, [f"{count} callbacks queued again"])


def _iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat(timespec="milliseconds")
