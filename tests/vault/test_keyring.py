"""Several vault keys: versions in the ciphertext header, the primary seals, every key opens, card
fingerprints stay those of key 1 after it is retired."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from kassa.vault.keyring import FINGERPRINT, Entries, Keyring, VaultError, derive, parse, render
from kassa.vault.keys import MissingKey, Vault, card_ref_unique_id, header, key_version

K1, K2, K3 = b"1" * 32, b"2" * 32, b"3" * 32
PAN = "4111111111111111"


def b64(secret: bytes) -> str:
    return base64.b64encode(secret).decode()


def vault(text: str, primary: int | None = None) -> Vault:
    return Vault(Keyring.of(parse(text), primary))


def refused(text: str, primary: int | None = None) -> str:
    with pytest.raises(VaultError) as problem:
        Keyring.of(parse(text), primary)
    return str(problem.value)


def test_one_bare_key_is_key_1_and_opens_what_kassa_sealed_before_keys_had_versions() -> None:
    nonce = b"n" * 12
    older = b"\x01" + nonce + AESGCM(derive(K1, b"aead")).encrypt(nonce, PAN.encode(), b"pan/merchant/1")
    one = vault(b64(K1))
    assert (one.primary, one.versions) == (1, (1,))
    assert one.decrypt(older, "pan/merchant/1") == PAN


def test_key_1_still_seals_in_the_format_older_versions_read() -> None:
    blob = vault(f"1:{b64(K1)}").encrypt(PAN, "ctx")
    assert blob[:1] == b"\x01" and len(blob) == 1 + 12 + len(PAN) + 16
    assert Vault(K1).decrypt(blob, "ctx") == PAN  # a vault made of KASSA_VAULT_KEY alone


def test_the_newest_key_seals_with_its_version_in_the_header_and_every_key_opens() -> None:
    both = vault(f"1:{b64(K1)},2:{b64(K2)}")
    old, new = Vault(K1).encrypt(PAN, "ctx"), both.encrypt(PAN, "ctx")
    assert new[:2] == b"\x02\x02" == header(2)
    assert (key_version(old), key_version(new), key_version(b"\x07junk")) == (1, 2, None)
    assert both.decrypt(old, "ctx") == both.decrypt(new, "ctx") == PAN


def test_a_named_primary_seals_though_a_newer_key_is_known() -> None:
    """A rolling deploy: every process learns key 2 while key 1 stays primary, so a process that does not
    know key 2 yet still opens everything sealed meanwhile."""
    learning = vault(f"2:{b64(K2)},1:{b64(K1)}", primary=1)
    assert Vault(K1).decrypt(learning.encrypt(PAN, "ctx"), "ctx") == PAN


def test_reseal_moves_a_ciphertext_under_the_primary_bound_to_the_same_context() -> None:
    blob = Vault(K1).encrypt(PAN, "pan/merchant/7")
    resealed = vault(f"2:{b64(K2)},1:{b64(K1)}").reseal(blob, "pan/merchant/7")
    assert key_version(resealed) == 2
    assert (
        vault(f"2:{b64(K2)},{FINGERPRINT}:{b64(derive(K1, b'fingerprint'))}").decrypt(resealed, "pan/merchant/7") == PAN
    )


def test_a_ciphertext_under_a_key_not_configured_names_the_version_and_nothing_of_the_data() -> None:
    blob = vault(f"3:{b64(K3)},1:{b64(K1)}").encrypt(PAN, "ctx")
    with pytest.raises(MissingKey) as missing:
        Vault(K1).decrypt(blob, "ctx")
    assert missing.value.version == 3
    assert "vault key 3, which is not configured" in str(missing.value)
    assert PAN not in str(missing.value) and b64(K3) not in str(missing.value)


def test_unknown_header_is_refused() -> None:
    with pytest.raises(VaultError, match="unknown vault ciphertext format"):
        Vault(K1).decrypt(b"\x09" + bytes(40), "ctx")


def test_fingerprints_and_unique_card_ref_ids_stay_when_the_key_rotates_and_key_1_is_retired() -> None:
    before = Vault(K1)
    rotating = vault(f"2:{b64(K2)},1:{b64(K1)}")
    pinned = Keyring.of(parse(f"2:{b64(K2)},1:{b64(K1)}"), None).fingerprint_key
    retired = vault(f"2:{b64(K2)},{FINGERPRINT}:{b64(pinned)}")
    assert retired.versions == (2,)
    fingerprints = {v.fingerprint(PAN) for v in (before, rotating, retired)}
    assert len(fingerprints) == 1
    unique = {card_ref_unique_id(v, 5, v.fingerprint(PAN)) for v in (before, rotating, retired)}
    assert len(unique) == 1


def test_the_fingerprint_key_opens_nothing_and_is_not_a_master_key() -> None:
    pinned = derive(K1, b"fingerprint")
    assert pinned not in (K1, derive(K1, b"aead"))


def test_a_keyring_without_key_1_or_the_fingerprint_key_is_refused() -> None:
    message = refused(f"2:{b64(K2)}")
    assert message.startswith("holds no key 1 and no fingerprint entry")
    assert "kassa vault fingerprint-key" in message


def test_a_fingerprint_key_that_is_not_key_1s_is_refused() -> None:
    message = refused(f"2:{b64(K2)},1:{b64(K1)},{FINGERPRINT}:{b64(K3)}")
    assert message == "the fingerprint entry is not the one key 1 gives: card fingerprints would change"


def test_a_primary_the_keyring_lacks_is_refused() -> None:
    assert refused(f"2:{b64(K2)},1:{b64(K1)}", primary=3) == (
        "holds no key 3, which KASSA_VAULT_PRIMARY names (it holds 1, 2)"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (f"2:{b64(b'short')},1:{b64(K1)}", "key 2 must be the base64 of 32 bytes"),
        (f"1:{b64(K1)},1:{b64(K2)}", "holds key 1 twice"),
        (f"0:{b64(K1)}", "entry 1 must be VERSION:BASE64 (a version from 1 to 255) or fingerprint:BASE64"),
        (
            f"1:{b64(K1)},256:{b64(K2)}",
            "entry 2 must be VERSION:BASE64 (a version from 1 to 255) or fingerprint:BASE64",
        ),
        (f"1:{b64(K1)},{b64(K2)}", "entry 2 must be VERSION:BASE64 (a version from 1 to 255) or fingerprint:BASE64"),
        (f"{FINGERPRINT}:{b64(K1)}", "holds no key"),
        (f"{FINGERPRINT}:x,1:{b64(K1)}", "fingerprint must be the base64 of 32 bytes"),
        ("", "holds no key"),
    ],
)
def test_a_keyring_it_cannot_use_is_refused_naming_the_entry_never_its_value(text: str, problem: str) -> None:
    with pytest.raises(VaultError) as refused_text:
        parse(text)
    assert str(refused_text.value) == problem
    assert not any(b64(k) in str(refused_text.value) for k in (K1, K2, K3))


def test_a_keyring_is_written_one_entry_a_line_newest_first_and_read_back() -> None:
    entries = parse(f"1:{b64(K1)}, 2:{b64(K2)}")
    pinned = derive(K1, b"fingerprint")
    written = render(Entries(entries.keys, pinned))
    assert written.splitlines() == [f"{FINGERPRINT}:{b64(pinned)}", f"2:{b64(K2)}", f"1:{b64(K1)}"]
    assert parse(written).keys == {1: K1, 2: K2} and parse(written).fingerprint == pinned
