"""Runtime settings, read once from the environment (``KASSA_*``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _env(name: str, default: str) -> str:
    return os.environ.get(f"KASSA_{name}", default)


def _normalize_prefix(prefix: str) -> str:
    stripped = "/" + prefix.strip("/")
    return "" if stripped == "/" else stripped


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path = Path("var")
    database_url: str = "sqlite:///var/kassa.db"
    prefix: str = "/paynet"
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    vault_key: str | None = None
    poll_interval: float = 0.2
    job_lease_seconds: float = 30.0
    sandbox_latency_ms: int = 0
    sqlite_synchronous: str = "FULL"
    sqlite_reads_in_place: bool = True
    db_threads: int = 16
    log_level: str = "INFO"
    public_url: str | None = None
    endpoint_cache_seconds: float = 2.0
    reconcile_delay_seconds: float = 60.0
    authorization_ttl_seconds: float = 7 * 86400.0
    settlement_cutoff: str = "00:00"
    scheduler_interval: float = 10.0
    callback_timeout: float = 10.0
    callback_base_delay: float = 15.0
    callback_backoff: float = 1.435
    callback_max_attempts: int = 30
    session_ttl_seconds: float = 1800.0
    test_clock: bool = False

    @classmethod
    def from_env(cls) -> Settings:
        data_dir = Path(_env("DATA_DIR", "var"))
        return cls(
            data_dir=data_dir,
            database_url=_env("DATABASE_URL", f"sqlite:///{data_dir / 'kassa.db'}"),
            prefix=_normalize_prefix(_env("PREFIX", "/paynet")),
            host=_env("HOST", "127.0.0.1"),
            port=int(_env("PORT", "8080")),
            workers=int(_env("WORKERS", "1")),
            vault_key=os.environ.get("KASSA_VAULT_KEY"),
            poll_interval=float(_env("POLL_INTERVAL", "0.2")),
            job_lease_seconds=float(_env("JOB_LEASE_SECONDS", "30")),
            sandbox_latency_ms=int(_env("SANDBOX_LATENCY_MS", "0")),
            sqlite_synchronous=_env("SQLITE_SYNCHRONOUS", "FULL").upper(),
            sqlite_reads_in_place=_env("SQLITE_READS_IN_PLACE", "1") != "0",
            db_threads=int(_env("DB_THREADS", "16")),
            log_level=_env("LOG_LEVEL", "INFO").upper(),
            public_url=os.environ.get("KASSA_PUBLIC_URL"),
            endpoint_cache_seconds=float(_env("ENDPOINT_CACHE_SECONDS", "2")),
            reconcile_delay_seconds=float(_env("RECONCILE_DELAY_SECONDS", "60")),
            authorization_ttl_seconds=float(_env("AUTHORIZATION_TTL_SECONDS", str(7 * 86400))),
            settlement_cutoff=_env("SETTLEMENT_CUTOFF", "00:00"),
            scheduler_interval=float(_env("SCHEDULER_INTERVAL", "10")),
            callback_timeout=float(_env("CALLBACK_TIMEOUT", "10")),
            callback_base_delay=float(_env("CALLBACK_BASE_DELAY", "15")),
            callback_backoff=float(_env("CALLBACK_BACKOFF", "1.435")),
            callback_max_attempts=int(_env("CALLBACK_MAX_ATTEMPTS", "30")),
            session_ttl_seconds=float(_env("SESSION_TTL_SECONDS", "1800")),
            test_clock=_env("TEST_CLOCK", "0") == "1",  # tests only: the clock can be moved; no live endpoints
        )

    @property
    def vault_key_file(self) -> Path:
        return self.data_dir / "vault.key"
