"""Risk rules run in an order's opening transaction (CONTRACT §16): an order a rule filters ends
``filtered`` there and then, its callbacks queued, no processing job written, nothing sent to any
acquirer. Rules are cached per process for as long as endpoints are (KASSA_ENDPOINT_CACHE_SECONDS), so
that a deployment with no rules reads none per sale."""

from __future__ import annotations

import dataclasses
import time
import weakref
from dataclasses import dataclass

import orjson
from sqlalchemy import Connection, Engine

from kassa.core import outcomes
from kassa.domain import rebills, risk
from kassa.domain.lifecycle import Stage
from kassa.domain.risk import Kind, Mode, Per, Rule, Sale, Velocity, Verdict
from kassa.domain.transactions import TxType
from kassa.processors.interface import Outcome
from kassa.storage import risk as store
from kassa.storage.orders import NewCard, NewOrder, Started
from kassa.storage.prepared import Record
from kassa.storage.risk import RuleRow

_cache_seconds = 2.0  # the process's endpoint cache time (``cache_for``)


@dataclass(frozen=True, slots=True)
class _Read:
    until: float  # time.monotonic()
    by_row: dict[RuleRow, Rule]
    rules: tuple[Rule, ...]
    scoped: dict[tuple[int, int], tuple[Rule, ...]] = dataclasses.field(default_factory=dict)  # by endpoint


_cache: weakref.WeakKeyDictionary[Engine, _Read] = weakref.WeakKeyDictionary()


def rules_for(conn: Connection, merchant_id: int, endpoint_id: int) -> tuple[Rule, ...]:
    """The enabled rules of the endpoint and of its merchant, as this process last read them."""
    now = time.monotonic()
    cached = _cache.get(conn.engine)
    if cached is None or cached.until <= now:
        by_row = store.enabled_rules(conn, {} if cached is None else cached.by_row)
        cached = _cache[conn.engine] = _Read(now + _cache_seconds, by_row, tuple(by_row.values()))
    if not cached.rules:
        return ()
    found = cached.scoped.get((merchant_id, endpoint_id))
    if found is None:
        found = tuple(r for r in cached.rules if r.endpoint_id == endpoint_id or r.merchant_id == merchant_id)
        cached.scoped[merchant_id, endpoint_id] = found
    return found


def cache_for(seconds: float) -> None:
    """How long this process keeps the rules it read: as long as its endpoints (a process-wide
    setting, set once at start-up)."""
    global _cache_seconds
    _cache_seconds = seconds
    _cache.clear()


def forget() -> None:
    """Drops the rules this process cached, so that it sees an operator's change at once; other processes
    see it within the cache time."""
    _cache.clear()


@dataclass(frozen=True, slots=True)
class Screened:
    """What the rules made of an order's first transaction."""

    filtered: bool = False  # recorded ``filtered``, its callbacks queued
    three_ds: Mode | None = None  # it goes on above 3-D Secure rules' amounts (``risk.three_ds_mode``)


_WENT_ON = Screened()


def screen(conn: Connection, rules: tuple[Rule, ...], new: NewOrder, started: Started) -> Started:
    """Runs ``rules`` on the order just opened: ``started`` marked ``decided`` when a rule filtered it (its
    callbacks queued), or with the 3-D Secure rules' mark when it goes on."""
    done = screen_sale(conn, rules, _sale(conn, new), started.order_id, started.transaction_id, new.now_ms)
    if done == _WENT_ON:
        return started  # as most sales do: ``dataclasses.replace`` costs 4 µs
    return dataclasses.replace(started, decided=done.filtered, three_ds_rules=done.three_ds)


def screen_sale(
    conn: Connection, rules: tuple[Rule, ...], sale: Sale, order_id: int, transaction_id: int, now_ms: int
) -> Screened:
    """Whether one of ``rules`` filtered the order's first transaction (then recorded ``filtered``, its
    callbacks queued). Dry-run rules that would have filtered it are recorded; the sale is counted by the
    velocity limits only when it goes on, and marked with the 3-D Secure rules whose amount it is above
    (the worker enforces them when the card's issuer offers no authentication)."""
    verdict = risk.screen_lists(rules, sale)
    counted: list[tuple[int, int, int]] = []
    if verdict.filtered_by is None:
        verdict, counted = _velocity(conn, rules, sale, verdict, now_ms)
    record_hits(conn, order_id, verdict, now_ms)
    if verdict.filtered_by is None:
        store.count_sales(conn, counted, sale.amount)
        return Screened(three_ds=_mark_three_ds(conn, rules, sale, transaction_id))
    outcomes.record(conn, transaction_id, filtered(verdict.filtered_by), now_ms)
    return Screened(filtered=True)


