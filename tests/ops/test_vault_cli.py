"""``kassa vault status|rotate|new-key|fingerprint-key`` as operators run them: a rotation under load on a
serving gateway, after which a gateway with the new key alone reads every stored card back and answers the
same ``unq-card-ref-id``; the sandbox's key file from one key to two and back to one; keys a command cannot
use stop it with one line that shows none of them."""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.api.test_card_refs import make_rebill, stored_card
from tests.api.test_recurring import card_ref_v4
from tests.support.gateway import TEST_VAULT_KEY, Gateway, Merchant, cli_run, new_merchant
from tests.support.oauth import key_pair, register_key
from tests.support.operations import approved_order, final

KEY_2 = base64.b64encode(b"2" * 32).decode()
ROTATING = {"KASSA_VAULT_KEY": "", "KASSA_VAULT_KEYS": f"2:{KEY_2},1:{TEST_VAULT_KEY}"}
CARDS_BEFORE = 12


def failure(gateway: Gateway, *args: str) -> str:
    done = cli_run(gateway, *args)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr + done.stdout


class Load:
    """Threads storing new cards and charging stored ones (make-rebill) until stopped."""

    def __init__(self, shop: Merchant, refs: list[str], threads: int = 2) -> None:
        self.shop, self.refs = shop, refs
        self.stored: list[str] = []
        self.charged: list[dict[str, str]] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(n,)) for n in range(threads)]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _run(self, worker: int) -> None:
        count = 0
        while not self._stop.is_set():
            count += 1
            try:
                self.stored.append(stored_card(self.shop))
                ref = self.refs[count % len(self.refs)]
                self.charged.append(final(self.shop, make_rebill(self.shop, f"load-{worker}-{count}", ref)))
            except Exception as failed:  # every failure is the test's, reported at the end
                self.failures.append(repr(failed))


def test_a_rotation_under_load_leaves_every_card_readable_with_the_new_key_alone(
    gateway_factory: Callable[..., Gateway],
) -> None:
    first = gateway_factory()
    shop = new_merchant(first, "shop")
    register_key(first, shop.login, key_pair()[1])
    refs = [stored_card(shop) for _ in range(CARDS_BEFORE)]
    orderid = approved_order(shop, "unq-before")
    unique_before = card_ref_v4(shop, "unq-before", orderid)["unq-card-ref-id"]
    first.stop()

    rotating = gateway_factory(**ROTATING)  # key 2 known and primary: every process (one here) restarted
    shop = dataclasses.replace(shop, gateway=rotating)
    with Load(shop, refs) as load:
        while not load.stored:  # the load is on before the rotation starts
            assert not load.failures, load.failures
            time.sleep(0.05)
        during = len(load.stored)
        done = cli_run(rotating, "vault", "rotate", "--batch", "1", "--pause", "0.1", "--json")
        during = len(load.stored) - during
    assert done.returncode == 0, done.stderr
    assert not load.failures, load.failures
    assert during >= 1 and load.charged
    assert {charged["status"] for charged in load.charged} == {"approved"}
    report = json.loads(done.stdout)
    assert (report["primary"], report["left"]) == (2, {})
    assert report["kinds"]["card_numbers"]["resealed"] == CARDS_BEFORE + 1  # and the order of unq-before
    assert report["kinds"]["control_keys"]["resealed"] == 1
    status = rotating.cli("vault", "status")
    assert (status["totals"]["1"], status["retirable"], status["missing"]) == (0, [1], [])
    fingerprint = rotating.cli("vault", "fingerprint-key")["entry"]
    rotating.stop()

    retired = gateway_factory(KASSA_VAULT_KEY="", KASSA_VAULT_KEYS=f"2:{KEY_2},{fingerprint}")
    shop = dataclasses.replace(shop, gateway=retired)
    every_card = refs + load.stored
    answers = [make_rebill(shop, f"after-{n}", ref) for n, ref in enumerate(every_card)]
    assert [final(shop, answer)["status"] for answer in answers] == ["approved"] * len(every_card)
    assert card_ref_v4(shop, "unq-before", orderid)["unq-card-ref-id"] == unique_before
    again = approved_order(shop, "unq-after")  # the same card number, stored after key 1 is gone
    assert card_ref_v4(shop, "unq-after", again)["unq-card-ref-id"] == unique_before
    status = retired.cli("vault", "status")
    assert (status["keys"], list(status["totals"]), status["missing"]) == ([2], ["2"], [])


@pytest.mark.backends("sqlite")
def test_the_sandbox_key_file_gets_a_new_key_and_loses_key_1_once_nothing_is_under_it(
    database_url: str, tmp_path: Path
) -> None:
    sandbox = Gateway(database_url, tmp_path, extra_env={"KASSA_VAULT_KEY": ""})  # the key file's
    assert cli_run(sandbox, "db", "upgrade").returncode == 0
    created = sandbox.cli("merchant", "create", "--login", "shop")
    key_file = tmp_path / "vault.key"
    assert sandbox.cli("vault", "new-key") == {"version": 2, "key_file": str(key_file)}
    before = sandbox.cli("vault", "status")
    assert (before["primary"], before["totals"], before["retirable"]) == (2, {"1": 1, "2": 0}, [])
    assert sandbox.cli("vault", "rotate")["kinds"]["control_keys"]["resealed"] == 1
    assert sandbox.cli("vault", "status")["retirable"] == [1]
    key_file.write_text("".join(line for line in key_file.read_text().splitlines(True) if not line.startswith("1:")))
    assert sandbox.cli("merchant", "show", "--login", "shop")["control_key"] == created["control_key"]
    assert sandbox.cli("vault", "status")["keys"] == [2]


