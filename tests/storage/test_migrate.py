"""Migrations run by several processes at once (servers of one deployment starting together) apply once."""

from __future__ import annotations

import os
import subprocess

from tests.support.databases import fresh_postgres, run_sql
from tests.support.gateway import KASSA


def test_upgrades_started_together_on_an_empty_postgresql_database_all_succeed() -> None:
    with fresh_postgres("kassa_migrate") as url:
        env = {**os.environ, "KASSA_DATABASE_URL": url, "KASSA_VAULT_KEY": ""}
        started = [
            subprocess.Popen(
                [KASSA, "db", "upgrade"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(4)
        ]
        finished = [(process.wait(120), process.stderr.read() if process.stderr else "") for process in started]
        assert [code for code, _ in finished] == [0] * 4, [said[-600:] for code, said in finished if code]
        assert run_sql(url, "SELECT count(*) FROM alembic_version") == [(1,)]
