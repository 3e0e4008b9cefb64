"""``kassa backup`` and ``kassa restore`` as an operator runs them: a SQLite backup taken while a gateway takes
sales restores into a fresh data directory where the ledger checks out, orders answer and stored cards
charge again with the same vault key; the backup holds no card number and no key. PostgreSQL is backed up
with the ``pg_dump``/``pg_restore`` recipe of docs/operations.md."""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
import stat
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from kassa.storage.migrate import alembic_config, revisions
from tests.api.test_card_refs import make_rebill, stored_card
from tests.support.databases import fresh_postgres, run_sql
from tests.support.gateway import TLS, Gateway, Merchant, cli_run, new_merchant
from tests.support.operations import final

PAN = "4111111111111111"
CONSISTENT = {"ok": True, "problems": []}
HEAD = revisions()[-1]


def at(data_dir: Path, **env: str) -> Gateway:
    """A gateway (started or not) whose database is ``kassa.db`` in ``data_dir``."""
    return Gateway(f"sqlite:///{data_dir / 'kassa.db'}", data_dir, extra_env=env)


def kassa(gateway: Gateway, *args: str) -> Any:
    """``kassa ARGS --json`` with the gateway's settings; its JSON answer, once it succeeded."""
    done = cli_run(gateway, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def refusal(gateway: Gateway, *args: str) -> str:
    """What ``kassa ARGS`` says when it refuses: exactly one line, never a traceback."""
    done = cli_run(gateway, *args)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def same_merchant(m: Merchant, gateway: Gateway) -> Merchant:
    return Merchant(gateway, m.login, m.control_key, m.endpoint_id, m.currency)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


class Sales:
    """Sales sent from a few threads until the block ends; each answer's HTTP status is kept."""

    def __init__(self, merchant: Merchant) -> None:
        self.statuses: list[int] = []
        self._merchant = merchant
        self._stop = threading.Event()
        self._changed = threading.Condition()

    def run(self) -> None:
        while not self._stop.is_set():
            answer = self._merchant.sale(f"load-{uuid.uuid4().hex[:12]}", credit_card_number=PAN)
            with self._changed:
                self.statuses.append(answer.status_code)
                self._changed.notify_all()

    def wait_for(self, count: int) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.statuses) >= count, timeout=60), self.statuses

    def stop(self) -> None:
        self._stop.set()


