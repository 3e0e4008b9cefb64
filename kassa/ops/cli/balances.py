"""Merchants' balances: ``kassa balance show|credit|debit``. Payouts draw on the available balance of
their own mode (``storage.balances``); an operator credits or debits the sandbox balance alone, so that
sandbox money can never fund a live payout."""

from __future__ import annotations

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.domain import money
from kassa.domain.merchants import Mode
from kassa.ops.cli.common import emit, json_option, read, write
from kassa.storage import balances as balance_store
from kassa.storage import ledger as ledger_store
from kassa.storage import merchants as merchant_store


@click.group()
def balance() -> None:
    """Merchants' balances: what payouts may draw on."""


@balance.command("show")
@click.option("--merchant", "login", required=True)
@json_option
def balance_show(login: str, as_json: bool) -> None:
    """Available and reserved (for payouts in flight) per currency, sandbox and live apart."""
    rows = read(lambda conn: balance_store.of_merchant(conn, merchant_store.merchant_id(conn, login)))
    data = [
        {
            "currency": b.currency,
            "mode": b.mode.value,
            "available": _text(b.available, b.currency),
            "reserved": _text(b.reserved, b.currency),
        }
        for b in rows
    ]
    lines = [f"{d['currency']} {d['mode']:<7}  available {d['available']}  reserved {d['reserved']}" for d in data]
    emit(as_json, data, lines or [f"{login} has no balance yet"])


def _adjustment(direction: int, help_text: str) -> click.Command:
    @click.option("--merchant", "login", required=True)
    @click.option("--currency", required=True, help="ISO 4217 alpha-3")
    @click.option("--amount", required=True, help="decimal amount in major units, such as 100.00")
    @click.option("--reason", required=True, help="why: kept with the adjustment")
    @json_option
    def adjust(login: str, currency: str, amount: str, reason: str, as_json: bool) -> None:
        cur, minor = _money(currency, amount)

        def change(conn: Connection) -> tuple[bool, list[balance_store.Balance]]:
            merchant_id = merchant_store.merchant_id(conn, login)
            done = ledger_store.adjust(conn, merchant_id, cur.code, direction * minor, reason, now_ms())
            return done, balance_store.of_merchant(conn, merchant_id)

        done, rows = write(change)
        if not done:
            raise click.ClickException(f"{login} has less than {amount} {cur.code} available")
        after = next(b for b in rows if b.currency == cur.code and b.mode is Mode.SANDBOX)
        data = {"merchant": login, "currency": cur.code, "mode": Mode.SANDBOX.value}
        data["available"] = _text(after.available, cur.code)
        emit(as_json, data, [f"{login} {cur.code} sandbox: available {data['available']}"])

    adjust.__doc__ = help_text
    return click.command()(adjust)


def _money(currency: str, amount: str) -> tuple[money.Currency, int]:
    try:
        cur = money.currency(currency.upper())
        minor = money.parse_amount(amount, cur)
    except money.AmountError as problem:
        raise click.BadParameter(str(problem)) from None
    if minor <= 0:
        raise click.BadParameter("must be greater than zero", param_hint="--amount")
    return cur, minor


def _text(minor: int, currency: str) -> str:
    return money.format_amount(minor, money.currency(currency))


_LIVE_APART = "(a live balance moves with real money alone)"
balance.add_command(_adjustment(1, f"Credit a merchant's sandbox balance {_LIVE_APART}."), "credit")
balance.add_command(_adjustment(-1, f"Debit a merchant's sandbox balance {_LIVE_APART}."), "debit")

COMMANDS = (balance,)
