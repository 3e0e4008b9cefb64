"""The catalogue of sealed columns that rotation walks is complete."""

from __future__ import annotations

from sqlalchemy import LargeBinary

from kassa.storage.sealed import SEALED
from kassa.storage.tables import metadata

# Binary columns that hold no ciphertext: an Idempotency-Key's stored answer, which never holds card data.
PLAIN = {"idempotency_keys.body"}


def test_every_binary_column_is_sealed_and_rotated_or_known_plain() -> None:
    binary = {
        f"{table.name}.{column.name}"
        for table in metadata.tables.values()
        for column in table.columns
        if isinstance(column.type, LargeBinary)
    }
    rotated = {f"{sealed.column.table.name}.{sealed.column.name}" for sealed in SEALED}
    assert binary == rotated | PLAIN
    assert len(rotated) == len(SEALED)
