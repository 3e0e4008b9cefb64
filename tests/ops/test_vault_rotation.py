"""Rotation on a real database (SQLite and PostgreSQL): every kind of ciphertext is resealed under the
primary key, in batches, and opens with the new key alone; a second run does nothing; a row changed
meanwhile is left as written; a row no key opens is named, never shown."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from sqlalchemy import Connection, insert, select, update

from kassa.core.opening import new_card, open_order
from kassa.domain.acquirers import read_link
from kassa.domain.operators import Role
from kassa.domain.transactions import TxType
from kassa.ops import vault_rotation
from kassa.storage import acquirers as acquirer_store
from kassa.storage import hosted_fields
from kassa.storage import merchants as merchant_store
from kassa.storage import operators as operator_store
from kassa.storage import sealed as sealed_store
from kassa.storage.database import Database
from kassa.storage.orders import NewOrder
from kassa.storage.sealed import SEALED
from kassa.storage.tables import browser_sessions, cards, payout_destinations, transient_secrets
from kassa.vault import tokens
from kassa.vault.keyring import Keyring, parse
from kassa.vault.keys import Vault, cvv_context, destination_context, hosted_cvv_context, key_version, pan_context
from tests.support.databases import SHOP_CONTROL_KEY, TEST_VAULT, shop_endpoint

K1, K2, K3 = b"k" * 32, b"2" * 32, b"3" * 32  # key 1 is the tests' own (TEST_VAULT)
PAN, CVV, TOTP, DETAILS = "4111111111111111", "123", "JBSWY3DPEHPK3PXP", '{"account": "DE89370400440532013000"}'
MAC_KEY = "0123456789ABCDEFFEDCBA9876543210"
LINK = read_link(
    {"host": "acquirer.example", "port": "5000", "acquiring_institution_id": "1", "terminal_id": "T1",
     "card_acceptor_id": "C1", "mcc": "5999"}
)  # fmt: skip
KINDS = {sealed.kind for sealed in SEALED}
TICKET = "f" * 64  # a Hosted Fields ticket's digest


def b64(secret: bytes) -> str:
    return base64.b64encode(secret).decode()


ROTATING_KEYS = Keyring.of(parse(f"2:{b64(K2)},1:{b64(K1)}"), None)
ROTATING = Vault(ROTATING_KEYS)
RETIRED = Vault(Keyring.of(parse(f"2:{b64(K2)},fingerprint:{b64(ROTATING_KEYS.fingerprint_key)}"), None))


@dataclass(frozen=True)
class Stored:
    merchant_id: int
    endpoint_id: int
    token: str


def _sale(merchant_id: int, endpoint_id: int, client_orderid: str, serial: str, **fields: object) -> NewOrder:
    return NewOrder(
        merchant_id, endpoint_id, client_orderid, TxType.SALE, 1042, "USD", "a@example.com", "", "{}",
        None, None, None, None, "fingerprint", serial, 1, **fields,
    )  # fmt: skip


def _one_of_each(db: Database) -> Stored:
    """A merchant (control key), a sale with its card and CVV and a payout destination, a hosted form
    (page token), an operator (TOTP secret), an acquirer connection (its MAC key), a card tokenized by Hosted
    Fields (its number and CVV): one ciphertext of every kind, all under key 1."""
    merchant_id, endpoint_id = db.write_sync(shop_endpoint)
    card = new_card(TEST_VAULT, merchant_id, PAN, 12, 2030, "Jane Doe")
    sale = _sale(
        merchant_id, endpoint_id, "o-1", "s-1", card=card, cvv_ciphertext=TEST_VAULT.encrypt(CVV, cvv_context("s-1"))
    )
    token, sealed_token = tokens.new_token(TEST_VAULT)
    form = _sale(merchant_id, endpoint_id, "o-2", "s-2", form_ttl_ms=60_000, form_token=sealed_token)

    def write(conn: Connection) -> None:
        order_id = open_order(conn, sale).order_id
        open_order(conn, form)
        details = TEST_VAULT.encrypt(DETAILS, destination_context(merchant_id))
        conn.execute(
            insert(payout_destinations).values(
                order_id=order_id, kind="bank", details_ciphertext=details, masked="DE89****3000"
            )
        )
        operator_store.create(conn, TEST_VAULT, "ops@example.com", Role.ADMIN, "hash", TOTP, 0)
        acquirer_store.create(conn, TEST_VAULT, "bank", LINK, MAC_KEY, 0)
        hosted_fields.issue(conn, TICKET, merchant_id, endpoint_id, 0, 60_000)
        hosted_cvv = TEST_VAULT.encrypt(CVV, hosted_cvv_context(TICKET))
        hosted_fields.store_card(conn, TICKET, hosted_fields.Tokenized("token-digest", card, hosted_cvv), 0)

    db.write_sync(write)
    return Stored(merchant_id, endpoint_id, token)


def _by_kind(counts: vault_rotation.Counts) -> dict[str, dict[int | None, int]]:
    return {kind: dict(found) for kind, found in counts.items()}


def test_every_kind_is_resealed_under_the_primary_and_opens_with_the_new_key_alone(db: Database) -> None:
    stored = _one_of_each(db)
    assert _by_kind(vault_rotation.status(db)) == {kind: {1: 1} for kind in KINDS}
    heard: list[str] = []
    done = vault_rotation.rotate(db, ROTATING, batch=1, progress=lambda result: heard.append(result.kind))
    assert {(r.kind, r.resealed, r.changed, tuple(r.unreadable)) for r in done} == {(k, 1, 0, ()) for k in KINDS}
    assert heard == [sealed.kind for sealed in SEALED]
    assert _by_kind(vault_rotation.status(db)) == {kind: {2: 1} for kind in KINDS}
    expected = (SHOP_CONTROL_KEY, PAN, CVV, DETAILS, stored.token, TOTP, MAC_KEY, f"{PAN}/{CVV}")
    assert _opened_with(db, RETIRED, stored) == expected


def _opened_with(db: Database, vault: Vault, stored: Stored) -> tuple[str, ...]:
    """Every secret, read the way the gateway reads it."""

    def read(conn: Connection) -> tuple[str, ...]:
        endpoint = merchant_store.load_endpoint(conn, vault, stored.endpoint_id)
        pan = vault.decrypt(conn.execute(select(cards.c.pan_ciphertext)).scalar_one(), pan_context(stored.merchant_id))
        cvv = vault.decrypt(conn.execute(select(transient_secrets.c.cvv_ciphertext)).scalar_one(), cvv_context("s-1"))
        blob = conn.execute(select(payout_destinations.c.details_ciphertext)).scalar_one()
        details = vault.decrypt(blob, destination_context(stored.merchant_id))
        session = conn.execute(select(browser_sessions)).mappings().one()
        token = tokens.open_token(vault, tokens.SealedToken.of(session))
        credentials = operator_store.credentials_of(conn, vault, "ops@example.com")
        assert credentials is not None and credentials.totp_secret is not None
        mac_key = acquirer_store.secret_of(conn, vault, acquirer_store.by_name(conn, "bank").id)
        ticket = hosted_fields.ticket(conn, TICKET)
        assert ticket is not None
        hosted = vault.decrypt(ticket["pan_ciphertext"], pan_context(stored.merchant_id))
        hosted += "/" + vault.decrypt(ticket["cvv_ciphertext"], hosted_cvv_context(TICKET))
        secrets = (endpoint.merchant.control_key, pan, cvv, details, token, credentials.totp_secret, mac_key)
        return (*secrets, hosted)

    return db.read_sync(read)


def test_a_second_rotation_finds_nothing_to_do(db: Database) -> None:
    _one_of_each(db)
    vault_rotation.rotate(db, ROTATING, batch=100)
    again = vault_rotation.rotate(db, ROTATING, batch=100)
    assert {(r.resealed, r.changed, tuple(r.unreadable)) for r in again} == {(0, 0, ())}


def test_an_interrupted_rotation_resumes_with_what_is_left(db: Database) -> None:
    stored = _one_of_each(db)
    more = [new_card(TEST_VAULT, stored.merchant_id, PAN, 12, 2030, "Jane Doe") for _ in range(5)]
    db.write_sync(
        lambda conn: [
            open_order(conn, _sale(stored.merchant_id, stored.endpoint_id, f"m-{n}", f"t-{n}", card=c))
            for n, c in enumerate(more)
        ]
    )
    card_numbers = next(sealed for sealed in SEALED if sealed.kind == "card_numbers")
    first_two = db.read_sync(lambda conn: sealed_store.outdated(conn, card_numbers, b"\x02\x02", None, 2))
    db.write_sync(
        lambda conn: [
            sealed_store.swap(conn, card_numbers, r.key, r.blob, ROTATING.reseal(r.blob, r.context)) for r in first_two
        ]
    )
    done = {r.kind: r.resealed for r in vault_rotation.rotate(db, ROTATING, batch=2)}
    assert done["card_numbers"] == 4
    assert vault_rotation.status(db)["card_numbers"] == {2: 6}


def test_a_row_a_request_changed_since_it_was_read_keeps_the_requests_write(db: Database) -> None:
    stored = _one_of_each(db)
    card_numbers = next(sealed for sealed in SEALED if sealed.kind == "card_numbers")
    (row,) = db.read_sync(lambda conn: sealed_store.outdated(conn, card_numbers, b"\x02\x02", None, 10))
    written_by_request = ROTATING.encrypt("4000000000000002", pan_context(stored.merchant_id))
    db.write_sync(lambda conn: conn.execute(update(cards).values(pan_ciphertext=written_by_request)))
    assert not db.write_sync(
        lambda conn: sealed_store.swap(conn, card_numbers, row.key, row.blob, ROTATING.reseal(row.blob, row.context))
    )
    assert db.read_sync(lambda conn: conn.execute(select(cards.c.pan_ciphertext)).scalar_one()) == written_by_request


def test_a_ciphertext_under_a_key_not_configured_is_named_by_row_and_version_and_left(db: Database) -> None:
    stored = _one_of_each(db)
    third = Vault(Keyring.of(parse(f"3:{b64(K3)},1:{b64(K1)}"), None))
    under_3 = third.encrypt(PAN, pan_context(stored.merchant_id))
    db.write_sync(lambda conn: conn.execute(update(cards).values(pan_ciphertext=under_3)))
    card_id = db.read_sync(lambda conn: conn.execute(select(cards.c.id)).scalar_one())
    done = {r.kind: r for r in vault_rotation.rotate(db, ROTATING, batch=10)}
    assert done["card_numbers"].unreadable == [f"{card_id}: sealed under key 3, which is not configured"]
    assert vault_rotation.status(db)["card_numbers"] == {3: 1}
    assert key_version(db.read_sync(lambda conn: conn.execute(select(cards.c.pan_ciphertext)).scalar_one())) == 3
