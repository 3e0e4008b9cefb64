"""Schema migrations (Alembic), run programmatically so `kassa db upgrade` needs no alembic.ini.

A server starting finds the schema current without Alembic: importing it and reading the migration scripts
cost each process about a quarter of a second of CPU, a sixth of its start. Its revision is read with one
statement, and the head is the highest-numbered migration file, each file's revision being its number
(``tests/storage/test_database.py`` holds Alembic's own chain to that). Alembic is imported only to migrate.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, create_engine, inspect, text
from sqlalchemy.pool import NullPool

from kassa.storage.database import ensure_sqlite_file, sqlalchemy_url

if TYPE_CHECKING:
    from alembic.config import Config

_SCRIPTS = Path(__file__).parent / "migrations"
_NUMBERED = re.compile(r"(\d{4})_\w+\.py")
log = logging.getLogger("kassa.storage")


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return config


# Any number, the same in every process: PostgreSQL's advisory locks are named by one.
_MIGRATION_LOCK = 0x6B61_7373_6100


def upgrade(url: str) -> None:
    """Applies every pending migration, Alembic telling each step (``kassa db upgrade``)."""
    from alembic import command

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
        from alembic import command

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
    """The schema revision of the database at ``url``, None before its first migration."""
    engine = create_engine(sqlalchemy_url(url), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return revision_of(conn)
    finally:
        engine.dispose()


def revision_of(conn: Connection) -> str | None:
    """The schema revision of the database ``conn`` is on (Alembic's version table), None before its first
    migration."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    found = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    if len(found) > 1:
        raise RuntimeError(f"the database has {len(found)} schema revisions; Kassa's migrations are one chain")
    return found[0] if found else None


@functools.cache  # the files do not change under a running process
def head_revision() -> str:
    """The schema revision this code was written for: the number of its last migration file."""
    numbers = [found[1] for path in (_SCRIPTS / "versions").iterdir() if (found := _NUMBERED.fullmatch(path.name))]
    if not numbers:
        raise RuntimeError("the migrations folder has no head revision")
    return max(numbers)


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
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [script.revision for script in reversed(list(scripts.walk_revisions()))]
