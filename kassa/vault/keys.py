"""The vault key: AES-256-GCM for card data at rest, HMAC-SHA256 for card fingerprints.

One 32-byte master key (``KASSA_VAULT_KEY``, base64; or, for a sandbox, a 0600 key file generated on
first start). Sub-keys for encryption and fingerprinting are derived with HKDF so one secret can never
be used for two purposes. Every ciphertext is bound to its purpose and row by associated data, so a
ciphertext copied into another row does not decrypt.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from kassa import randomness

_VERSION = b"\x01"
_NONCE_BYTES = 12


class VaultError(ValueError):
    pass


def master_key(text: str) -> bytes:
    """The 32-byte master key from its base64 text (``KASSA_VAULT_KEY``, or the key file)."""
    try:
        key = base64.b64decode(text, validate=True)
    except binascii.Error:
        key = b""
    if len(key) != 32:
        raise VaultError("must be the base64 of 32 bytes")
    return key


def _derive(master: bytes, purpose: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"kassa-vault/" + purpose).derive(master)


class Vault:
    def __init__(self, master_key: bytes) -> None:
        if len(master_key) != 32:
            raise VaultError("the vault key must be 32 bytes")
        self._aead = AESGCM(_derive(master_key, b"aead"))
        self._fingerprint_key = _derive(master_key, b"fingerprint")

    def encrypt(self, plaintext: str, context: str) -> bytes:
        # Never repeated, across forks too; why not os.urandom for each: randomness.py.
        nonce = randomness.token_bytes(_NONCE_BYTES)
        return _VERSION + nonce + self._aead.encrypt(nonce, plaintext.encode(), context.encode())

    def decrypt(self, blob: bytes, context: str) -> str:
        if blob[:1] != _VERSION:
            raise VaultError("unknown vault ciphertext version")
        nonce, body = blob[1 : 1 + _NONCE_BYTES], blob[1 + _NONCE_BYTES :]
        return self._aead.decrypt(nonce, body, context.encode()).decode()

    def fingerprint(self, value: str) -> str:
        """A keyed digest: equal inputs match, but a stolen database cannot brute-force PANs from it."""
        return hmac.new(self._fingerprint_key, value.encode(), hashlib.sha256).hexdigest()


def load_vault(configured_key: str | None, key_file: Path) -> Vault:
    if configured_key:
        return Vault(master_key(configured_key))
    if not key_file.exists():
        _create_key_file(key_file)
    return Vault(master_key(key_file.read_text().strip()))


def _create_key_file(key_file: Path) -> None:
    key_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process of this deployment created it first
        return
    with os.fdopen(fd, "w") as handle:
        handle.write(base64.b64encode(secrets.token_bytes(32)).decode())


def pan_context(merchant_id: int) -> str:
    return f"pan/merchant/{merchant_id}"


def destination_context(merchant_id: int) -> str:
    """A payout's bank account, e-wallet or phone, with the names that go with it."""
    return f"destination/merchant/{merchant_id}"


def cvv_context(serial: str) -> str:
    return f"cvv/transaction/{serial}"


def control_key_context(merchant_id: int) -> str:
    return f"control-key/merchant/{merchant_id}"


def card_ref_unique_id(vault: Vault, merchant_id: int, pan_fingerprint: str) -> str:
    """create-card-ref v4's ``unq-card-ref-id``: the same for every reference of one card number at one
    merchant, computed from the card's keyed fingerprint, never the PAN. The merchant's id is inside the
    keyed digest, so two merchants get unrelated values for one card and cannot match their customers by
    it. 40 hex digits (160 bits)."""
    return vault.fingerprint(f"unq-card-ref/merchant/{merchant_id}/{pan_fingerprint}")[:40]
