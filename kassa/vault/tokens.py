"""Browser-session tokens at rest: a row keeps the token's SHA-256, to find the session a URL names,
and the token sealed under the vault, for the gateway to give the same address again (a status call, a
repeated request). A copy of the database opens no customer page: the digest cannot be turned back
into the token, and the sealed token needs the vault key."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kassa.vault.keys import Vault


@dataclass(frozen=True, slots=True)
class SealedToken:
    digest: str  # SHA-256 of the token, hex: the session's key
    sealed: bytes  # the token under the vault, bound to its digest

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> SealedToken:
        """From a browser-session row."""
        return cls(row["token_digest"], bytes(row["token_sealed"]))


def digest(token: str) -> str:
    """The key a token's session is stored under. A plain hash is enough: a token has 256 random bits."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(vault: Vault) -> tuple[str, SealedToken]:
    """A new unguessable token (256 bits) and what its row stores."""
    token = secrets.token_urlsafe(32)
    return token, seal(vault, token)


def seal(vault: Vault, token: str) -> SealedToken:
    found = digest(token)
    return SealedToken(found, vault.encrypt(token, sealing_context(found)))


def open_token(vault: Vault, stored: SealedToken) -> str:
    return vault.decrypt(stored.sealed, sealing_context(stored.digest))


def sealing_context(token_digest: str) -> str:
    return f"browser-session/{token_digest}"
