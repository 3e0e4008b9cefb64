"""The database runner: atomic units of work, group-committed on SQLite, on both backends."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, select
from sqlalchemy.exc import OperationalError

from kassa.storage import merchants as merchant_store
from kassa.storage.database import open_database, sqlalchemy_url
from kassa.storage.migrate import alembic_config, current_revision, head_revision, upgrade
from kassa.storage.tables import merchants, metadata
from tests.support.databases import SHOP_CONTROL_KEY, TEST_VAULT


def _create(login: str) -> object:
    def unit(conn: Connection) -> object:
        return merchant_store.create_merchant(conn, TEST_VAULT, login, SHOP_CONTROL_KEY, False, 0)

    return unit


def _fail_after_insert(conn: Connection) -> None:
    merchant_store.create_merchant(conn, TEST_VAULT, "half-written", SHOP_CONTROL_KEY, False, 0)
    raise RuntimeError("boom")


def test_concurrent_units_commit_independently_and_a_failing_one_leaves_nothing(database_url: str) -> None:
    upgrade(database_url)
    db = open_database(database_url)

    async def run() -> list[object]:
        units = [db.write(_create(f"login-{n}")) for n in range(50)]
        units.append(db.write(_fail_after_insert))
        units.append(db.write(_create("login-0")))  # duplicate login: refused by the unique constraint
        return await asyncio.gather(*units, return_exceptions=True)

    try:
        results = asyncio.run(run())
        logins = db.read_sync(lambda conn: set(conn.execute(select(merchants.c.login)).scalars()))
    finally:
        db.close()
    assert logins == {f"login-{n}" for n in range(50)}
    assert isinstance(results[50], RuntimeError)
    assert isinstance(results[51], Exception)


def test_unit_result_is_returned_after_commit(database_url: str) -> None:
    upgrade(database_url)
    db = open_database(database_url)
    try:
        created = asyncio.run(db.write(_create("visible")))
        found = db.read_sync(lambda conn: merchant_store.merchant_by_login(conn, TEST_VAULT, "visible"))
    finally:
        db.close()
    assert found == created


@pytest.mark.empty_database
def test_upgrading_a_database_at_head_again_applies_no_migration_and_keeps_its_schema_and_rows(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="alembic"):
        upgrade(database_url)
        first = _applied(caplog)
        db = open_database(database_url)
        try:
            db.write_sync(_create("kept"))
        finally:
            db.close()
        caplog.clear()
        upgrade(database_url)
        second = _applied(caplog)
    assert len(first) == len(list(ScriptDirectory.from_config(alembic_config(database_url)).walk_revisions()))
    assert second == []
    assert current_revision(database_url) == head_revision()
    assert _differences_from_the_declared_schema(database_url) == []
    db = open_database(database_url)
    try:
        logins = db.read_sync(lambda conn: list(conn.execute(select(merchants.c.login)).scalars()))
    finally:
        db.close()
    assert logins == ["kept"]


def _applied(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The migrations Alembic says it ran (``Running upgrade 0001 -> 0002, ...``)."""
    return [record.getMessage() for record in caplog.records if record.getMessage().startswith("Running upgrade")]


