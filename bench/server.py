"""Servers under test as real subprocesses, pinned to one core: the ceiling app and ``kassa serve``."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import httpx

from bench.probe import process_cpu_seconds

KASSA = str(Path(sys.executable).parent / "kassa")
PREFIX = "/paynet"


# Sale acceptance is measured on an API-only process (`kassa serve --workers 0`, a supported deployment
# with `kassa worker` elsewhere): issue 6 defines it as signature, validation, durable write, answer.
# Processing and callbacks are measured by the end-to-end run, with the worker in the same process.
API_ONLY = ("--workers", "0")
# An API-only process's jobs wait for workers that are not there, so the oldest due job ages from the
# first sale on and the gateway would shed what the run measures: acceptance runs with shedding off.
NO_SHEDDING = {"KASSA_OVERLOAD_JOB_AGE": "0", "KASSA_OVERLOAD_CALLBACK_AGE": "0"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pinned(core: int | None, argv: list[str]) -> list[str]:
    """``argv`` run on one core through taskset (which execs, so the pid stays the server's)."""
    if core is None or shutil.which("taskset") is None:
        return argv
    return ["taskset", "-c", str(core), *argv]


@dataclass
class Server:
    """One server process; ``ready_path`` is fetched with GET until it answers."""

    argv: list[str]
    env: dict[str, str]
    log_path: Path
    ready_path: str
    port: int
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self, timeout: float = 30) -> Self:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(self.argv, env=self.env, stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log_path.read_text()[-2000:]}")
            try:
                httpx.get(self.url + self.ready_path, timeout=1)
                return self
            except httpx.TransportError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"server did not start within {timeout} s: {' '.join(self.argv)}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def rss_kib(self) -> int:
        """Resident memory now (VmRSS of /proc/PID/status), in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS line")

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.pid)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def ceiling_server(work_dir: Path, core: int | None) -> Server:
    port = free_port()
    argv = pinned(core, [sys.executable, "-m", "bench.ceiling", "--port", str(port)])
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    return Server(argv, env, work_dir / "ceiling.log", "/", port)


def floor_server(work_dir: Path, core: int | None, seeded: int) -> Server:
    """``bench/floor.py`` on a fresh SQLite file holding ``seeded`` orders (ids 1..seeded)."""
    port = free_port()
    database = work_dir / "floor.db"
    database.unlink(missing_ok=True)
    command = [sys.executable, "-m", "bench.floor", "--port", str(port), "--database", str(database)]
    argv = pinned(core, [*command, "--seed", str(seeded)])
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    return Server(argv, env, work_dir / "floor.log", "/", port)


UNREACHED_RATE = "10000000"


@dataclass(frozen=True)
class KassaDeployment:
    """The environment of one Kassa installation (a database and a data directory)."""

    database_url: str
    data_dir: Path
    vault_key: str = field(default_factory=lambda: base64.b64encode(secrets.token_bytes(32)).decode())

    @property
    def env(self) -> dict[str, str]:
        return {
            # The load comes from one address, far beyond a client's default rate: the limiter still
            # runs on every request (its cost is measured) but never refuses. A limit set outside stays.
            "KASSA_ADDRESS_RATE": UNREACHED_RATE,
            **os.environ,
            "KASSA_DATABASE_URL": self.database_url,
            "KASSA_DATA_DIR": str(self.data_dir),
            "KASSA_VAULT_KEY": self.vault_key,
        }

    def cli(self, *args: str) -> Any:
        """Run the operator CLI and return its ``--json`` answer."""
        done = subprocess.run([KASSA, *args, "--json"], env=self.env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"kassa {' '.join(args)} failed: {done.stderr[-2000:]}")
        return json.loads(done.stdout)

    def upgrade(self) -> None:
        subprocess.run([KASSA, "db", "upgrade"], env=self.env, capture_output=True, check=True)

    def server(self, core: int | None, name: str, *options: str) -> Server:
        port = free_port()
        argv = pinned(core, [KASSA, "serve", "--port", str(port), *options])
        env = {**self.env, **NO_SHEDDING} if options == API_ONLY else self.env
        return Server(argv, env, self.data_dir / f"{name}.log", f"{PREFIX}/openapi.json", port)
