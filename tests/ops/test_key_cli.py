"""``kassa key add|list|revoke`` (CONTRACT §4, §14) as operators run them beside a running gateway: a key
added is used by the gateway at once, a key revoked is refused from the next request on, and what is not
a registrable public key is refused with a sentence (a private key without being stored or echoed)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.gateway import Gateway, Merchant, cli_run, new_merchant
from tests.support.oauth import key_pair, signed_post, with_exponent

PATH = "/api/v4/payout-check"


@pytest.fixture
def shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


def pem_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / f"{uuid.uuid4().hex[:8]}.pem"
    path.write_text(text)
    return str(path)


def signed(m: Merchant, private: str) -> int:
    """The HTTP status of a payout-check signed with ``private``: 400 once past the OAuth check (these
    fields name no destination), 401 when the signature is refused."""
    address = f"{m.gateway.base}{PATH}/{m.endpoint_id}"
    return signed_post(address, {"client_orderid": "o-1"}, login=m.login, private_key_pem=private).status_code


def failure(gateway: Gateway, *args: str) -> str:
    done = cli_run(gateway, *args)
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr + done.stdout


def test_a_key_added_signs_at_once_and_a_revoked_one_from_the_next_request_on(shop: Merchant, tmp_path: Path) -> None:
    private, public = key_pair(2048, 7)
    added = shop.gateway.cli(
        "key", "add", "--merchant", shop.login, "--mode", "sandbox", "--pem", pem_file(tmp_path, public)
    )
    assert (added["merchant"], added["mode"], added["bits"], added["revoked_at"]) == (shop.login, "sandbox", 2048, None)
    assert len(added["fingerprint"]) == 64
    assert signed(shop, private) == 400
    listed = shop.gateway.cli("key", "list", "--merchant", shop.login)
    assert [(k["id"], k["fingerprint"]) for k in listed] == [(added["id"], added["fingerprint"])]
    revoked = shop.gateway.cli("key", "revoke", str(added["id"]))
    assert revoked["revoked_at"] is not None
    assert signed(shop, private) == 401
    assert shop.gateway.cli("key", "list", "--merchant", shop.login)[0]["revoked_at"] == revoked["revoked_at"]


def test_the_text_output_names_the_key_and_its_fingerprint(shop: Merchant, tmp_path: Path) -> None:
    done = cli_run(
        shop.gateway,
        "key",
        "add",
        "--merchant",
        shop.login,
        "--mode",
        "live",
        "--pem",
        pem_file(tmp_path, key_pair(2048, 8)[1]),
    )
    assert done.returncode == 0, done.stderr
    assert f"added for {shop.login} (live): RSA 2048 bits, SHA256:" in done.stdout
    listing = cli_run(shop.gateway, "key", "list", "--merchant", shop.login).stdout
    assert f"{shop.login}\tlive\tRSA 2048\tSHA256:" in listing and "active" in listing


def test_a_private_key_is_refused_and_neither_stored_nor_echoed(shop: Merchant, tmp_path: Path) -> None:
    private = key_pair(2048, 7)[0]
    message = failure(
        shop.gateway, "key", "add", "--merchant", shop.login, "--mode", "sandbox", "--pem", pem_file(tmp_path, private)
    )
    assert "PRIVATE key" in message
    assert not any(line in message for line in private.splitlines()[1:-1])
    assert shop.gateway.cli("key", "list", "--merchant", shop.login) == []


def test_a_1024_bit_key_is_refused_at_add(shop: Merchant, tmp_path: Path) -> None:
    message = failure(
        shop.gateway,
        "key",
        "add",
        "--merchant",
        shop.login,
        "--mode",
        "sandbox",
        "--pem",
        pem_file(tmp_path, key_pair(1024)[1]),
    )
    assert "the key has 1024 bits; RSA keys must have at least 2048" in message


def test_a_key_registered_twice_is_refused(shop: Merchant, tmp_path: Path) -> None:
    pem = pem_file(tmp_path, key_pair(2048, 9)[1])
    shop.gateway.cli("key", "add", "--merchant", shop.login, "--mode", "sandbox", "--pem", pem)
    message = failure(shop.gateway, "key", "add", "--merchant", shop.login, "--mode", "live", "--pem", pem)
    assert f"{shop.login} has this key already" in message


def test_a_key_with_public_exponent_3_is_refused_at_add(shop: Merchant, tmp_path: Path) -> None:
    pem = pem_file(tmp_path, with_exponent(key_pair(2048, 10)[1], 3))
    message = failure(shop.gateway, "key", "add", "--merchant", shop.login, "--mode", "sandbox", "--pem", pem)
    assert "the public exponent is 3; RSA keys must have one from 65537" in message
    assert shop.gateway.cli("key", "list", "--merchant", shop.login) == []


def test_a_public_key_of_another_merchant_is_refused_revoked_or_not_and_whatever_its_exponent(
    shop: Merchant, tmp_path: Path
) -> None:
    private, public = key_pair(2048, 11)
    other = new_merchant(shop.gateway, f"m-{uuid.uuid4().hex[:10]}")
    pem, same_modulus = pem_file(tmp_path, public), pem_file(tmp_path, with_exponent(public, 65539))
    added = shop.gateway.cli("key", "add", "--merchant", other.login, "--mode", "sandbox", "--pem", pem)
    refused = (
        "Error: this public key is registered for another merchant: each merchant signs with a key pair of its own"
    )

    def add(path: str) -> str:
        return failure(shop.gateway, "key", "add", "--merchant", shop.login, "--mode", "live", "--pem", path).strip()

    assert add(pem) == add(same_modulus) == refused
    shop.gateway.cli("key", "revoke", str(added["id"]))
    assert add(pem) == refused
    assert shop.gateway.cli("key", "list", "--merchant", shop.login) == []
    assert signed(shop, private) == 401


def test_unknown_merchants_and_keys_are_one_line_errors(shared_gateway: Gateway, tmp_path: Path) -> None:
    pem = pem_file(tmp_path, key_pair()[1])
    assert "no merchant with login 'nobody'" in failure(
        shared_gateway, "key", "add", "--merchant", "nobody", "--mode", "sandbox", "--pem", pem
    )
    assert "no merchant with login 'nobody'" in failure(shared_gateway, "key", "list", "--merchant", "nobody")
    assert "no key 987654321" in failure(shared_gateway, "key", "revoke", "987654321")
