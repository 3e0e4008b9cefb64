"""Schema migrations (Alembic), run programmatically so `kassa db upgrade` needs no alembic.ini."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from kassa.storage.database import ensure_sqlite_file, sqlalchemy_url

_SCRIPTS = Path(__file__).parent / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return config


def upgrade(url: str) -> None:
    ensure_sqlite_file(url)
    command.upgrade(alembic_config(url), "head")


def revisions() -> list[str]:
    """Every schema revision this Kassa's migrations know, oldest first: the last is the head."""
    scripts = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [script.revision for script in reversed(list(scripts.walk_revisions()))]