def _differences_from_the_declared_schema(database_url: str) -> list[object]:
    engine = create_engine(sqlalchemy_url(database_url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
            return list(compare_metadata(context, metadata))
    finally:
        engine.dispose()


def test_the_head_a_starting_server_reads_without_alembic_is_alembics_own_and_each_migration_is_its_number() -> None:
    scripts = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert head_revision() == scripts.get_current_head()
    chain = list(reversed(list(scripts.walk_revisions())))
    assert [script.revision for script in chain] == [f"{n:04d}" for n in range(1, len(chain) + 1)]
    assert [Path(script.path).name[:4] for script in chain] == [script.revision for script in chain]
    assert [script.down_revision for script in chain] == [None, *(script.revision for script in chain[:-1])]


@pytest.mark.empty_database
def test_an_empty_database_has_no_revision_and_a_migrated_one_the_head(database_url: str) -> None:
    assert current_revision(database_url) is None
    upgrade(database_url)
    assert current_revision(database_url) == head_revision()


@pytest.mark.parametrize("url", ["postgresql://u@h/db", "postgres://u@h/db"])
def test_plain_postgresql_urls_use_psycopg(url: str) -> None:
    from kassa.storage.database import sqlalchemy_url

    assert sqlalchemy_url(url) == "postgresql+psycopg://u@h/db"


@pytest.mark.parametrize(("in_place", "thread"), [(True, "MainThread"), (False, "kassa-db")])
def test_sqlite_read_by_key_runs_on_the_loop_or_in_the_reader_pool_as_configured(
    tmp_path: Path, in_place: bool, thread: str
) -> None:
    url = f"sqlite:///{tmp_path / 'kassa.db'}"
    upgrade(url)
    db = open_database(url, sqlite_reads_in_place=in_place)

    def read(conn: Connection) -> tuple[object, str]:
        return merchant_store.merchant_by_login(conn, TEST_VAULT, "shop"), threading.current_thread().name

    async def run() -> tuple[object, tuple[object, str]]:
        created = await db.write(_create("shop"))
        return created, await db.read_point(read)

    try:
        created, (found, ran_on) = asyncio.run(run())
    finally:
        db.close()
    assert found == created
    assert ran_on.startswith(thread)


def test_sqlite_reads_on_the_loop_keep_a_page_cache_of_32_mib_and_other_connections_the_default(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'kassa.db'}"
    upgrade(url)
    db = open_database(url)

    def cache_size(conn: Connection) -> int:
        return int(conn.exec_driver_sql("PRAGMA cache_size").scalar_one())

    async def run() -> tuple[int, int]:
        return await db.read_point(cache_size), await db.read(cache_size)

    try:
        on_the_loop, in_the_pool = asyncio.run(run())
    finally:
        db.close()
    assert (on_the_loop, in_the_pool) == (-32 * 1024, -2000)  # negative: KiB


@pytest.mark.backends("sqlite")
def test_a_writer_that_cannot_open_its_connection_refuses_the_batch_and_connects_for_the_next(
    database_url: str,
) -> None:
    """Another process holding the file (a sibling of ``--processes`` starting up) made the writer thread die
    with its connection, and every later write then waited for ever: the request hung."""
    upgrade(database_url)
    holder = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    db = open_database(database_url, sqlite_busy_timeout_ms=0)

    async def write() -> object:
        return await asyncio.wait_for(db.write(_create("after-the-lock")), 10)

    try:
        with pytest.raises(OperationalError):
            asyncio.run(write())
        holder.rollback()
        holder.close()
        assert asyncio.run(write()) is not None
    finally:
        db.close()


def _waits_for_the_disk(conn: Connection) -> bool:
    """Whether this transaction's commit returns only once it is on disk."""
    if conn.dialect.name == "sqlite":
        return bool(conn.exec_driver_sql("PRAGMA synchronous").scalar_one() >= 2)  # FULL or EXTRA
    return bool(conn.exec_driver_sql("SHOW synchronous_commit").scalar_one() != "off")


def test_a_point_write_commits_without_waiting_for_the_disk_and_other_writes_still_do(database_url: str) -> None:
    """A nonce's write protects only a request that wrote nothing: an fsync per commit was most of its cost
    on SQLite (120 µs of CPU against 20, measured on this machine)."""
    upgrade(database_url)
    db = open_database(database_url)

    async def run() -> list[bool]:
        return [await db.write_point(_waits_for_the_disk), await db.write(_waits_for_the_disk)]

    try:
        assert asyncio.run(run()) == [False, True]
    finally:
        db.close()


@pytest.mark.backends("sqlite")
def test_a_point_write_committed_with_a_durable_one_waits_for_the_disk_with_it(database_url: str) -> None:
    upgrade(database_url)
    db = open_database(database_url)
    writer_busy, release = threading.Event(), threading.Event()

    def hold(_conn: Connection) -> None:
        writer_busy.set()
        release.wait(10)

    async def run() -> list[bool]:
        held = asyncio.ensure_future(db.write(hold))
        await asyncio.get_running_loop().run_in_executor(None, writer_busy.wait, 10)
        together = asyncio.gather(db.write_point(_waits_for_the_disk), db.write(_waits_for_the_disk))
        await asyncio.sleep(0)  # both queued behind ``hold``: the writer takes them as one batch
        release.set()
        await held
        return list(await together)

    try:
        assert asyncio.run(run()) == [True, True]
    finally:
        db.close()