def test_rotate_says_what_it_did_and_status_when_a_key_can_be_retired(database_url: str, tmp_path: Path) -> None:
    gateway = Gateway(database_url, tmp_path, extra_env=ROTATING)
    assert cli_run(gateway, "db", "upgrade").returncode == 0
    Gateway(database_url, tmp_path).cli("merchant", "create", "--login", "shop")  # under key 1
    done = cli_run(gateway, "vault", "rotate")
    assert done.returncode == 0, done.stderr
    assert "card_numbers: 0 resealed under key 2" in done.stdout
    assert "control_keys: 1 resealed under key 2" in done.stdout
    assert done.stdout.endswith("every ciphertext is under key 2\n")
    shown = cli_run(gateway, "vault", "status").stdout
    assert "key 1: nothing sealed under it: it can be retired" in shown
    assert "key 2: primary, seals everything new" in shown
    assert KEY_2 not in done.stdout + shown and TEST_VAULT_KEY not in done.stdout + shown


def test_new_key_for_keys_in_the_environment_prints_the_next_version_to_add(tmp_path: Path) -> None:
    gateway = Gateway(f"sqlite:///{tmp_path / 'kassa.db'}", tmp_path, extra_env=ROTATING)
    made = gateway.cli("vault", "new-key")
    version, _, secret = made["entry"].partition(":")
    assert (made["version"], version, len(base64.b64decode(secret))) == (3, "3", 32)
    assert not (tmp_path / "vault.key").exists()


def test_status_names_a_key_retired_too_soon(database_url: str, tmp_path: Path) -> None:
    gateway = Gateway(database_url, tmp_path, extra_env=dict(ROTATING))
    assert cli_run(gateway, "db", "upgrade").returncode == 0
    Gateway(database_url, tmp_path).cli("merchant", "create", "--login", "shop")  # under key 1, never rotated
    fingerprint = gateway.cli("vault", "fingerprint-key")["entry"]
    gateway.extra_env["KASSA_VAULT_KEYS"] = f"2:{KEY_2},{fingerprint}"
    shown = failure(gateway, "vault", "status")
    assert "key 1: 1 ciphertext under it, and it is not configured: unreadable" in shown
    assert "1: sealed under key 1, which is not configured" in failure(gateway, "vault", "rotate")
    assert failure(gateway, "merchant", "show", "--login", "shop").startswith(
        "Error: a ciphertext is sealed under vault key 1, which is not configured"
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"KASSA_VAULT_KEY": "", "KASSA_VAULT_KEYS": f"2:{KEY_2}"},
            "Error: KASSA_VAULT_KEYS: holds no key 1 and no fingerprint entry, and card fingerprints come from "
            "key 1's: add fingerprint:BASE64 (`kassa vault fingerprint-key` prints it while key 1 is configured)\n",
        ),
        (
            {"KASSA_VAULT_KEY": "", "KASSA_VAULT_KEYS": f"2:{KEY_2},1:{TEST_VAULT_KEY}", "KASSA_VAULT_PRIMARY": "3"},
            "Error: KASSA_VAULT_KEYS: holds no key 3, which KASSA_VAULT_PRIMARY names (it holds 1, 2)\n",
        ),
        (
            {"KASSA_VAULT_KEYS": f"1:{TEST_VAULT_KEY}"},
            "Error: KASSA_VAULT_KEYS: set it or KASSA_VAULT_KEY, not both (KASSA_VAULT_KEY is key 1: write it as "
            "1:BASE64 among KASSA_VAULT_KEYS)\n",
        ),
    ],
)
@pytest.mark.parametrize("command", [("serve",), ("vault", "status")])
def test_keys_a_command_cannot_use_stop_it_with_one_line_showing_none(
    tmp_path: Path, env: dict[str, str], message: str, command: tuple[str, ...]
) -> None:
    gateway = Gateway(f"sqlite:///{tmp_path / 'kassa.db'}", tmp_path, extra_env=env)
    done = cli_run(gateway, *command)
    assert (done.returncode, done.stderr, done.stdout) == (1, message, "")
    assert not (tmp_path / "kassa.db").exists()


@pytest.mark.parametrize("command", [("serve",), ("vault", "status")])
def test_a_key_file_it_cannot_use_stops_it_with_one_line(tmp_path: Path, command: tuple[str, ...]) -> None:
    key_file = tmp_path / "vault.key"
    key_file.write_text(f"3:{KEY_2}\n")
    gateway = Gateway(f"sqlite:///{tmp_path / 'kassa.db'}", tmp_path, extra_env={"KASSA_VAULT_KEY": ""})
    done = cli_run(gateway, *command)
    message = f"Error: {key_file}: holds no key 1 and no fingerprint entry"
    assert (done.returncode, done.stderr.startswith(message), done.stdout) == (1, True, "")
    assert KEY_2 not in done.stderr
