"""OAuth storage on both backends: merchants' public keys (added, listed, revoked) and the nonces seen
(each accepted once, pruned by timestamp), and the per-process key cache over them."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.exc import IntegrityError

from kassa.domain.merchants import Mode
from kassa.keyring import KeyRing
from kassa.signing.rsa_keys import read_public_key
from kassa.storage import merchant_keys, oauth_nonces
from kassa.storage import merchants as merchant_store
from kassa.storage.database import Database
from kassa.vault.keys import Vault
from tests.support.oauth import key_pair

VAULT = Vault(b"v" * 32)


def _merchant(db: Database, login: str = "shop") -> int:
    return db.write_sync(lambda conn: merchant_store.create_merchant(conn, VAULT, login, "k" * 32, False, 0).id)


def _add(db: Database, merchant_id: int, which: int = 0, mode: Mode = Mode.SANDBOX) -> merchant_keys.StoredKey:
    key = read_public_key(key_pair(2048, which)[1])
    return db.write_sync(lambda conn: merchant_keys.add(conn, merchant_id, mode, key, 1000))


def test_a_nonce_is_accepted_once_per_merchant_and_timestamp(db: Database) -> None:
    shop, other = _merchant(db), _merchant(db, "other")

    def record(merchant_id: int, timestamp_s: int) -> bool:
        return db.write_sync(lambda conn: oauth_nonces.record(conn, merchant_id, timestamp_s, "123456"))

    assert record(shop, 100)
    assert not record(shop, 100)
    assert record(shop, 101)  # widely used signers draw nonces from a small space
    assert record(other, 100)


def test_a_nonce_verified_by_a_key_revoked_since_is_not_recorded(db: Database) -> None:
    shop = _merchant(db)
    kept, revoked = _add(db, shop), _add(db, shop, 1)
    db.write_sync(lambda conn: merchant_keys.revoke(conn, revoked.id, 2000))
    assert not db.write_sync(lambda conn: oauth_nonces.record(conn, shop, 100, "n", revoked.id))
    assert db.write_sync(lambda conn: oauth_nonces.record(conn, shop, 100, "n", kept.id))  # not spent above
    assert not db.write_sync(lambda conn: oauth_nonces.record(conn, shop, 100, "n", kept.id))


def test_pruning_forgets_nonces_older_than_the_bound_only(db: Database) -> None:
    shop = _merchant(db)
    for timestamp_s in (99, 100, 101):
        db.write_sync(lambda conn, t=timestamp_s: oauth_nonces.record(conn, shop, t, "n"))
    assert db.write_sync(lambda conn: oauth_nonces.prune(conn, 100)) == 1
    assert db.write_sync(lambda conn: oauth_nonces.record(conn, shop, 99, "n"))
    assert not db.write_sync(lambda conn: oauth_nonces.record(conn, shop, 100, "n"))


def test_keys_are_listed_per_merchant_with_their_fingerprint_and_size(db: Database) -> None:
    shop, other = _merchant(db), _merchant(db, "other")
    first, second = _add(db, shop), _add(db, shop, 1, Mode.LIVE)
    _add(db, other, 2)
    listed = db.read_sync(lambda conn: merchant_keys.listing(conn, "shop"))
    assert [(k.id, k.merchant, k.mode, k.bits, k.active) for k in listed] == [
        (first.id, "shop", Mode.SANDBOX, 2048, True),
        (second.id, "shop", Mode.LIVE, 2048, True),
    ]
    assert first.fingerprint == read_public_key(key_pair()[1]).fingerprint
    assert len(db.read_sync(merchant_keys.listing)) == 3


def test_listing_an_unknown_merchant_is_not_found(db: Database) -> None:
    with pytest.raises(merchant_store.NotFound, match="no merchant with login 'nobody'"):
        db.read_sync(lambda conn: merchant_keys.listing(conn, "nobody"))


def test_a_key_is_registered_once_per_merchant_in_either_mode_even_revoked(db: Database) -> None:
    shop = _merchant(db)
    key = _add(db, shop)
    db.write_sync(lambda conn: merchant_keys.revoke(conn, key.id, 2000))
    for mode in Mode:
        with pytest.raises(IntegrityError):
            _add(db, shop, 0, mode)
    _add(db, _merchant(db, "other"))  # another merchant may hold the same public key


def test_revoking_keeps_the_first_revocation_time_and_drops_the_key_from_those_in_force(db: Database) -> None:
    shop = _merchant(db)
    kept, revoked = _add(db, shop), _add(db, shop, 1)
    _add(db, shop, 2, Mode.LIVE)
    assert db.write_sync(lambda conn: merchant_keys.revoke(conn, revoked.id, 2000)).revoked_at_ms == 2000
    assert db.write_sync(lambda conn: merchant_keys.revoke(conn, revoked.id, 3000)).revoked_at_ms == 2000
    in_force = db.read_sync(lambda conn: merchant_keys.active_pems(conn, shop, Mode.SANDBOX))
    assert in_force == [(kept.id, key_pair()[1])]
    assert db.read_sync(lambda conn: merchant_keys.is_revoked(conn, revoked.id))
    assert not db.read_sync(lambda conn: merchant_keys.is_revoked(conn, kept.id))


def test_revoking_an_unknown_key_is_not_found(db: Database) -> None:
    with pytest.raises(merchant_store.NotFound, match="no key 99"):
        db.write_sync(lambda conn: merchant_keys.revoke(conn, 99, 0))


def test_the_key_ring_parses_a_key_once_and_sees_keys_added_since(db: Database) -> None:
    shop = _merchant(db)
    first = _add(db, shop)
    ring = KeyRing(db)
    assert ring.cached(shop, Mode.SANDBOX) is None
    loaded = asyncio.run(ring.reload(shop, Mode.SANDBOX))
    assert [key_id for key_id, _ in loaded] == [first.id]
    second = _add(db, shop, 1)
    reloaded = asyncio.run(ring.reload(shop, Mode.SANDBOX))
    assert [key_id for key_id, _ in reloaded] == [first.id, second.id]
    assert reloaded[0][1] is loaded[0][1]  # the same parsed object: not parsed again
    assert ring.cached(shop, Mode.SANDBOX) == reloaded
    ring.forget(shop, Mode.SANDBOX)
    assert ring.cached(shop, Mode.SANDBOX) is None


def test_many_nonces_are_recorded_in_one_statement_each_once(db: Database) -> None:
    shop = _merchant(db)
    db.write_sync(lambda conn: oauth_nonces.record(conn, shop, 100, "seen"))
    spends = [(shop, 100, "a", None), (shop, 100, "seen", None), (shop, 100, "a", None), (shop, 101, "a", None)]
    assert db.write_sync(lambda conn: oauth_nonces.record_many(conn, spends)) == {(shop, 100, "a"), (shop, 101, "a")}
    assert not db.write_sync(lambda conn: oauth_nonces.record(conn, shop, 100, "a"))


def test_many_nonces_leave_out_those_of_a_key_revoked_since(db: Database) -> None:
    shop = _merchant(db)
    kept, revoked = _add(db, shop), _add(db, shop, 1)
    db.write_sync(lambda conn: merchant_keys.revoke(conn, revoked.id, 2000))
    spends = [(shop, 100, "a", revoked.id), (shop, 100, "b", kept.id), (shop, 100, "c", None)]
    assert db.write_sync(lambda conn: oauth_nonces.record_many(conn, spends)) == {(shop, 100, "b"), (shop, 100, "c")}
    assert db.write_sync(lambda conn: oauth_nonces.record(conn, shop, 100, "a"))  # not spent above