@contextmanager
def selling(merchant: Merchant, threads: int = 3) -> Iterator[Sales]:
    sales = Sales(merchant)
    workers = [threading.Thread(target=sales.run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    try:
        yield sales
    finally:
        sales.stop()
        for worker in workers:
            worker.join()


def approved_sales(merchant: Merchant, count: int) -> list[str]:
    """``count`` sales, each waited for until approved; their order ids."""
    orders = [str(merchant.sale(f"before-{i}", credit_card_number=PAN).json()["paynet-order-id"]) for i in range(count)]
    for order in orders:
        assert merchant.wait_final(order)["status"] == "approved"
    return orders


def test_a_backup_taken_under_load_restores_into_a_fresh_directory_where_orders_and_cards_still_work(
    tmp_path: Path,
) -> None:
    # As a sandbox deployment runs: the key generated into the data directory, which a backup leaves out.
    live_dir, backups, fresh_dir = tmp_path / "live", tmp_path / "backups", tmp_path / "restored"
    live_dir.mkdir()
    backups.mkdir()
    live = at(live_dir, KASSA_VAULT_KEY="", KASSA_ADDRESS_RATE="0").start()
    try:
        merchant = new_merchant(live, "shop")
        card_ref = stored_card(merchant)
        before = approved_sales(merchant, 5)
        with selling(merchant) as sales:
            sales.wait_for(20)
            report = kassa(live, "backup", str(backups / "kassa.db"))
            served_by_then = len(sales.statuses)
            sales.wait_for(served_by_then + 20)  # and the gateway goes on taking sales
        assert set(sales.statuses) == {200}
    finally:
        live.stop()

    backup = backups / "kassa.db"
    assert report["file"] == str(backup)
    assert (report["schema_revision"], report["integrity"]) == (HEAD, "ok")
    assert 6 + 20 <= report["orders"] <= 6 + len(sales.statuses)  # a card's sale and 5, and those sent by then
    assert [path.name for path in backups.iterdir()] == ["kassa.db"]  # no temporary file left
    assert mode(backup) == 0o600
    held = backup.read_bytes()
    key_text = (live_dir / "vault.key").read_text().strip()
    assert PAN.encode() not in held
    assert merchant.control_key.encode() not in held
    assert key_text.encode() not in held
    assert base64.b64decode(key_text) not in held

    # The key travels apart from the backup, and is put in place first.
    fresh_dir.mkdir(mode=0o700)
    shutil.copy2(live_dir / "vault.key", fresh_dir / "vault.key")
    restored = at(fresh_dir, KASSA_VAULT_KEY="")
    result = kassa(restored, "restore", str(backup))
    assert (result["orders"], result["schema_revision"]) == (report["orders"], HEAD)
    assert (result["moved_aside"], result["vault_key"]) == ([], "ok")
    assert mode(fresh_dir / "kassa.db") == 0o600
    again = same_merchant(merchant, restored)
    assert kassa(restored, "ledger", "check") == CONSISTENT

    restored.start()
    try:
        for order in before:
            assert again.status(orderid=order).json()["status"] == "approved"
        rebill = final(again, make_rebill(again, "after-restore", card_ref, "7.50"))
        assert (rebill["status"], rebill["amount"], rebill["last-four-digits"]) == ("approved", "7.50", "1111")
        assert kassa(restored, "ledger", "check") == CONSISTENT
    finally:
        restored.stop()


def test_restore_refuses_a_database_a_running_gateway_has_open(tmp_path: Path) -> None:
    gateway = at(tmp_path).start()
    try:
        approved_sales(new_merchant(gateway, "busy"), 1)
        kassa(gateway, "backup", str(tmp_path / "backup.db"))
        said = refusal(gateway, "restore", "--force", str(tmp_path / "backup.db"))
        database = tmp_path / "kassa.db"
        assert said == f"Error: {database} is open in another process (a running gateway?): stop it before restoring"
        assert not list(tmp_path.glob("kassa.db.before-restore-*"))
        assert httpx.get(f"{gateway.base}/openapi.json", verify=TLS).status_code == 200
    finally:
        gateway.stop()


def logins(database: Path) -> set[str]:
    with closing(sqlite3.connect(database)) as conn, conn:
        return {row[0] for row in conn.execute("SELECT login FROM merchants")}


def test_restore_over_a_database_needs_force_and_keeps_the_old_one_aside(tmp_path: Path) -> None:
    gateway = at(tmp_path)
    cli_run(gateway, "db", "upgrade").check_returncode()
    new_merchant(gateway, "in-backup")
    done = cli_run(gateway, "backup", str(tmp_path / "backup.db"))
    assert done.returncode == 0, done.stderr
    assert "is in the data directory, beside the vault key: copy it elsewhere" in done.stderr
    new_merchant(gateway, "after-backup")

    said = refusal(gateway, "restore", str(tmp_path / "backup.db"))
    assert (
        said == f"Error: a database is already at {tmp_path / 'kassa.db'}: --force moves it aside (nothing is deleted)"
    )
    assert logins(tmp_path / "kassa.db") == {"in-backup", "after-backup"}

    result = kassa(gateway, "restore", "--force", str(tmp_path / "backup.db"))
    aside = [Path(path) for path in result["moved_aside"]]
    assert aside and aside[0].name.startswith("kassa.db.before-restore-")
    assert logins(aside[0]) == {"in-backup", "after-backup"}
    assert logins(tmp_path / "kassa.db") == {"in-backup"}


def test_restore_brings_an_older_backup_up_to_the_current_schema(tmp_path: Path) -> None:
    from alembic import command

    old, fresh = at(tmp_path / "old"), at(tmp_path / "fresh")
    (tmp_path / "old").mkdir()
    command.upgrade(alembic_config(old.database_url), revisions()[-2])
    kassa(old, "backup", str(tmp_path / "backup.db"))
    done = cli_run(fresh, "restore", str(tmp_path / "backup.db"))
    assert done.returncode == 0, done.stderr
    assert f"schema revision {revisions()[-2]}, upgraded to {HEAD}" in done.stdout
    with closing(sqlite3.connect(tmp_path / "fresh" / "kassa.db")) as conn, conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD,)]
    assert kassa(fresh, "ledger", "check") == CONSISTENT


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Gateway, Path]:
    """A gateway's data directory with a database and one merchant (not served), and a backup of it."""
    data_dir = tmp_path_factory.mktemp("made")
    gateway = at(data_dir)
    cli_run(gateway, "db", "upgrade").check_returncode()
    new_merchant(gateway, "sealed")
    backup = tmp_path_factory.mktemp("backups") / "backup.db"
    kassa(gateway, "backup", str(backup))
    return gateway, backup


