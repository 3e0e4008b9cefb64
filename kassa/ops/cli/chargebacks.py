"""Chargebacks and their disputes: ``kassa chargeback create|import|list|close|codes`` (CONTRACT §16).
Every chargeback recorded and every dispute closed is written to the audit log as done by
``cli:{the OS user}``."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.core import chargebacks
from kassa.domain import money
from kassa.domain.chargebacks import DisputeState, LineError, age_days, read_file, reason_codes, reported
from kassa.ops.cli.common import cli_actor, emit, json_option, read, write
from kassa.storage import chargebacks as chargeback_store
from kassa.storage import merchants as merchant_store
from kassa.storage.prepared import Record

# Two commands recording the same chargeback at once: the second's insert meets the first's dispute.
_AT_ONCE = "the same chargeback was being recorded at the same time: run the command again to see it"


@click.group()
def chargeback() -> None:
    """Chargebacks the acquirer reported, and the disputes they open."""


@chargeback.command("create")
@click.option("--order", "order_id", default="", help="The gateway's orderid of the sale charged back.")
@click.option("--rrn", "processor_rrn", default="", help="Or the acquirer's reference (processor-rrn) of it.")
@click.option("--amount", required=True, help="In the order's currency, major units, such as 10.42.")
@click.option("--reason", "reason_code", required=True, help="The scheme's reason code (kassa chargeback codes).")
@click.option("--date", "disputed_on", default=None, help="The day the acquirer reported it, YYYY-MM-DD (today).")
@json_option
def chargeback_create(
    order_id: str, processor_rrn: str, amount: str, reason_code: str, disputed_on: str | None, as_json: bool
) -> None:
    """Record one chargeback: a chargeback transaction on the order, its balance debited, the merchant
    called back."""
    now = now_ms()
    today = chargebacks.today(now)
    try:
        report = reported(
            0,
            order_id=order_id,
            processor_rrn=processor_rrn,
            amount=amount,
            currency=None,
            reason_code=reason_code,
            disputed_on=disputed_on or today.isoformat(),
            today=today,
            names=chargebacks.TYPED,
        )
    except LineError as problem:
        raise click.UsageError(str(problem)) from None
    try:
        done = write(lambda conn: chargebacks.record(conn, report, cli_actor(), now), _AT_ONCE)
    except chargebacks.Refused as refused:
        raise click.ClickException(str(refused)) from None
    data = _recorded(done)
    verb = "recorded" if done.new else "was already recorded as"
    emit(as_json, data, [f"order {done.order_id}: chargeback {verb} dispute {done.dispute_id}, {data['amount']}"])


def _recorded(done: chargebacks.Recorded) -> dict[str, Any]:
    amount = money.format_amount(done.amount, money.currency(done.currency))
    return {"dispute": done.dispute_id, "order": done.order_id, "amount": f"{amount} {done.currency}", "new": done.new}


@chargeback.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
def chargeback_import(file: Path, as_json: bool) -> None:
    """Record every chargeback of an acquirer's report (CSV with a header: orderid or processor-rrn,
    amount, currency, reason-code, date). The whole file is checked first: one bad line and nothing is
    recorded. A line recorded by an earlier import is not recorded again."""
    try:
        text = file.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise click.BadParameter("is not UTF-8 text", param_hint="FILE") from None
    now = now_ms()
    reports, problems = read_file(text, chargebacks.today(now))
    if not problems:
        try:
            done = write(lambda conn: chargebacks.import_reports(conn, reports, cli_actor(), now), _AT_ONCE)
        except chargebacks.Refused as refused:
            problems = refused.problems
    if problems:
        for problem in problems:
            click.echo(problem, err=True)
        raise click.ClickException(f"{file.name}: {len(problems)} line(s) refused, nothing imported")
    new = [d for d in done if d.new]
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    data = {
        "file": file.name,
        "sha256": digest,
        "recorded": [_recorded(d) for d in new],
        "already": len(done) - len(new),
    }
    emit(as_json, data, [f"{file.name}: {len(new)} chargeback(s) recorded, {len(done) - len(new)} already recorded"])


@chargeback.command("list")
@click.option("--merchant", "login", default=None, help="Only this merchant's disputes.")
@click.option(
    "--state", type=click.Choice([s.value for s in DisputeState]), default=DisputeState.OPEN.value, show_default=True
)
@click.option("--limit", type=click.IntRange(1, 10_000), default=200, show_default=True)
@json_option
def chargeback_list(login: str | None, state: str, limit: int, as_json: bool) -> None:
    """Disputes, oldest first, with their age in days and what their reason code means."""
    now = now_ms()

    def query(conn: Connection) -> list[Record]:
        merchant_id = merchant_store.merchant_id(conn, login) if login else None
        return chargeback_store.disputes(conn, state=DisputeState(state), merchant_id=merchant_id, limit=limit)

    data = [_dispute(row, now) for row in read(query)]
    lines = [
        f"{d['id']}\t{d['age_days']}d\t{d['date']}\torder {d['order']}\t{d['merchant']}\t{d['amount']} {d['currency']}"
        f"\t{d['reason_code']} {d['reason']}"
        for d in data
    ]
    emit(as_json, data, lines or [f"no {state} disputes"])


def _dispute(row: Record, now: int) -> dict[str, Any]:
    code = reason_codes().get(row["reason_code"])
    disputed_on = row["disputed_on"]
    return {
        "id": row["id"],
        "order": row["order_id"],
        "merchant": row["login"],
        "amount": money.format_amount(row["amount"], money.currency(row["currency"])),
        "currency": row["currency"],
        "reason_code": row["reason_code"],
        "scheme": code.scheme if code else None,
        "reason": code.meaning if code else "",
        "date": disputed_on,
        "age_days": age_days(disputed_on, chargebacks.today(now)),
        "state": row["state"],
        "opened_by": row["opened_by"],
    }


@chargeback.command("close")
@click.option("--id", "dispute_id", type=int, required=True, help="The dispute (kassa chargeback list).")
@click.option("--won", "outcome", flag_value="won", help="The merchant's evidence held: credit the amount back.")
@click.option("--lost", "outcome", flag_value="lost", help="The chargeback stands.")
@json_option
def chargeback_close(dispute_id: int, outcome: str | None, as_json: bool) -> None:
    """Record how a dispute ended."""
    if outcome is None:
        raise click.UsageError("give --won or --lost")
    now = now_ms()
    try:
        row = write(lambda conn: chargebacks.close(conn, dispute_id, outcome == "won", cli_actor(), now))
    except chargebacks.DisputeError as problem:
        raise click.ClickException(str(problem)) from None
    amount = money.format_amount(row["amount"], money.currency(row["currency"]))
    data = {
        "id": row["id"],
        "state": row["state"],
        "credited": f"{amount} {row['currency']}" if outcome == "won" else None,
    }
    credited = f", {amount} {row['currency']} credited back" if outcome == "won" else ""
    emit(as_json, data, [f"dispute {dispute_id} {row['state']}{credited}"])


@chargeback.command("codes")
@json_option
def chargeback_codes(as_json: bool) -> None:
    """The Visa and Mastercard reason codes a chargeback may name, and what they mean."""
    data = [{"scheme": c.scheme, "code": c.code, "meaning": c.meaning} for c in reason_codes().values()]
    emit(as_json, data, [f"{d['scheme']:<10}  {d['code']:<7} {d['meaning']}" for d in data])


COMMANDS = (chargeback,)
