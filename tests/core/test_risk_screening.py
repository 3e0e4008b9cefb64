"""Risk rules run as an order is opened, on both backends: an order a rule filters ends ``filtered`` in the
opening transaction with no processing job, its CVV forgotten and its callbacks queued; velocity limits
count the sales that went on; dry-run rules count what they would filter and filter nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import orjson
import pytest
from sqlalchemy import func, select

from kassa.core import risk
from kassa.core.opening import open_order
from kassa.domain import risk as risk_domain
from kassa.domain.merchants import Mode as MerchantMode
from kassa.domain.risk import Kind, Mode, Per, Velocity
from kassa.domain.transactions import TxType
from kassa.storage import merchants as merchant_store
from kassa.storage import risk as risk_store
from kassa.storage.database import Database
from kassa.storage.orders import NewCard, NewOrder, Started
from kassa.storage.tables import callbacks, jobs, risk_velocity, transactions, transient_secrets
from tests.support.databases import shop_endpoint

FINGERPRINT = "f" * 64
OTHER_CARD = "e" * 64
HOUR = Velocity(Per.CARD, 2, 3_600_000)


@pytest.fixture(autouse=True)
def rules_read_every_time() -> Iterator[None]:
    risk.cache_for(0)
    yield
    risk.cache_for(2.0)


@pytest.fixture
def shop(db: Database) -> tuple[int, int]:
    return db.write_sync(shop_endpoint)


def _sale(
    shop: tuple[int, int],
    client_orderid: str,
    *,
    fingerprint: str = FINGERPRINT,
    bin_: str = "411111",
    email: str = "a@example.com",
    ip: str = "203.0.113.7",
    amount: int = 1042,
    now_ms: int = 1_000_000,
) -> NewOrder:
    merchant_id, endpoint_id = shop
    card = NewCard(b"ciphertext", fingerprint, bin_, "1111", "VISA", 12, 2030, "Jane Doe")
    customer = orjson.dumps({"ipaddress": ip}).decode()
    return NewOrder(
        merchant_id, endpoint_id, client_orderid, TxType.SALE, amount, "USD", email, "", customer,
        None, None, "https://shop.example/notify", None, "fingerprint", f"s-{client_orderid}", now_ms,
        card=card, cvv_ciphertext=b"cvv",
    )  # fmt: skip


def _rule(
    db: Database,
    shop: tuple[int, int],
    kind: Kind,
    *entries: str,
    velocity: Velocity | None = None,
    mode: Mode = Mode.ENFORCE,
    by_endpoint: bool = False,
) -> int:
    merchant_id, endpoint_id = shop
    scope = (None, endpoint_id) if by_endpoint else (merchant_id, None)
    new = risk_store.NewRule(kind, mode, *scope, entries, velocity, "", "cli:test")
    return db.write_sync(lambda conn: risk_store.create(conn, new, 0))


def _open(db: Database, new: NewOrder) -> Started:
    return db.write_sync(lambda conn: open_order(conn, new))


def _transaction(db: Database, started: Started) -> dict[str, object]:
    query = select(transactions).where(transactions.c.id == started.transaction_id)
    return dict(db.read_sync(lambda conn: conn.execute(query).mappings().one()))


def _count(db: Database, table: object, **where: object) -> int:
    query = select(func.count()).select_from(table)  # type: ignore[arg-type]
    for name, value in where.items():
        query = query.where(table.c[name] == value)  # type: ignore[attr-defined]
    return int(db.read_sync(lambda conn: conn.execute(query).scalar_one()))


def _filtered(db: Database, started: Started) -> bool:
    return _transaction(db, started)["stage"] == "filtered"


def test_a_filtered_order_ends_at_once_with_no_job_no_cvv_and_its_callbacks(
    db: Database, shop: tuple[int, int]
) -> None:
    rule_id = _rule(db, shop, Kind.CARD, FINGERPRINT)
    started = _open(db, _sale(shop, "o-1"))
    assert started.created and started.decided and started.job is None
    tx = _transaction(db, started)
    assert (tx["stage"], tx["error_code"]) == ("filtered", "4001")
    assert tx["error_message"] == f"Refused by risk rule {rule_id}: the card is on a block list"
    assert _count(db, jobs, transaction_id=started.transaction_id) == 0
    assert _count(db, transient_secrets, transaction_id=started.transaction_id) == 0
    assert _count(db, callbacks, order_id=started.order_id) == 1
    assert db.read_sync(lambda conn: risk_store.filtered_by(conn, started.order_id)) == rule_id


def test_an_order_no_rule_holds_goes_on_to_processing(db: Database, shop: tuple[int, int]) -> None:
    _rule(db, shop, Kind.CARD, OTHER_CARD)
    started = _open(db, _sale(shop, "o-1"))
    assert not started.decided
    assert _transaction(db, started)["stage"] == "processing"
    assert _count(db, jobs, transaction_id=started.transaction_id) == 1
    assert db.read_sync(lambda conn: risk_store.filtered_by(conn, started.order_id)) is None


@pytest.mark.parametrize(
    ("kind", "entry", "caught", "missed", "code"),
    [
        (Kind.BIN, "411100-411199", {"bin_": "411111"}, {"bin_": "411200"}, "4002"),
        (Kind.EMAIL, "fraud@example.com", {"email": "Fraud@Example.com"}, {"email": "a@example.com"}, "4003"),
        (Kind.IP, "198.51.100.0/24", {"ip": "198.51.100.9"}, {"ip": "198.51.101.9"}, "4004"),
    ],
)
def test_each_block_list_filters_what_it_holds_and_nothing_else(
    db: Database,
    shop: tuple[int, int],
    kind: Kind,
    entry: str,
    caught: dict[str, str],
    missed: dict[str, str],
    code: str,
) -> None:
    _rule(db, shop, kind, entry)
    hit = _open(db, _sale(shop, "o-hit", **caught))  # type: ignore[arg-type]
    miss = _open(db, _sale(shop, "o-miss", **missed))  # type: ignore[arg-type]
    assert _transaction(db, hit)["error_code"] == code and _filtered(db, hit)
    assert not _filtered(db, miss)


def test_a_count_limit_filters_the_sale_over_it_per_card(db: Database, shop: tuple[int, int]) -> None:
    rule_id = _rule(db, shop, Kind.COUNT, velocity=HOUR)
    first, second, third = (_open(db, _sale(shop, f"o-{n}")) for n in range(3))
    other_card = _open(db, _sale(shop, "o-other", fingerprint=OTHER_CARD))
    assert [_filtered(db, s) for s in (first, second, third, other_card)] == [False, False, True, False]
    tx = _transaction(db, third)
    assert tx["error_code"] == "4101"
    assert tx["error_message"] == f"Refused by risk rule {rule_id}: more than 2 sales per card in 1h"


def test_a_count_limit_forgets_sales_older_than_its_window(db: Database, shop: tuple[int, int]) -> None:
    _rule(db, shop, Kind.COUNT, velocity=HOUR)
    for n in range(2):
        _open(db, _sale(shop, f"o-{n}", now_ms=1_000_000))
    later = _open(db, _sale(shop, "o-later", now_ms=1_000_000 + 3_600_000 + 300_000))
    assert not _filtered(db, later)


def test_a_sum_limit_filters_the_sale_that_takes_the_e_mail_over_it(db: Database, shop: tuple[int, int]) -> None:
    _rule(db, shop, Kind.SUM, velocity=Velocity(Per.EMAIL, 3000, 86_400_000, "USD"))
    first = _open(db, _sale(shop, "o-1", amount=2000, fingerprint="1" * 64))
    over = _open(db, _sale(shop, "o-2", amount=1001, fingerprint="2" * 64))
    within = _open(db, _sale(shop, "o-3", amount=1000, fingerprint="3" * 64))
    assert [_filtered(db, s) for s in (first, over, within)] == [False, True, False]
    assert _transaction(db, over)["error_code"] == "4102"


def test_a_filtered_sale_is_not_counted_by_the_limits(db: Database, shop: tuple[int, int]) -> None:
    _rule(db, shop, Kind.COUNT, velocity=HOUR)
    for n in range(4):
        _open(db, _sale(shop, f"o-{n}"))
    assert int(db.read_sync(lambda conn: conn.execute(select(func.sum(risk_velocity.c.count))).scalar_one())) == 2


def test_a_dry_run_rule_counts_what_it_would_filter_and_filters_nothing(db: Database, shop: tuple[int, int]) -> None:
    rule_id = _rule(db, shop, Kind.COUNT, velocity=HOUR, mode=Mode.DRY_RUN)
    listed = _rule(db, shop, Kind.CARD, FINGERPRINT, mode=Mode.DRY_RUN)
    opened = [_open(db, _sale(shop, f"o-{n}")) for n in range(4)]
    assert not any(_filtered(db, s) for s in opened)
    assert db.read_sync(lambda conn: risk_store.hit_counts(conn, rule_id, 0)) == 2
    assert db.read_sync(lambda conn: risk_store.hit_counts(conn, listed, 0)) == 4
    assert all(db.read_sync(lambda conn, s=s: risk_store.filtered_by(conn, s.order_id)) is None for s in opened)


def test_an_endpoints_rule_leaves_the_merchants_other_endpoints_alone(db: Database, shop: tuple[int, int]) -> None:
    _rule(db, shop, Kind.CARD, FINGERPRINT, by_endpoint=True)
    spec = merchant_store.EndpointSpec(shop[0], "USD", MerchantMode.SANDBOX, False, "", None, None, False)
    other_endpoint = db.write_sync(lambda conn: merchant_store.create_endpoint(conn, spec, 0))
    elsewhere = dataclasses.replace(_sale(shop, "o-2"), endpoint_id=other_endpoint)
    assert _filtered(db, _open(db, _sale(shop, "o-1")))
    assert not _filtered(db, _open(db, elsewhere))


def test_a_disabled_rule_filters_nothing(db: Database, shop: tuple[int, int]) -> None:
    rule_id = _rule(db, shop, Kind.CARD, FINGERPRINT)
    assert db.write_sync(lambda conn: risk_store.disable(conn, rule_id, 5))
    assert not _filtered(db, _open(db, _sale(shop, "o-1")))
    assert not db.write_sync(lambda conn: risk_store.disable(conn, rule_id, 6))


def test_a_rebill_is_screened_by_its_stored_cards_fingerprint(db: Database, shop: tuple[int, int]) -> None:
    first = _open(db, _sale(shop, "o-1"))
    _rule(db, shop, Kind.CARD, FINGERPRINT)
    rebill = dataclasses.replace(_sale(shop, "r-1"), card=None, card_id=first.card_id, card_ref_id=None)
    assert _filtered(db, _open(db, rebill))


def test_a_repeated_client_orderid_is_not_screened_again(db: Database, shop: tuple[int, int]) -> None:
    _rule(db, shop, Kind.COUNT, velocity=HOUR)
    first = _open(db, _sale(shop, "o-1"))
    again = _open(db, dataclasses.replace(_sale(shop, "o-1"), serial="s-again"))
    assert (again.created, again.order_id) == (False, first.order_id)
    assert int(db.read_sync(lambda conn: conn.execute(select(func.sum(risk_velocity.c.count))).scalar_one())) == 1


def test_pruning_deletes_the_counts_out_of_the_window_and_all_of_a_disabled_rules(
    db: Database, shop: tuple[int, int]
) -> None:
    hourly = _rule(db, shop, Kind.COUNT, velocity=HOUR)
    daily = _rule(db, shop, Kind.COUNT, velocity=Velocity(Per.IP, 100, 86_400_000))
    _open(db, _sale(shop, "o-old", now_ms=1_000_000))
    _open(db, _sale(shop, "o-new", now_ms=1_000_000 + 3_600_000))
    # Two five-minute buckets of the hourly limit; one two-hour bucket of the daily one.
    assert _count(db, risk_velocity, rule_id=hourly) == 2 and _count(db, risk_velocity, rule_id=daily) == 1
    assert db.write_sync(lambda conn: risk_store.prune(conn, 1_000_000 + 3_600_000)) == 1
    assert _count(db, risk_velocity, rule_id=hourly) == 1 and _count(db, risk_velocity, rule_id=daily) == 1
    db.write_sync(lambda conn: risk_store.disable(conn, daily, 5))
    assert db.write_sync(lambda conn: risk_store.prune(conn, 1_000_000 + 3_600_000)) == 1
    assert _count(db, risk_velocity) == 1


def _three_ds_rule(db: Database, shop: tuple[int, int], amount: int, mode: Mode = Mode.ENFORCE) -> int:
    new = risk_store.NewRule(
        Kind.THREE_DS, mode, shop[0], None, (), None, "", "cli:test", risk_domain.Threshold(amount, "USD")
    )
    return db.write_sync(lambda conn: risk_store.create(conn, new, 0))


def test_a_sale_above_a_three_ds_rules_amount_goes_on_marked_with_it(db: Database, shop: tuple[int, int]) -> None:
    enforcing, dry = _three_ds_rule(db, shop, 1000), _three_ds_rule(db, shop, 500, Mode.DRY_RUN)
    above = _open(db, _sale(shop, "o-above", amount=1001))
    assert not above.decided and above.three_ds_rules is Mode.ENFORCE
    assert _transaction(db, above)["three_ds_rules"] == "enforce"
    assert _count(db, jobs, transaction_id=above.transaction_id) == 1  # the worker asks the issuer
    marked = db.read_sync(lambda conn: risk_store.three_ds_rules_of(conn, above.transaction_id))
    assert [r.id for r in marked] == [enforcing, dry]
    between = _open(db, _sale(shop, "o-between", amount=1000))
    assert between.three_ds_rules is Mode.DRY_RUN and _transaction(db, between)["three_ds_rules"] == "dry-run"
    below = _open(db, _sale(shop, "o-below", amount=500))
    assert below.three_ds_rules is None and _transaction(db, below)["three_ds_rules"] is None
    assert db.read_sync(lambda conn: risk_store.hit_counts(conn, enforcing, 0)) == 0  # nothing filtered yet


def test_a_rebill_above_a_three_ds_rules_amount_is_not_marked(db: Database, shop: tuple[int, int]) -> None:
    first = _open(db, _sale(shop, "o-1"))
    _three_ds_rule(db, shop, 100)
    rebill = dataclasses.replace(_sale(shop, "r-1", amount=5000), card=None, card_id=first.card_id, card_ref_id=7)
    assert _open(db, rebill).three_ds_rules is None


def test_a_sale_a_block_list_filters_is_not_marked(db: Database, shop: tuple[int, int]) -> None:
    _three_ds_rule(db, shop, 100)
    _rule(db, shop, Kind.CARD, FINGERPRINT)
    filtered = _open(db, _sale(shop, "o-1", amount=5000))
    assert filtered.decided and filtered.three_ds_rules is None
    assert _transaction(db, filtered)["three_ds_rules"] is None