@pytest.mark.parametrize(
    ("key", "said"),
    [
        (
            base64.b64encode(b"x" * 32).decode(),
            "restored, but the configured vault key cannot decrypt the merchants' control keys: configure the "
            "key the backup was sealed with (KASSA_VAULT_KEYS or KASSA_VAULT_KEY, or the key file {key_file}) "
            "before starting the gateway",
        ),
        (
            "",
            "restored, but no vault key is configured to decrypt the merchants' control keys: set the key they "
            "were sealed with (KASSA_VAULT_KEYS or KASSA_VAULT_KEY, or the key file {key_file})",
        ),
    ],
    ids=["another key", "no key"],
)
def test_restore_says_in_one_line_when_the_vault_key_cannot_open_the_restored_data(
    made: tuple[Gateway, Path], tmp_path: Path, key: str, said: str
) -> None:
    _, backup = made
    fresh = at(tmp_path, KASSA_VAULT_KEY=key)
    assert refusal(fresh, "restore", str(backup)) == "Error: " + said.format(key_file=tmp_path / "vault.key")
    assert logins(tmp_path / "kassa.db") == {"sealed"}  # restored all the same: the key can be put in place
    assert not (tmp_path / "vault.key").exists()  # and none was generated, which would open nothing


def test_restore_refuses_a_backup_made_by_a_newer_kassa(made: tuple[Gateway, Path], tmp_path: Path) -> None:
    _, backup = made
    newer = tmp_path / "newer.db"
    shutil.copy(backup, newer)
    with closing(sqlite3.connect(newer)) as conn, conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    said = refusal(at(tmp_path / "fresh"), "restore", str(newer))
    assert said == (
        f"Error: {newer} has schema revision 9999, which this Kassa does not know: "
        "restore it with the Kassa version that made it, or a newer one"
    )
    assert not (tmp_path / "fresh" / "kassa.db").exists()


def damaged(backup: Path, tmp_path: Path) -> Path:
    """A copy of ``backup`` whose merchants table's first page is overwritten."""
    copy = tmp_path / "damaged.db"
    shutil.copy(backup, copy)
    with closing(sqlite3.connect(copy)) as conn, conn:
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        (root,) = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'merchants'").fetchone()
    with copy.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xff" * page_size)
    return copy


def not_kassa(tmp_path: Path) -> Path:
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE notes (text)")
    return other


