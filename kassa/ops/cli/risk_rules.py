"""Risk rules: ``kassa rule create|list|show|add|remove|disable|enable`` (docs/risk.md). Each change is
written to the audit log as done by ``cli:{the OS user}``. A card is blocked by its fingerprint, or by naming
an order paid with it (``--card-of-order``): a card number is never typed on a command line."""

from __future__ import annotations

from typing import IO, Any

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.core import risk as core_risk
from kassa.domain import risk
from kassa.domain.operators import Action
from kassa.domain.risk import Kind, Mode, RuleError
from kassa.ops.cli.common import cli_actor, emit, json_option, read, write
from kassa.storage import audit_log
from kassa.storage import merchants as merchant_store
from kassa.storage import risk as store


@click.group()
def rule() -> None:
    """Risk rules: block lists, velocity limits and amounts above which 3-D Secure is required, that filter
    an endpoint's or a merchant's sales."""


def _lines_of(source: IO[str]) -> list[str]:
    """A list file's entries: one a line, blank lines and ``#`` comments left out."""
    return [entry for line in source if (entry := line.split("#", 1)[0].strip())]


def _checked(unit: Any) -> Any:
    try:
        return unit()
    except RuleError as problem:
        raise click.UsageError(str(problem)) from None


@rule.command("create")
@click.option("--kind", required=True, type=click.Choice([k.value for k in Kind]), help="What the rule looks at.")
@click.option("--merchant", help="The login of the merchant whose endpoints it screens.")
@click.option("--endpoint", type=int, help="The one endpoint it screens.")
@click.option("--value", "values", multiple=True, help="A block list's entry (repeat it): see docs/risk.md.")
@click.option(
    "--values-file",
    type=click.File("r"),
    default=None,
    help="A file of block list entries, one a line (# starts a comment); - reads standard input.",
)
@click.option("--card-of-order", "card_orders", type=int, multiple=True, help="Block the card this order paid with.")
@click.option("--per", type=click.Choice(["card", "email", "ip"]), help="A limit's key.")
@click.option("--limit", type=int, help="A limit: sales (count) or minor units (sum).")
@click.option("--window", help="A limit's window: 30m, 24h, 7d.")
@click.option("--amount", type=int, help="three-ds-above: the minor units above which 3-D Secure is required.")
@click.option("--currency", help="A sum limit's currency, or the one a three-ds-above rule compares.")
@click.option("--dry-run", is_flag=True, help="Count what it would filter; filter nothing.")
@click.option("--note", default="", help="Why the rule exists, for the next analyst (up to 200 characters).")
@json_option
def rule_create(
    kind: str,
    merchant: str | None,
    endpoint: int | None,
    values: tuple[str, ...],
    values_file: IO[str] | None,
    card_orders: tuple[int, ...],
    per: str | None,
    limit: int | None,
    window: str | None,
    amount: int | None,
    currency: str | None,
    dry_run: bool,
    note: str,
    as_json: bool,
) -> None:
    """Create a rule; it screens new orders within the gateway's endpoint cache time (2 s by default)."""
    rule_kind = Kind(kind)
    if card_orders and rule_kind is not Kind.CARD:
        raise click.UsageError("--card-of-order is for a card block list (--kind card)")
    if len(note) > 200:
        raise click.BadParameter("at most 200 characters", param_hint="--note")
    velocity = _checked(lambda: risk.checked_velocity(rule_kind, per, limit, window, currency))
    threshold = _checked(lambda: risk.checked_threshold(rule_kind, amount, currency))
    mode = Mode.DRY_RUN if dry_run else Mode.ENFORCE
    listed = [*values, *(_lines_of(values_file) if values_file else [])]

    def create(conn: Connection) -> int:
        scope: tuple[int | None, int | None] = _checked(lambda: store.scope_of(conn, merchant, endpoint))
        typed = [*listed, *_checked(lambda: store.cards_of_orders(conn, card_orders))]
        entries = _checked(lambda: risk.checked_entries(rule_kind, typed))
        new = store.NewRule(rule_kind, mode, *scope, entries, velocity, note, cli_actor(), threshold)
        rule_id = store.create(conn, new, now_ms())
        after = store.recorded(conn, rule_id)
        entry = audit_log.Entry(cli_actor(), Action.RULE_CREATE.code, f"rule {rule_id}", after=after)
        audit_log.append(conn, entry, now_ms())
        return rule_id

    rule_id = write(create)
    core_risk.forget()
    shown = read(lambda conn: store.shown(conn, rule_id, now_ms()))
    emit(as_json, shown, [f"rule {rule_id} created", *_lines(shown)[1:]])


_VALUES = (
    click.option("--value", "values", multiple=True, help="An entry (repeat it)."),
    click.option("--values-file", type=click.File("r"), default=None, help="Entries one a line; - reads stdin."),
)


def _with_values(command: Any) -> Any:
    for option in reversed(_VALUES):
        command = option(command)
    return command


