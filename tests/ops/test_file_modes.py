"""What Kassa writes to disk is its operator's alone: the SQLite database with its WAL and SHM, the
generated vault key and the data directory are created 0600/0700 even under a permissive umask."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.gateway import KASSA, Gateway, new_merchant

pytestmark = pytest.mark.backends("sqlite")  # the files are SQLite's; PostgreSQL keeps its own


@contextmanager
def umask(mask: int) -> Iterator[None]:
    earlier = os.umask(mask)
    try:
        yield
    finally:
        os.umask(earlier)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_serve_creates_its_database_files_key_and_data_directory_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    env = {"KASSA_DATA_DIR": str(data_dir), "KASSA_VAULT_KEY": ""}
    gateway = Gateway(f"sqlite:///{data_dir / 'kassa.db'}", tmp_path, extra_env=env)
    with umask(0o022):
        gateway.start()
    try:
        merchant = new_merchant(gateway, "modes")
        merchant.wait_final(merchant.sale("modes-1").json()["paynet-order-id"])
        assert mode(data_dir) == 0o700
        for name in ("kassa.db", "kassa.db-wal", "kassa.db-shm", "vault.key"):
            assert mode(data_dir / name) == 0o600, name
    finally:
        gateway.stop()


def test_db_upgrade_creates_the_database_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "state" / "var"
    env = {**os.environ, "KASSA_DATA_DIR": str(data_dir), "KASSA_DATABASE_URL": f"sqlite:///{data_dir / 'k.db'}"}
    with umask(0o022):
        subprocess.run([KASSA, "db", "upgrade"], env=env, check=True, capture_output=True)
    assert mode(data_dir) == 0o700
    assert mode(data_dir / "k.db") == 0o600
