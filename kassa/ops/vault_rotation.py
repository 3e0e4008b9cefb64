"""Resealing every stored ciphertext under the primary vault key (``kassa vault rotate``) while gateways
serve, and counting them by key (``kassa vault status``).

Each batch is read in one short transaction, resealed outside any, and written in another short one, row by
row with a compare-and-swap on the old ciphertext (``storage.sealed.swap``): a request that changed or
removed a row meanwhile keeps its write, and no transaction holds the SQLite writer, or a PostgreSQL row
lock, while keys are derived or data decrypted. Only ciphertexts not under the primary are read, so a run
resumes where an interrupted one stopped, and a second run finds nothing to do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from sqlalchemy import Connection

from kassa.storage import sealed as sealed_store
from kassa.storage.database import Database
from kassa.storage.sealed import SEALED, Outdated, Sealed
from kassa.vault.keyring import VaultError
from kassa.vault.keys import MissingKey, Vault, header

Counts = dict[str, dict[int | None, int]]  # kind: key version (None: unknown format): ciphertexts


def status(db: Database) -> Counts:
    """Every kind's ciphertexts by key version, read in one transaction."""
    return db.read_sync(lambda conn: {sealed.kind: sealed_store.counts(conn, sealed) for sealed in SEALED})


@dataclass
class Resealed:
    """What a rotation did to one kind of ciphertext."""

    kind: str
    resealed: int = 0
    changed: int = 0  # changed or removed by a request between the read and the swap: left as it was
    unreadable: list[str] = field(default_factory=list)  # "row key: why", never the data


def rotate(
    db: Database, vault: Vault, batch: int, pause: float = 0, progress: Callable[[Resealed], None] | None = None
) -> list[Resealed]:
    """Reseals under ``vault``'s primary key every ciphertext under another, ``batch`` rows a transaction,
    ``pause`` seconds between batches; ``progress`` hears each kind when it is done."""
    done = []
    for sealed in SEALED:
        result = _rotate_kind(db, vault, sealed, batch, pause)
        if progress is not None:
            progress(result)
        done.append(result)
    return done


def _rotate_kind(db: Database, vault: Vault, sealed: Sealed, batch: int, pause: float) -> Resealed:
    result = Resealed(sealed.kind)
    prefix, after = header(vault.primary), None
    while rows := db.read_sync(_reader(sealed, prefix, after, batch)):
        after = rows[-1].key
        fresh = [(row, new) for row in rows if (new := _resealed(vault, row, result)) is not None]
        written = db.write_sync(_writer(sealed, fresh))
        result.resealed += written
        result.changed += len(fresh) - written
        if pause:
            time.sleep(pause)
    return result


def _reader(sealed: Sealed, prefix: bytes, after: Any, batch: int) -> Callable[[Connection], list[Outdated]]:
    return lambda conn: sealed_store.outdated(conn, sealed, prefix, after, batch)


def _writer(sealed: Sealed, fresh: list[tuple[Outdated, bytes]]) -> Callable[[Connection], int]:
    return lambda conn: sum(sealed_store.swap(conn, sealed, row.key, row.blob, new) for row, new in fresh)


def _resealed(vault: Vault, row: Outdated, result: Resealed) -> bytes | None:
    """``row``'s ciphertext under the primary key, or None (and why, in ``result``) when it does not open."""
    try:
        return vault.reseal(row.blob, row.context)
    except MissingKey as missing:
        result.unreadable.append(f"{row.key}: sealed under key {missing.version}, which is not configured")
    except InvalidTag:
        result.unreadable.append(f"{row.key}: does not open under its key (damaged, or not sealed for this row)")
    except VaultError as problem:
        result.unreadable.append(f"{row.key}: {problem}")
    return None
