"""The migrations build exactly the schema kassa/storage/tables.py declares, on both backends."""

from __future__ import annotations

import sqlalchemy
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from kassa.storage.database import sqlalchemy_url
from kassa.storage.migrate import upgrade
from kassa.storage.tables import metadata


def test_migrated_schema_matches_the_declared_tables(database_url: str) -> None:
    upgrade(database_url)
    engine = sqlalchemy.create_engine(sqlalchemy_url(database_url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
            differences = compare_metadata(context, metadata)
    finally:
        engine.dispose()
    assert differences == []
