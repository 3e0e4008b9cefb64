"""Merchants' RSA public keys as one process holds them: parsed once per key, not per request.

A request signed with RSA-SHA256 is tried against the keys cached for its merchant and mode. When none
verifies, the list is read again once (a key added a moment ago works at once) and only keys not seen yet
are parsed, so a stream of bad signatures costs a read by key each, never a parse. Revocation is not
waited for here: the statement that records the request's nonce records nothing when the key that
verified has been revoked (``storage.oauth_nonces.record``), in every process, and the request is refused
and the merchant's keys dropped from this cache."""

from __future__ import annotations

import logging

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from kassa.domain.merchants import Mode
from kassa.signing.rsa_keys import load
from kassa.storage import merchant_keys
from kassa.storage.database import Database

log = logging.getLogger("kassa.keys")
Keys = tuple[tuple[int, RSAPublicKey], ...]  # (key id, key), oldest first


class KeyRing:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._keys: dict[tuple[int, Mode], Keys] = {}

    def cached(self, merchant_id: int, mode: Mode) -> Keys | None:
        return self._keys.get((merchant_id, mode))

    async def reload(self, merchant_id: int, mode: Mode) -> Keys:
        """The merchant's keys in force for ``mode``, read now; keys parsed before are reused."""
        rows = await self._db.read_point(lambda conn: merchant_keys.active_pems(conn, merchant_id, mode))
        known = dict(self._keys.get((merchant_id, mode), ()))
        keys = tuple(
            (key_id, key) for key_id, pem in sorted(rows) if (key := known.get(key_id) or _usable(key_id, pem))
        )
        self._keys[(merchant_id, mode)] = keys
        return keys

    def forget(self, merchant_id: int, mode: Mode) -> None:
        """A key of these was found revoked: the next request reads them again."""
        self._keys.pop((merchant_id, mode), None)


def _usable(key_id: int, pem: str) -> RSAPublicKey | None:
    key = load(pem)
    if key is None:
        log.warning("merchant key not used: its public exponent is below 65537", extra={"key_id": key_id})
    return key
