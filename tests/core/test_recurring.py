"""Making recurring payments (create-recurring-payment) and tokenising cards (create-card-ref v4), on both
backends, below HTTP: the ids they answer with, and what a repeat finds."""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from kassa.core import opening, outcomes, recurring
from kassa.core.followups import OrderRef
from kassa.domain.lifecycle import Stage
from kassa.domain.merchants import Mode
from kassa.domain.transactions import TxType
from kassa.processors.interface import Outcome
from kassa.storage import merchants as merchant_store
from kassa.storage import orders as order_store
from kassa.storage.database import Database
from kassa.storage.orders import NewOrder
from kassa.storage.recurring import NewPayment
from kassa.storage.tables import cards, recurring_payments
from kassa.vault.keys import card_ref_unique_id
from tests.support.databases import TEST_VAULT, shop_endpoint

VISA, OTHER_VISA = "4111111111111111", "4012888888881881"


def _merchant(conn: Connection, login: str) -> tuple[int, int]:
    merchant = merchant_store.create_merchant(conn, TEST_VAULT, login, "a-control-key-of-16", False, 0)
    spec = merchant_store.EndpointSpec(merchant.id, "USD", Mode.SANDBOX, False, "", None, None, False)
    return merchant.id, merchant_store.create_endpoint(conn, spec, 0)


def _approved_sale(db: Database, shop: tuple[int, int], client_orderid: str, pan: str) -> OrderRef:
    merchant_id, endpoint_id = shop
    card = opening.new_card(TEST_VAULT, merchant_id, pan, 12, 2030, "Jane Doe")
    new = NewOrder(
        merchant_id, endpoint_id, client_orderid, TxType.SALE, 1042, "USD", "", "", "{}", None, None, None, None,
        "fingerprint", f"serial-{client_orderid}-{merchant_id}", 1, card=card,
    )  # fmt: skip

    def approve(conn: Connection) -> int:
        started = opening.open_order(conn, new)
        outcomes.record(conn, started.transaction_id, Outcome(Stage.APPROVED), 2)
        return started.order_id

    return OrderRef([endpoint_id], db.write_sync(approve), client_orderid)


def _unique_id(merchant_id: int, made: recurring.Tokenised) -> str:
    return card_ref_unique_id(TEST_VAULT, merchant_id, made.pan_fingerprint)


def test_tokenising_an_order_twice_gives_the_same_reference_and_recurring_payment(db: Database) -> None:
    shop = db.write_sync(shop_endpoint)
    ref = _approved_sale(db, shop, "o-1", VISA)
    first = db.write_sync(lambda conn: recurring.tokenise(conn, ref, 3))
    again = db.write_sync(lambda conn: recurring.tokenise(conn, ref, 4))
    assert first == again
    payment = db.read_sync(lambda conn: conn.execute(select(recurring_payments)).mappings().one())
    assert (payment["id"], payment["card_ref_id"], payment["period"]) == (
        first.recurring_payment_id,
        first.card_ref_id,
        None,
    )
    assert (payment["status"], payment["next_charge_at_ms"]) == ("active", None)  # charged only when asked


def test_unique_reference_id_is_one_per_card_number_at_a_merchant_and_differs_across_merchants(db: Database) -> None:
    shop, other = db.write_sync(shop_endpoint), db.write_sync(lambda conn: _merchant(conn, "other"))
    refs = [
        _approved_sale(db, shop, "o-1", VISA),
        _approved_sale(db, shop, "o-2", VISA),
        _approved_sale(db, shop, "o-3", OTHER_VISA),
        _approved_sale(db, other, "o-1", VISA),
    ]
    one, two, third, elsewhere = (db.write_sync(lambda conn, ref=ref: recurring.tokenise(conn, ref, 3)) for ref in refs)
    assert one.card_ref_id != two.card_ref_id and one.recurring_payment_id != two.recurring_payment_id
    assert _unique_id(shop[0], one) == _unique_id(shop[0], two)
    assert _unique_id(shop[0], third) != _unique_id(shop[0], one)
    assert _unique_id(other[0], elsewhere) != _unique_id(shop[0], one)
    assert len(_unique_id(shop[0], one)) == 40 and VISA not in _unique_id(shop[0], one)


def _payment(shop: tuple[int, int], client_orderid: str, fingerprint: str) -> NewPayment:
    return NewPayment(
        shop[0], shop[1], 5, client_orderid=client_orderid, amount=990, currency="USD", request_fingerprint=fingerprint
    )


def test_a_repeated_client_orderid_finds_the_first_payment_and_stores_no_second_card(db: Database) -> None:
    shop = db.write_sync(shop_endpoint)
    card = opening.new_card(TEST_VAULT, shop[0], VISA, 12, 2030, "Jane Doe")
    first = db.write_sync(lambda conn: recurring.create(conn, _payment(shop, "sub", "f1"), card))
    again = db.write_sync(lambda conn: recurring.create(conn, _payment(shop, "sub", "f2"), card))
    other = db.write_sync(lambda conn: recurring.create(conn, _payment(shop, "sub-2", "f1"), card))
    assert (first.created, again.created, again.payment_id, again.request_fingerprint) == (
        True, False, first.payment_id, "f1",
    )  # fmt: skip
    assert other.created and other.payment_id != first.payment_id
    assert db.read_sync(lambda conn: conn.execute(select(func.count()).select_from(cards)).scalar_one()) == 2
    stored = db.read_sync(lambda conn: order_store.find_view(conn, [shop[1]], 1, None))
    assert stored is None  # a payment opens no order until its first charge
