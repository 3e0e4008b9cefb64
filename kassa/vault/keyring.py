"""The vault's keys: several master keys, each with a version, the primary among them, and the card
fingerprint key.

A keyring is written as entries ``VERSION:BASE64`` (a version from 1 to 255, the base64 of 32 bytes) and
at most one ``fingerprint:BASE64``, separated by commas (``KASSA_VAULT_KEYS``) or lines (the key file). A
text holding one bare base64 key is key 1: what ``KASSA_VAULT_KEY`` and the key file held before keys had
versions. The primary key seals everything new (``KASSA_VAULT_PRIMARY``, else the newest); every key
opens what was sealed under it.

Card fingerprints (card matching, ``unq-card-ref-id``, request fingerprints) must never change, so their
HMAC key does not follow the primary: it is the one key 1 has always given (HKDF, ``fingerprint``), or,
once key 1 is retired, that same derived key written as the ``fingerprint`` entry. It cannot open any
ciphertext, so keeping it costs nothing that retiring key 1 was meant to remove. A keyring with neither is
refused rather than fingerprinting with another key.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MAX_VERSION = 255  # one byte of the ciphertext header
FINGERPRINT = "fingerprint"
_ENTRY = re.compile(r"(\d{1,3}|fingerprint):(.*)", re.DOTALL)


class VaultError(ValueError):
    """A key or ciphertext the vault cannot use; the message never shows a key or a plaintext."""


def master_key(text: str) -> bytes:
    """32 bytes from their base64 text (``KASSA_VAULT_KEY``, a keyring entry)."""
    try:
        key = base64.b64decode(text, validate=True)
    except binascii.Error:
        key = b""
    if len(key) != 32:
        raise VaultError("must be the base64 of 32 bytes")
    return key


def derive(master: bytes, purpose: bytes) -> bytes:
    """A sub-key of ``master`` for one purpose, so one secret never serves two."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"kassa-vault/" + purpose).derive(master)


@dataclass(frozen=True, slots=True)
class Entries:
    """A keyring as written: master keys by version, and the fingerprint key if it is written out."""

    keys: Mapping[int, bytes]
    fingerprint: bytes | None = None


def parse(text: str) -> Entries:
    """The entries of a keyring's text; raises ``VaultError`` naming the entry (by position or version)."""
    parts = [part.strip() for part in re.split(r"[,\n]", text)]
    parts = [part for part in parts if part]
    if len(parts) == 1 and _ENTRY.fullmatch(parts[0]) is None:
        return Entries({1: master_key(parts[0])})  # one bare key: key 1, as before versions
    keys: dict[int, bytes] = {}
    fingerprint = None
    for position, part in enumerate(parts, start=1):
        found = _ENTRY.fullmatch(part)
        if found is None or (found[1] != FINGERPRINT and not 1 <= int(found[1]) <= MAX_VERSION):
            rule = f"VERSION:BASE64 (a version from 1 to {MAX_VERSION}) or {FINGERPRINT}:BASE64"
            raise VaultError(f"entry {position} must be {rule}")
        name, value = found[1], found[2].strip()
        if name == FINGERPRINT:
            if fingerprint is not None:
                raise VaultError(f"holds two {FINGERPRINT} entries")
            fingerprint = _secret(value, FINGERPRINT)
        elif int(name) in keys:
            raise VaultError(f"holds key {int(name)} twice")
        else:
            keys[int(name)] = _secret(value, f"key {int(name)}")
    if not keys:
        raise VaultError("holds no key")
    return Entries(keys, fingerprint)


def _secret(text: str, name: str) -> bytes:
    try:
        return master_key(text)
    except VaultError:
        raise VaultError(f"{name} must be the base64 of 32 bytes") from None


def render(entries: Entries) -> str:
    """The key file's text: the fingerprint key first, then the keys, newest first, one a line."""
    lines = [] if entries.fingerprint is None else [f"{FINGERPRINT}:{_b64(entries.fingerprint)}"]
    lines += [f"{version}:{_b64(entries.keys[version])}" for version in sorted(entries.keys, reverse=True)]
    return "\n".join(lines) + "\n"


def _b64(secret: bytes) -> str:
    return base64.b64encode(secret).decode()


@dataclass(frozen=True, slots=True)
class Keyring:
    keys: Mapping[int, bytes]  # master keys by version
    primary: int  # the version that seals
    fingerprint_key: bytes  # the HMAC key of card fingerprints itself (not a master key)

    @classmethod
    def single(cls, master: bytes) -> Keyring:
        """One key, version 1: what ``KASSA_VAULT_KEY`` gives."""
        if len(master) != 32:
            raise VaultError("the vault key must be 32 bytes")
        return cls({1: master}, 1, derive(master, FINGERPRINT.encode()))

    @classmethod
    def of(cls, entries: Entries, primary: int | None) -> Keyring:
        """The keyring ``entries`` make with ``primary`` (None: the newest key); raises ``VaultError``."""
        if primary is not None and primary not in entries.keys:
            raise VaultError(f"holds no key {primary}, which KASSA_VAULT_PRIMARY names (it holds {_versions(entries)})")
        return cls(dict(entries.keys), max(entries.keys) if primary is None else primary, fingerprint_key(entries))


def fingerprint_key(entries: Entries) -> bytes:
    """Key 1's fingerprint key, whichever entry gives it (both, when they agree)."""
    if 1 in entries.keys:
        derived = derive(entries.keys[1], FINGERPRINT.encode())
        if entries.fingerprint is not None and entries.fingerprint != derived:
            raise VaultError(f"the {FINGERPRINT} entry is not the one key 1 gives: card fingerprints would change")
        return derived
    if entries.fingerprint is None:
        raise VaultError(
            f"holds no key 1 and no {FINGERPRINT} entry, and card fingerprints come from key 1's: add "
            f"{FINGERPRINT}:BASE64 (`kassa vault fingerprint-key` prints it while key 1 is configured)"
        )
    return entries.fingerprint


def _versions(entries: Entries) -> str:
    return ", ".join(str(version) for version in sorted(entries.keys))


@dataclass(frozen=True, slots=True)
class KeySource:
    """Where a process finds its keys (``Settings.vault_source``)."""

    configured: str | None  # the keyring text of KASSA_VAULT_KEYS or KASSA_VAULT_KEY; None: the key file
    variable: str  # which of the two, for messages
    key_file: Path  # the sandbox's key file (``key_file.py``), used when nothing is configured
    primary: int | None  # KASSA_VAULT_PRIMARY