def garbage(tmp_path: Path) -> Path:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"not a database\n" * 1000)
    return path


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (lambda made, tmp: ["restore", str(tmp / "missing.db")], "no backup file at {tmp}/missing.db"),
        (lambda made, tmp: ["restore", str(tmp)], "{tmp} is a directory: name the backup file"),
        (
            lambda made, tmp: ["restore", str(garbage(tmp))],
            "{tmp}/garbage.db is not a Kassa backup: file is not a database",
        ),
        (
            lambda made, tmp: ["restore", str(not_kassa(tmp))],
            "{tmp}/other.db is not a Kassa database: it has no schema revision (alembic_version) or orders",
        ),
        (lambda made, tmp: ["restore", str(damaged(made, tmp))], "{tmp}/damaged.db is damaged: "),
        (
            lambda made, tmp: ["backup", str(tmp)],
            "{tmp} is a directory: name the backup file, such as {tmp}/kassa-backup.db",
        ),
        (lambda made, tmp: ["backup", str(tmp / "no" / "b.db")], "no directory {tmp}/no to write b.db in"),
        (
            lambda made, tmp: ["backup", str(made)],
            "{made} exists: name a new file, or --force to replace it once the new backup is verified",
        ),
    ],
    ids=[
        "missing",
        "a directory",
        "not SQLite",
        "not Kassa's",
        "damaged",
        "into a directory",
        "no such folder",
        "exists",
    ],
)
def test_bad_files_are_refused_in_one_line(
    made: tuple[Gateway, Path], tmp_path: Path, arguments: Callable[[Path, Path], list[str]], said: str
) -> None:
    gateway, backup = made
    args = arguments(backup, tmp_path)
    expected = "Error: " + said.format(tmp=tmp_path, made=backup)
    assert refusal(gateway, *args).startswith(expected)


def test_backup_refuses_to_overwrite_the_database_or_back_up_nothing(
    made: tuple[Gateway, Path], tmp_path: Path
) -> None:
    gateway, _ = made
    database = gateway.data_dir / "kassa.db"
    assert (
        refusal(gateway, "backup", "--force", str(database))
        == f"Error: {database} is the database itself: name another file"
    )
    empty = at(tmp_path / "empty")
    assert refusal(empty, "backup", str(tmp_path / "b.db")) == (
        f"Error: no database at {tmp_path / 'empty' / 'kassa.db'} (KASSA_DATABASE_URL): nothing to back up"
    )
    assert not (tmp_path / "empty").exists()  # looking for it made nothing


def test_backup_replaces_an_existing_file_only_with_force_once_verified(
    made: tuple[Gateway, Path], tmp_path: Path
) -> None:
    gateway, _ = made
    target = tmp_path / "nightly.db"
    target.write_bytes(b"last night's")
    report = kassa(gateway, "backup", "--force", str(target))
    assert (report["orders"], report["schema_revision"]) == (0, HEAD)
    assert logins(target) == {"sealed"}
    assert mode(target) == 0o600


@pytest.mark.backends("postgresql")
def test_postgresql_backs_up_with_the_documented_pg_dump_while_serving_and_restores_into_a_fresh_database(
    database_url: str, tmp_path: Path
) -> None:
    live = Gateway(database_url, tmp_path, extra_env={"KASSA_ADDRESS_RATE": "0"}).start()
    try:
        merchant = new_merchant(live, "pg-shop")
        before = approved_sales(merchant, 3)
        said = refusal(live, "backup", str(tmp_path / "kassa.db"))
        assert said == (
            "Error: kassa backup is for SQLite; on PostgreSQL use pg_dump and pg_restore, or a base backup "
            "with WAL archiving (docs/operations.md, Backups and restore)"
        )
        dump = tmp_path / "kassa.dump"
        with selling(merchant) as sales:
            sales.wait_for(10)
            subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", database_url], check=True)
        assert set(sales.statuses) == {200}
    finally:
        live.stop()

    with fresh_postgres() as restored_url:
        restore = ["pg_restore", "--exit-on-error", "--single-transaction", "--no-owner", f"--dbname={restored_url}"]
        subprocess.run([*restore, str(dump)], check=True)
        restored = Gateway(restored_url, tmp_path)
        assert kassa(restored, "ledger", "check") == CONSISTENT
        assert run_sql(restored_url, "SELECT count(*) FROM orders WHERE client_orderid LIKE 'before-%%'") == [(3,)]
        again = same_merchant(merchant, restored)
        restored.start()
        try:
            assert again.status(orderid=before[0]).json()["status"] == "approved"
        finally:
            restored.stop()