def _mark_three_ds(conn: Connection, rules: tuple[Rule, ...], sale: Sale, transaction_id: int) -> Mode | None:
    above = risk.above_threshold(rules, sale)
    mode = risk.three_ds_mode(above)
    if mode is not None:
        store.mark_three_ds(conn, transaction_id, above, mode)
    return mode


def unauthenticated(conn: Connection, transaction_id: int) -> Verdict:
    """The verdict on a transaction marked for 3-D Secure rules whose card's issuer offered no
    authentication (``risk.unauthenticated``)."""
    return risk.unauthenticated(store.three_ds_rules_of(conn, transaction_id))


def filtered(rule: Rule) -> Outcome:
    """The outcome of an order ``rule`` filtered: its kind's error-code, and the limit it holds."""
    return Outcome(Stage.FILTERED, rule.error_code, rule.error_message())


def record_hits(conn: Connection, order_id: int, verdict: Verdict, now_ms: int) -> None:
    """The rules that filtered the order (``verdict.filtered_by``) or would have (its dry-run ones); those
    recorded before are kept as they were."""
    hits = [(r.id, True) for r in verdict.would_filter]
    if verdict.filtered_by is not None:
        hits.append((verdict.filtered_by.id, False))
    if hits:
        store.record_hits(conn, order_id, hits, now_ms)


def collected_sale(order: Record, card: NewCard) -> Sale:
    """What rules look at in a hosted form's order, once its card is collected."""
    return Sale(
        order["merchant_id"],
        order["endpoint_id"],
        order["amount"],
        order["currency"],
        card.pan_fingerprint,
        card.bin,
        order["email"],
        _ip(order["customer"]),
        risk.cardholder_payment(
            TxType(order["tx_type"]),
            merchant_initiated=rebills.merchant_initiated(order["card_ref_id"], order["recurring_payment_id"]),
        ),
    )


def _velocity(
    conn: Connection, rules: tuple[Rule, ...], sale: Sale, lists: Verdict, now_ms: int
) -> tuple[Verdict, list[tuple[int, int, int]]]:
    """The velocity limits' verdict after the block lists', and the counts to add if the sale goes on
    (rule, key, bucket). Dry-run limits count only a sale that goes on: one an enforcing limit filters
    keeps the block lists' dry-run hits alone. Keys are locked in rule id order, the same in every
    transaction, before their counts are read, all in one statement."""
    keyed = _keyed(rules, sale)
    if not keyed:
        return lists, []
    store.lock_keys(conn, ((rule.id, key) for rule, _, key in keyed))
    so_far = store.totals(
        conn,
        [(rule.id, key, risk.window_start(velocity, now_ms), rule.kind is Kind.SUM) for rule, velocity, key in keyed],
    )
    would = list(lists.would_filter)
    for (rule, _, _), total in zip(keyed, so_far, strict=True):
        if risk.exceeds(rule, total, sale):
            if rule.mode is risk.Mode.ENFORCE:
                return Verdict(rule, lists.would_filter), []
            would.append(rule)
    counted = [(rule.id, key, risk.bucket_of(velocity, now_ms)) for rule, velocity, key in keyed]
    return Verdict(None, tuple(would)), counted


def _keyed(rules: tuple[Rule, ...], sale: Sale) -> list[tuple[Rule, Velocity, int]]:
    """The limits that count the sale, each with its velocity and the key it counts the sale under. Limits
    on one card, e-mail or IP address share its digest."""
    digests: dict[tuple[Per, str], int] = {}
    keyed = []
    for rule in rules:
        velocity = rule.velocity
        if velocity is None or (value := risk.velocity_key(rule, sale)) is None:
            continue
        key = digests.get((velocity.per, value))
        if key is None:
            key = digests[velocity.per, value] = store.key_digest(velocity.per, value)
        keyed.append((rule, velocity, key))
    return keyed


def _sale(conn: Connection, new: NewOrder) -> Sale:
    fingerprint: str | None = None
    bin_: str | None = None
    if new.card is not None:
        fingerprint, bin_ = new.card.pan_fingerprint, new.card.bin
    elif new.card_id is not None:  # a rebill's, a recurring charge's or a payout's stored card
        fingerprint, bin_ = store.card_facts(conn, new.card_id)
    merchant_initiated = rebills.merchant_initiated(new.card_ref_id, new.recurring_payment_id)
    cardholder_payment = risk.cardholder_payment(new.tx_type, merchant_initiated=merchant_initiated)
    return Sale(
        new.merchant_id,
        new.endpoint_id,
        new.amount,
        new.currency,
        fingerprint,
        bin_,
        new.email,
        _ip(new.customer),
        cardholder_payment,
    )


def _ip(customer: str | None) -> str | None:
    """The customer's IP address among the order's customer fields (JSON), if the merchant sent one."""
    found = orjson.loads(customer).get("ipaddress") if customer else None
    return str(found) if found else None