def _entries_change(rule_id: int, added: list[str], removed: list[str], as_json: bool) -> None:
    """Adds or removes a block list's entries, as checked for its kind; audited with the change."""

    def change(conn: Connection) -> list[str]:
        found = store.find(conn, rule_id)
        if found is None:
            raise merchant_store.NotFound(f"no rule {rule_id}")
        kind = Kind(found["kind"])
        checked = _checked(lambda: [risk.checked_entries(kind, each) if each else () for each in (added, removed)])
        changed: list[str] = _checked(lambda: store.change_entries(conn, rule_id, *checked))
        entry = audit_log.Entry(cli_actor(), Action.RULE_CHANGE.code, f"rule {rule_id}", after={"entries": changed})
        audit_log.append(conn, entry, now_ms())
        return changed

    changed = write(change)
    core_risk.forget()
    shown = read(lambda conn: store.shown(conn, rule_id, now_ms()))
    emit(as_json, {**shown, "changed": changed}, [f"rule {rule_id}: {len(changed)} entries changed", _line(shown)])


@rule.command("add")
@click.argument("rule_id", type=int)
@_with_values
@click.option("--card-of-order", "card_orders", type=int, multiple=True, help="The card this order paid with.")
@json_option
def rule_add(
    rule_id: int, values: tuple[str, ...], values_file: IO[str] | None, card_orders: tuple[int, ...], as_json: bool
) -> None:
    """Add entries to an enabled block list (those it has already are left as they are)."""
    cards = read(lambda conn: _checked(lambda: store.cards_of_orders(conn, card_orders)))
    added = [*values, *(_lines_of(values_file) if values_file else []), *cards]
    if not added:
        raise click.UsageError("nothing to add: give --value, --values-file or --card-of-order")
    _entries_change(rule_id, added, [], as_json)


@rule.command("remove")
@click.argument("rule_id", type=int)
@_with_values
@json_option
def rule_remove(rule_id: int, values: tuple[str, ...], values_file: IO[str] | None, as_json: bool) -> None:
    """Remove entries from an enabled block list; one it does not hold refuses the whole change."""
    removed = [*values, *(_lines_of(values_file) if values_file else [])]
    if not removed:
        raise click.UsageError("nothing to remove: give --value or --values-file")
    _entries_change(rule_id, [], removed, as_json)


@rule.command("list")
@click.option("--all", "include_disabled", is_flag=True, help="Disabled rules too.")
@json_option
def rule_list(include_disabled: bool, as_json: bool) -> None:
    """The rules, enabled ones only unless --all; a block list's entries are counted, not listed."""
    rows = read(lambda conn: store.listed(conn, include_disabled=include_disabled))
    described = [store.described(row) for row in rows]
    emit(as_json, described, [_line(d) for d in described] or ["no rules"])


@rule.command("show")
@click.argument("rule_id", type=int)
@json_option
def rule_show(rule_id: int, as_json: bool) -> None:
    """One rule with its entries and the orders it filtered (or in dry-run would have) in the last day and
    the last 30 days."""
    shown = read(lambda conn: store.shown(conn, rule_id, now_ms()))
    emit(as_json, shown, _lines(shown))


@rule.command("disable")
@click.argument("rule_id", type=int)
@json_option
def rule_disable(rule_id: int, as_json: bool) -> None:
    """Stop a rule (kept, with its counts: orders name it). It stops screening within the endpoint cache time."""
    _switch(rule_id, enabled=False, as_json=as_json)


@rule.command("enable")
@click.argument("rule_id", type=int)
@json_option
def rule_enable(rule_id: int, as_json: bool) -> None:
    """Start a disabled rule again, as it was. It screens again within the endpoint cache time."""
    _switch(rule_id, enabled=True, as_json=as_json)


def _switch(rule_id: int, *, enabled: bool, as_json: bool) -> None:
    action, word = (Action.RULE_ENABLE, "enabled") if enabled else (Action.RULE_DISABLE, "disabled")

    def change(conn: Connection) -> None:
        store.switch(conn, rule_id, enabled=enabled, now_ms=now_ms())
        before, after = {"enabled": not enabled}, {"enabled": enabled}
        entry = audit_log.Entry(cli_actor(), action.code, f"rule {rule_id}", before=before, after=after)
        audit_log.append(conn, entry, now_ms())

    write(change)
    core_risk.forget()
    shown = read(lambda conn: store.shown(conn, rule_id, now_ms()))
    emit(as_json, shown, [f"rule {rule_id} {word}", *_lines(shown)[1:]])


def _what(d: dict[str, Any]) -> str:
    if d["three_ds_above"] is not None:
        above = d["three_ds_above"]
        return f"3-D Secure required above {above['amount']} {above['currency']} minor units"
    if d["limit"] is None:
        return f"{d['entry_count']} entries"
    limit = d["limit"]
    unit = f" {limit['currency']} minor units" if limit["currency"] else " sales"
    return f"at most {limit['limit']}{unit} per {limit['per']} in {limit['window']}"


def _line(d: dict[str, Any]) -> str:
    scope = f"merchant {d['merchant_id']}" if d["merchant_id"] is not None else f"endpoint {d['endpoint_id']}"
    state = "enabled" if d["enabled"] else "disabled"
    return f"{d['id']}\t{d['kind']}\t{d['mode']}\t{state}\t{scope}\t{_what(d)}\tcode {d['error_code']}"


def _lines(d: dict[str, Any]) -> list[str]:
    lines = [_line(d), f"created {d['created_at']} by {d['created_by']}"]
    if d["disabled_at"]:
        lines.append(f"disabled {d['disabled_at']}")
    if d["note"]:
        lines.append(f"note: {d['note']}")
    lines.append(f"filtered: {d['filtered']['last_day']} in the last day, {d['filtered']['last_30_days']} in 30 days")
    lines += [f"  {entry}" for entry in d["entries"]]
    return lines


COMMANDS = (rule,)
