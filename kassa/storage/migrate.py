"""Schema migrations (Alembic), run programmatically so `kassa db upgrade` needs no alembic.ini."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from kassa.storage.database import ensure_sqlite_file, sqlalchemy_url

_SCRIPTS = Path(__file__).parent / "migrations"
log = logging.getLogger("kassa.storage")


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return config


# Any number, the same in every process: PostgreSQL's advisory locks are named by one.
_MIGRATION_LOCK = 0x6B61_7373_6100


def upgrade(url: str) -> None:
    """Applies every pending migration, Alembic telling each step (``kassa db upgrade``)."""
    ensure_sqlite_file(url)
    with _one_at_a_time(url):
        command.upgrade(alembic_config(url), "head")


def upgrade_quietly(url: str) -> None:
    """As ``upgrade``, for a server starting: one line when the schema moved, none when it was current."""
    ensure_sqlite_file(url)
    head = head_revision()
    with _alembic_at(logging.WARNING), _one_at_a_time(url):
        before = current_revision(url)
        if before == head:
            return
        command.upgrade(alembic_config(url), "head")
    log.info("database schema upgraded", extra={"from": before or "empty", "to": head})


@contextlib.contextmanager
def _one_at_a_time(url: str) -> Iterator[None]:
    """Servers of one deployment starting together each upgrade: on PostgreSQL one migrates while the others
    wait for it, then find the schema current (unserialized, the second failed creating a table the first
    had made). SQLite's one writer serializes them already."""
    if not url.startswith("postgresql"):
        yield
        return
    engine = create_engine(sqlalchemy_url(url), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _MIGRATION_LOCK})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _MIGRATION_LOCK})
                conn.commit()
    finally:
        engine.dispose()


def current_revision(url: str) -> str | None:
    engine = create_engine(sqlalchemy_url(url))
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def head_revision() -> str:
    """The schema revision this code was written for."""
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    if head is None:
        raise RuntimeError("the migrations folder has no head revision")
    return head


@contextlib.contextmanager
def _alembic_at(level: int) -> Iterator[None]:
    logger = logging.getLogger("alembic")
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def revisions() -> list[str]:
    """Every schema revision this Kassa's migrations know, oldest first: the last is the head."""
    scripts = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [script.revision for script in reversed(list(scripts.walk_revisions()))]
