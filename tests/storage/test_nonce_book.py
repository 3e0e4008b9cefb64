"""The nonces of OAuth requests that write nothing are spent together, one write at a time, on
both backends: each is still accepted once, whatever else shares its statement."""

from __future__ import annotations

import asyncio

from kassa.domain.merchants import Mode
from kassa.signing.rsa_keys import read_public_key
from kassa.storage import merchant_keys, oauth_nonces
from kassa.storage import merchants as merchant_store
from kassa.storage.database import Database
from kassa.storage.nonce_book import NonceBook
from kassa.storage.oauth_nonces import Spend
from kassa.vault.keys import Vault
from tests.support.oauth import key_pair


def _merchant(db: Database) -> int:
    return db.write_sync(lambda conn: merchant_store.create_merchant(conn, Vault(b"v" * 32), "shop", "k", False, 0).id)


def _spends(merchant_id: int, *nonces: str, key_id: int | None = None) -> list[Spend]:
    return [(merchant_id, 100, nonce, key_id) for nonce in nonces]


async def _spend_together(book: NonceBook, spends: list[Spend]) -> list[bool]:
    return list(await asyncio.gather(*(book.spend(spend) for spend in spends)))


def test_nonces_spent_at_once_are_each_recorded(db: Database) -> None:
    shop = _merchant(db)
    nonces = [f"n{n}" for n in range(600)] + ["123456", "0042", "Zürich 1"]  # digits stay text
    assert asyncio.run(_spend_together(NonceBook(db), _spends(shop, *nonces))) == [True] * len(nonces)
    for nonce in nonces:
        assert not db.write_sync(lambda conn, n=nonce: oauth_nonces.record(conn, shop, 100, n))


def test_a_nonce_spent_twice_at_once_is_accepted_once(db: Database) -> None:
    shop = _merchant(db)
    spent = asyncio.run(_spend_together(NonceBook(db), _spends(shop, "a", "b", "a", "a")))
    assert spent == [True, True, False, False]


def test_a_nonce_spent_before_is_refused_beside_new_ones(db: Database) -> None:
    shop = _merchant(db)
    book = NonceBook(db)
    assert asyncio.run(_spend_together(book, _spends(shop, "a"))) == [True]
    assert asyncio.run(_spend_together(book, _spends(shop, "b", "a", "c"))) == [True, False, True]


def test_a_nonce_of_a_key_revoked_since_is_refused_beside_others(db: Database) -> None:
    shop = _merchant(db)
    key = db.write_sync(lambda conn: merchant_keys.add(conn, shop, Mode.SANDBOX, read_public_key(key_pair()[1]), 0))
    db.write_sync(lambda conn: merchant_keys.revoke(conn, key.id, 1))
    spends = [*_spends(shop, "a", key_id=key.id), *_spends(shop, "b")]
    assert asyncio.run(_spend_together(NonceBook(db), spends)) == [False, True]
