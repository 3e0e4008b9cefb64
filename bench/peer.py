"""The peer: localstripe (a fake but stateful Stripe server in Python, aiohttp), creating charges the way its
users do: ``POST /v1/charges`` form-encoded with ``Authorization: Bearer sk_test_...``, an amount, a
currency and a test payment method (``source=pm_card_visa``). It is installed with pip into the bench's
environment at bench time when missing, started as its users start it (``localstripe --from-scratch``)
and driven by the same wrk script as the Kassa sales, with the key as an extra header."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

from bench.server import Server, free_port, pinned

PICKLE = Path("/tmp/localstripe.pickle")  # noqa: S108 (localstripe hard-codes it; its store, rewritten on every change)
API_KEY = "sk_test_kassabench"


def ensure_localstripe() -> str | None:
    """The localstripe command of this environment, pip-installing it when missing; None when that fails."""
    command = Path(sys.executable).parent / "localstripe"
    if not command.exists():
        print("bench: localstripe is missing, installing it with pip", file=sys.stderr, flush=True)
        install = [sys.executable, "-m", "pip", "install", "-q", "localstripe"]
        subprocess.run(install, capture_output=True, check=False, timeout=600)
    return str(command) if command.exists() else None


def charge_bodies(count: int) -> Iterator[str]:
    for n in range(count):
        yield urlencode(
            {"amount": "1042", "currency": "usd", "source": "pm_card_visa", "description": f"Benchmark charge {n}"}
        )


def write_headers(path: Path) -> Path:
    path.write_text(f"Authorization: Bearer {API_KEY}\n")
    return path


class Localstripe(Server):
    """localstripe on a free port; removes the pickle of its store afterwards unless it was there before."""

    def __init__(self, command: str, work_dir: Path, core: int | None) -> None:
        port = free_port()
        argv = pinned(core, [command, "--from-scratch", "--port", str(port)])
        super().__init__(argv, dict(os.environ), work_dir / "localstripe.log", "/v1/charges", port)
        self.pickle_existed = PICKLE.exists()

    def stop(self) -> None:
        super().stop()
        if not self.pickle_existed:
            PICKLE.unlink(missing_ok=True)


def version() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "show", "localstripe"], capture_output=True, text=True, check=False
    )
    found = [line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if line.startswith("Version:")]
    return f"localstripe {found[0]}" if found else "not installed"
