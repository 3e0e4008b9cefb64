"""Risk rules as stored (``risk_rules``), their velocity counts (``risk_velocity``) and the orders they
filtered or would have (``risk_hits``). A velocity key's buckets are read by primary key under a lock on
the key (PostgreSQL: a transaction-scoped advisory lock; SQLite: its one writer), so that of concurrent
sales on one key each sees the others' counts: none slips through a limit."""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import (
    BigInteger,
    Connection,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from kassa.domain.risk import (
    BLOCK_LISTS,
    Kind,
    Mode,
    Per,
    Rule,
    RuleError,
    Threshold,
    Velocity,
    describe_window,
    window_start,
)
from kassa.storage.merchants import NotFound
from kassa.storage.prepared import Prepared, Record
from kassa.storage.tables import (
    cards,
    endpoints,
    merchants,
    orders,
    risk_hits,
    risk_rules,
    risk_three_ds,
    risk_velocity,
    transactions,
)

RuleRow = tuple[Any, ...]  # a rule's row as read, every column: equal rows are the same rule


@dataclass(frozen=True, slots=True)
class NewRule:
    kind: Kind
    mode: Mode
    merchant_id: int | None
    endpoint_id: int | None
    entries: tuple[str, ...]
    velocity: Velocity | None
    note: str
    created_by: str
    threshold: Threshold | None = None


def scope_of(conn: Connection, merchant_login: str | None, endpoint_id: int | None) -> tuple[int | None, int | None]:
    """The merchant's id or the endpoint's a rule is for, or ``RuleError`` naming the option."""
    if (merchant_login is None) == (endpoint_id is None):
        raise RuleError("give --merchant LOGIN or --endpoint ID: a rule applies to one of them")
    if merchant_login is not None:
        found = conn.execute(select(merchants.c.id).where(merchants.c.login == merchant_login)).scalar()
        if found is None:
            raise RuleError(f"--merchant: no merchant {merchant_login[:40]!r}")
        return int(found), None
    if conn.execute(select(endpoints.c.id).where(endpoints.c.id == endpoint_id)).scalar() is None:
        raise RuleError(f"--endpoint: no endpoint {endpoint_id}")
    return None, endpoint_id


def cards_of_orders(conn: Connection, order_ids: Sequence[int]) -> list[str]:
    """The fingerprints of the cards the orders were paid with, or ``RuleError`` naming an order without."""
    found = []
    for order_id in order_ids:
        fingerprint = conn.execute(
            select(cards.c.pan_fingerprint).join(orders, orders.c.card_id == cards.c.id).where(orders.c.id == order_id)
        ).scalar()
        if fingerprint is None:
            raise RuleError(f"--card-of-order: order {order_id} does not exist or has no card")
        found.append(str(fingerprint))
    return found


def create(conn: Connection, new: NewRule, now_ms: int) -> int:
    """A rule stored: a limit's settings, or a 3-D Secure rule's amount and currency, in the same columns."""
    v, t = new.velocity, new.threshold
    values = {
        "kind": new.kind.value,
        "mode": new.mode.value,
        "merchant_id": new.merchant_id,
        "endpoint_id": new.endpoint_id,
        "entries": orjson.dumps(list(new.entries)).decode(),
        "per": v.per.value if v else None,
        "limit_value": v.limit if v else t.amount if t else None,
        "window_ms": v.window_ms if v else None,
        "currency": v.currency if v else t.currency if t else None,
        "note": new.note,
        "created_by": new.created_by,
        "created_at_ms": now_ms,
    }
    rule_id: int = conn.execute(insert(risk_rules).values(values).returning(risk_rules.c.id)).scalar_one()
    return rule_id


def disable(conn: Connection, rule_id: int, now_ms: int) -> bool:
    """False when there is no such rule or it was disabled before."""
    done = conn.execute(
        update(risk_rules)
        .where(risk_rules.c.id == rule_id, risk_rules.c.disabled_at_ms.is_(None))
        .values(disabled_at_ms=now_ms)
    )
    return done.rowcount == 1


def switch(conn: Connection, rule_id: int, *, enabled: bool, now_ms: int) -> None:
    """Enables or disables the rule; ``merchants.NotFound`` naming why not when there is no such rule or it
    is so already."""
    if not (enable(conn, rule_id) if enabled else disable(conn, rule_id, now_ms)):
        state = "enabled" if enabled else "disabled"
        raise NotFound(f"no rule {rule_id}" if find(conn, rule_id) is None else f"rule {rule_id} is {state} already")


def enable(conn: Connection, rule_id: int) -> bool:
    """False when there is no such rule or it is enabled. Its velocity counts are those kept: the sales made
    while it was disabled were not counted."""
    done = conn.execute(
        update(risk_rules)
        .where(risk_rules.c.id == rule_id, risk_rules.c.disabled_at_ms.is_not(None))
        .values(disabled_at_ms=None)
    )
    return done.rowcount == 1


def change_entries(conn: Connection, rule_id: int, added: Sequence[str], removed: Sequence[str]) -> list[str]:
    """An enabled block list with ``added`` (those it lacks) and without ``removed``: the entries it changed
    by, in that order ("+entry", "-entry"); ``merchants.NotFound`` or ``RuleError`` when it cannot be."""
    row = conn.execute(select(risk_rules).where(risk_rules.c.id == rule_id).with_for_update()).mappings().first()
    if row is None:
        raise NotFound(f"no rule {rule_id}")
    if row["disabled_at_ms"] is not None:
        raise RuleError(f"rule {rule_id} is disabled: create a new one")
    if Kind(row["kind"]) not in BLOCK_LISTS:
        raise RuleError(f"rule {rule_id} is a limit, not a block list: create a new one to change it")
    before: list[str] = orjson.loads(row["entries"])
    held = set(before)
    missing = [entry for entry in removed if entry not in held]
    if missing:
        raise RuleError(f"--value: {missing[0][:40]!r} is not on rule {rule_id}'s list")
    gone = set(removed)
    new = [entry for entry in dict.fromkeys([*before, *added]) if entry not in gone]
    conn.execute(update(risk_rules).where(risk_rules.c.id == rule_id).values(entries=orjson.dumps(new).decode()))
    return [f"+{e}" for e in dict.fromkeys(added) if e not in held] + [f"-{e}" for e in dict.fromkeys(removed)]


def find(conn: Connection, rule_id: int) -> Record | None:
    row = conn.execute(select(risk_rules).where(risk_rules.c.id == rule_id)).mappings().first()
    return None if row is None else dict(row)


def listed(conn: Connection, *, include_disabled: bool) -> list[Record]:
    query = select(risk_rules).order_by(risk_rules.c.id)
    if not include_disabled:
        query = query.where(risk_rules.c.disabled_at_ms.is_(None))
    return [dict(row) for row in conn.execute(query).mappings()]


def enabled_rules(conn: Connection, known: Mapping[RuleRow, Rule]) -> dict[RuleRow, Rule]:
    """Every enabled rule by its row, in id order (the order they run and lock their keys in). A row found
    in ``known`` (the previous read's) is not parsed again: a block list of thousands of networks takes tens
    of milliseconds to parse, and every process reads the rules every few seconds."""
    query = select(risk_rules).where(risk_rules.c.disabled_at_ms.is_(None)).order_by(risk_rules.c.id)
    rules: dict[RuleRow, Rule] = {}
    for row in conn.execute(query):
        values = tuple(row)
        found = known.get(values)
        rules[values] = found if found is not None else rule_of(row._asdict())
    return rules


def rule_of(row: Record) -> Rule:
    kind, velocity, threshold = Kind(row["kind"]), None, None
    if row["per"] is not None:
        velocity = Velocity(Per(row["per"]), row["limit_value"], row["window_ms"], row["currency"])
    elif kind is Kind.THREE_DS:
        threshold = Threshold(row["limit_value"], row["currency"])
    return Rule(
        id=row["id"],
        kind=kind,
        mode=Mode(row["mode"]),
        merchant_id=row["merchant_id"],
        endpoint_id=row["endpoint_id"],
        entries=tuple(orjson.loads(row["entries"])),
        velocity=velocity,
        threshold=threshold,
    )


def card_facts(conn: Connection, card_id: int) -> tuple[str, str]:
    """A stored card's fingerprint and BIN: what rules know a rebill's card by."""
    row = conn.execute(select(cards.c.pan_fingerprint, cards.c.bin).where(cards.c.id == card_id)).one()
    return row[0], row[1]


def key_digest(per: Per, value: str) -> int:
    """The velocity key a value is counted under: e-mail addresses and IP addresses are not stored, only the
    first 64 bits of a digest (two keys of one limit meet by chance about once in 3,700 when it has seen
    a hundred million of them, and then share a count)."""
    return int.from_bytes(hashlib.sha256((per + ":" + value).encode()).digest()[:8], "big", signed=True)


# Run for every sale the limits screen: compiled once, on the driver's cursor (``storage.prepared``), by
# the number of keys at once. Constants are written into the SQL and no name is bound twice, so that the
# keys' values go to SQLite in order as they are (``Prepared.execute_values``).
_LOCKS: dict[int, Prepared] = {}
_TOTALS: dict[tuple[bool, ...], Prepared] = {}
_COUNTS: dict[int, Prepared] = {}
_ONE: Any = literal_column("1")


def _locks_of(count: int) -> Prepared:
    found = _LOCKS.get(count)
    if found is None:
        locks = (func.pg_advisory_xact_lock(bindparam(f"r{n}"), bindparam(f"k{n}")) for n in range(count))
        found = _LOCKS[count] = Prepared(select(*locks))
    return found


def _totals_of(summed: tuple[bool, ...]) -> Prepared:
    """The counts of as many keys as ``summed`` has, each over its own window, in one row: a key's number
    of sales, or with ``summed`` their amount, by one index range each. One row of scalar subqueries took
    SQLite 5.8 µs for five keys against 7.6 for a ``UNION ALL`` of one aggregate row each; an ``OR`` of
    the ranges with ``GROUP BY`` sorted them in a temporary B-tree, slower still."""
    found = _TOTALS.get(summed)
    if found is None:
        c = risk_velocity.c
        found = _TOTALS[summed] = Prepared(
            select(
                *(
                    select(_total(c.amount if by_amount else c.count))
                    .where(
                        c.rule_id == bindparam(f"r{n}"), c.key == bindparam(f"k{n}"), c.bucket_ms >= bindparam(f"s{n}")
                    )
                    .scalar_subquery()
                    .label(f"t{n}")
                    for n, by_amount in enumerate(summed)
                )
            )
        )
    return found


def _total(column: Any) -> Any:
    """A column's sum over a key's buckets as an integer, 0 when there are none (PostgreSQL sums bigints
    as numeric)."""
    return func.coalesce(cast(func.sum(column), BigInteger), literal_column("0")).label(column.key)


def _counts_of(count: int) -> Prepared:
    """A sale counted under ``count`` keys at once: one ``INSERT`` of a row a key, each adding to its
    bucket's row when there is one (a key's rule is in it once, so no row is written twice)."""
    found = _COUNTS.get(count)
    if found is None:
        found = _COUNTS[count] = Prepared(_counting(sqlite_insert, count), postgresql=_counting(pg_insert, count))
    return found


def _counting(dialect_insert: Any, count: int) -> Any:
    rows = [
        {"rule_id": bindparam(f"r{n}"), "key": bindparam(f"k{n}"), "bucket_ms": bindparam(f"b{n}"), "count": _ONE,
         "amount": bindparam(f"a{n}")}
        for n in range(count)
    ]  # fmt: skip
    statement = dialect_insert(risk_velocity).values(rows)
    return statement.on_conflict_do_update(
        index_elements=[risk_velocity.c.rule_id, risk_velocity.c.key, risk_velocity.c.bucket_ms],
        set_={"count": risk_velocity.c.count + _ONE, "amount": risk_velocity.c.amount + statement.excluded.amount},
    )


def lock_keys(conn: Connection, keys: Iterable[tuple[int, int]]) -> None:
    """Serializes the sales counted under each (rule, key) until the transaction ends, the locks taken in
    the order given (PostgreSQL evaluates a select list left to right), in one statement; SQLite's one
    writer serializes them already, and ``keys`` is not read. Two-int advisory locks do not meet the
    migration's one-bigint lock."""
    if conn.dialect.name == "postgresql":
        values = [v for rule_id, key in keys for v in (rule_id, key >> 32)]
        _locks_of(len(values) // 2).execute_values(conn, values)


def totals(conn: Connection, keys: Sequence[tuple[int, int, int, bool]]) -> list[int]:
    """What was counted under each (rule, key, first bucket, summed) from its first bucket on, in the
    order given: the number of sales, or with ``summed`` their amount."""
    summed = tuple(key[3] for key in keys)
    values = [value for rule_id, key, first, _ in keys for value in (rule_id, key, first)]
    return list(_totals_of(summed).execute_values(conn, values).fetchone())


def count_sales(conn: Connection, counted: Sequence[tuple[int, int, int]], amount: int) -> None:
    """A sale of ``amount`` counted under each (rule, key, bucket)."""
    if counted:
        _counts_of(len(counted)).execute_values(conn, [v for key in counted for v in (*key, amount)])


def record_hits(conn: Connection, order_id: int, hits: Sequence[tuple[int, bool]], now_ms: int) -> None:
    """The rules (id, dry-run) that filtered the order or would have; a hit recorded before (a worker's job
    run again) is kept as it was."""
    rows = [{"rule_id": r, "order_id": order_id, "dry_run": dry, "at_ms": now_ms} for r, dry in hits]
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    conn.execute(dialect_insert(risk_hits).on_conflict_do_nothing(), rows)


def mark_three_ds(conn: Connection, transaction_id: int, rules: Sequence[Rule], mode: Mode) -> None:
    """The 3-D Secure rules a first authorization is above, and how they treat it (``three_ds_mode``)."""
    conn.execute(insert(risk_three_ds), [{"transaction_id": transaction_id, "rule_id": r.id} for r in rules])
    conn.execute(update(transactions).where(transactions.c.id == transaction_id).values(three_ds_rules=mode.value))


def three_ds_rules_of(conn: Connection, transaction_id: int) -> tuple[Rule, ...]:
    """The 3-D Secure rules the transaction was marked for as its order was opened, in id order."""
    query = (
        select(risk_rules)
        .join(risk_three_ds, risk_three_ds.c.rule_id == risk_rules.c.id)
        .where(risk_three_ds.c.transaction_id == transaction_id)
        .order_by(risk_rules.c.id)
    )
    return tuple(rule_of(dict(row)) for row in conn.execute(query).mappings())


FILTERED_PAGE = 50


def filtered_orders(conn: Connection, rule_id: int, before_order_id: int | None = None) -> list[tuple[int, int]]:
    """The orders the rule filtered (or in dry-run would have), most recent first, as (order id, when):
    ``FILTERED_PAGE`` of them and one more (there are older ones), older than ``before_order_id``'s when
    given. Read along ``ix_risk_hits_rule_time``."""
    h = risk_hits.c
    conditions = [h.rule_id == rule_id]
    if before_order_id is not None:
        at = conn.execute(select(h.at_ms).where(h.rule_id == rule_id, h.order_id == before_order_id)).scalar()
        if at is None:
            return []
        conditions += [h.at_ms <= at, or_(h.at_ms < at, h.order_id < before_order_id)]
    query = (select(h.order_id, h.at_ms).where(*conditions).order_by(h.at_ms.desc(), h.order_id.desc())).limit(
        FILTERED_PAGE + 1
    )
    return [(int(row[0]), int(row[1])) for row in conn.execute(query)]


def filtered_by(conn: Connection, order_id: int) -> int | None:
    """The rule that filtered the order, if one did."""
    found = conn.execute(
        select(risk_hits.c.rule_id).where(risk_hits.c.order_id == order_id, risk_hits.c.dry_run.is_(False))
    ).first()
    return None if found is None else int(found[0])


def hit_counts(conn: Connection, rule_id: int, since_ms: int) -> int:
    """The orders the rule filtered (or in dry-run would have) since ``since_ms``."""
    return int(
        conn.execute(
            select(func.count())
            .select_from(risk_hits)
            .where(risk_hits.c.rule_id == rule_id, risk_hits.c.at_ms >= since_ms)
        ).scalar_one()
    )


def prune(conn: Connection, now_ms: int) -> int:
    """Deletes the velocity counts no window counts any more (all of a disabled rule's): an index range per
    limit. Run by every scheduler; where another just ran, it finds nothing."""
    deleted = 0
    for row in listed(conn, include_disabled=True):
        found = rule_of(row)
        if found.velocity is None:
            continue
        before = now_ms + 1 if row["disabled_at_ms"] is not None else window_start(found.velocity, now_ms)
        done = conn.execute(
            delete(risk_velocity).where(risk_velocity.c.rule_id == found.id, risk_velocity.c.bucket_ms < before)
        )
        deleted += done.rowcount
    return deleted


DAY_MS = 86_400_000


def recorded(conn: Connection, rule_id: int) -> dict[str, Any]:
    """A rule as operators read it (``described``) with its entries, as the audit log keeps it;
    ``merchants.NotFound`` when there is none."""
    row = find(conn, rule_id)
    if row is None:
        raise NotFound(f"no rule {rule_id}")
    return {**described(row), "entries": orjson.loads(row["entries"])}


def shown(conn: Connection, rule_id: int, now_ms: int) -> dict[str, Any]:
    """``recorded``, with the orders the rule filtered (or in dry-run would have) in the last day and the
    last 30 days."""
    counts = {
        "last_day": hit_counts(conn, rule_id, now_ms - DAY_MS),
        "last_30_days": hit_counts(conn, rule_id, now_ms - 30 * DAY_MS),
    }
    return {**recorded(conn, rule_id), "filtered": counts}


def described(row: Record) -> dict[str, Any]:
    """A rule for operators: its limit in words; a block list's entries counted, not listed."""
    found = rule_of(row)
    limit = None
    if found.velocity is not None:
        v = found.velocity
        limit = {"per": v.per.value, "limit": v.limit, "window": describe_window(v.window_ms), "currency": v.currency}
    t = found.threshold
    return {
        "id": found.id,
        "kind": found.kind.value,
        "mode": found.mode.value,
        "enabled": row["disabled_at_ms"] is None,
        "merchant_id": found.merchant_id,
        "endpoint_id": found.endpoint_id,
        "entry_count": len(found.entries),
        "limit": limit,
        "three_ds_above": None if t is None else {"amount": t.amount, "currency": t.currency},
        "error_code": found.error_code,
        "note": row["note"],
        "created_by": row["created_by"],
        "created_at": _iso(row["created_at_ms"]),
        "disabled_at": _iso(row["disabled_at_ms"]),
    }


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat(timespec="milliseconds")
