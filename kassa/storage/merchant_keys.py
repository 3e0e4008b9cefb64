"""Queries on merchants' RSA public keys (``kassa key``; the verifier's ``kassa.keyring``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, and_, bindparam, insert, select, text, update

from kassa.domain.merchants import Mode
from kassa.signing.rsa_keys import PublicKey, modulus
from kassa.storage.merchants import NotFound, merchant_id
from kassa.storage.prepared import Prepared, Record
from kassa.storage.tables import merchant_keys, merchants


@dataclass(frozen=True, slots=True)
class StoredKey:
    id: int
    merchant: str  # login
    mode: Mode
    fingerprint: str
    bits: int
    created_at_ms: int
    revoked_at_ms: int | None

    @property
    def active(self) -> bool:
        return self.revoked_at_ms is None


class KeyOfAnotherMerchant(ValueError):
    """The key's modulus is another merchant's already."""

    def __init__(self) -> None:
        super().__init__(
            "this public key is registered for another merchant: each merchant signs with a key pair of its own"
        )


def register(conn: Connection, merchant_id: int, mode: Mode, key: PublicKey, now_ms: int) -> StoredKey:
    """An operator's registration (``kassa key add``, the console): ``add``, refused with
    ``KeyOfAnotherMerchant`` when another merchant has a key of the same modulus, revoked or not, with any
    exponent: whoever holds its private key would sign as both merchants."""
    if conn.dialect.name == "postgresql":
        # Registrations take turns, so two at once cannot both find the modulus free (SQLite's one writer
        # serializes them already); requests' reads of keys are not held up.
        conn.execute(text("LOCK TABLE merchant_keys IN SHARE ROW EXCLUSIVE MODE"))
    others = select(merchant_keys.c.public_key_pem).where(merchant_keys.c.merchant_id != merchant_id)
    if any(modulus(pem) == key.modulus for pem in conn.execute(others).scalars()):
        raise KeyOfAnotherMerchant()
    return add(conn, merchant_id, mode, key, now_ms)


def add(conn: Connection, merchant_id: int, mode: Mode, key: PublicKey, now_ms: int) -> StoredKey:
    """The key's row, whoever else has the key (operators register keys by ``register``). Raises
    ``IntegrityError`` when the merchant has this key already (in either mode, revoked or not)."""
    values = {
        "merchant_id": merchant_id,
        "mode": mode.value,
        "public_key_pem": key.pem,
        "fingerprint": key.fingerprint,
        "bits": key.bits,
        "created_at_ms": now_ms,
    }
    key_id = int(conn.execute(insert(merchant_keys).values(**values)).inserted_primary_key[0])  # type: ignore[index]
    return by_id(conn, key_id)


def by_id(conn: Connection, key_id: int) -> StoredKey:
    row = conn.execute(_listing().where(merchant_keys.c.id == key_id)).mappings().first()
    if row is None:
        raise NotFound(f"no key {key_id}")
    return _stored(row)


def listing(conn: Connection, login: str | None = None) -> list[StoredKey]:
    """Every key, or one merchant's, oldest first; revoked ones too (operators audit rotations)."""
    query = _listing().order_by(merchant_keys.c.id)
    if login is not None:
        query = query.where(merchant_keys.c.merchant_id == merchant_id(conn, login))
    return [_stored(row) for row in conn.execute(query).mappings()]


def revoke(conn: Connection, key_id: int, now_ms: int) -> StoredKey:
    """Revokes the key from now on; a key revoked already keeps its first revocation time."""
    conn.execute(
        update(merchant_keys)
        .where(and_(merchant_keys.c.id == key_id, merchant_keys.c.revoked_at_ms.is_(None)))
        .values(revoked_at_ms=now_ms)
    )
    return by_id(conn, key_id)


def active_pems(conn: Connection, merchant_id: int, mode: Mode) -> list[tuple[int, str]]:
    """(id, PEM) of the merchant's keys in force for ``mode``."""
    rows = conn.execute(
        select(merchant_keys.c.id, merchant_keys.c.public_key_pem).where(
            merchant_keys.c.merchant_id == merchant_id,
            merchant_keys.c.mode == mode.value,
            merchant_keys.c.revoked_at_ms.is_(None),
        )
    )
    return [(int(key_id), pem) for key_id, pem in rows]


_REVOKED = Prepared(select(merchant_keys.c.revoked_at_ms).where(merchant_keys.c.id == bindparam("key_id")))


def is_revoked(conn: Connection, key_id: int) -> bool:
    """Why a verified request's nonce was not recorded (``oauth_nonces.record`` checks revocation in the
    same statement): a key revoked a moment ago by another process, or a replay."""
    return _REVOKED.scalar(conn, {"key_id": key_id}) is not None


def _listing() -> Select[Any]:
    return select(merchant_keys, merchants.c.login).join(merchants, merchants.c.id == merchant_keys.c.merchant_id)


def _stored(row: Record) -> StoredKey:
    return StoredKey(
        id=row["id"],
        merchant=row["login"],
        mode=Mode(row["mode"]),
        fingerprint=row["fingerprint"],
        bits=row["bits"],
        created_at_ms=row["created_at_ms"],
        revoked_at_ms=row["revoked_at_ms"],
    )
