"""Merchants' RSA public keys (CONTRACT §4): which PEM texts an operator may register, and what is kept
of them. Pure: the text comes from the CLI, the parsed key goes to the verifier."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

MIN_BITS = 2048
# FIPS 186-5 (A.1.1): 2^16 < e < 2^256. A small exponent such as 3 opens signatures to forgery where a
# verifier is lax about the padding (Bleichenbacher 2006); every common generator makes 65537.
MIN_EXPONENT = 65537
_MAX_EXPONENT = 2**256
_SPKI = "PUBLIC KEY"
_PKCS1 = "RSA PUBLIC KEY"


class KeyProblem(ValueError):
    """A text that is not a public key Kassa accepts; the message says why and never quotes the text."""


@dataclass(frozen=True, slots=True)
class PublicKey:
    """A registrable key: its SubjectPublicKeyInfo PEM (PKCS#1 input is converted), the SHA-256 of its
    DER (lower-case hex, as ``openssl pkey -pubin -outform DER | sha256sum`` prints it), its size and its
    modulus (whose factors are the private key, whatever the exponent)."""

    pem: str
    fingerprint: str
    bits: int
    modulus: int


def read_public_key(text: str) -> PublicKey:
    """The key in ``text`` (one ``BEGIN PUBLIC KEY`` or ``BEGIN RSA PUBLIC KEY`` PEM block), RSA of at
    least ``MIN_BITS`` bits with a public exponent from ``MIN_EXPONENT`` to 2^256; anything else raises
    ``KeyProblem``. A private key is refused before it is
    parsed, so nothing of it is kept or shown."""
    if "PRIVATE KEY" in text:
        raise KeyProblem(
            "this is a PRIVATE key: keep it on the merchant's side and register its public key "
            "(openssl pkey -in private.pem -pubout -out public.pem)"
        )
    labels = [line.strip()[len("-----BEGIN ") : -len("-----")] for line in text.splitlines() if "-----BEGIN " in line]
    if labels == ["CERTIFICATE"]:
        raise KeyProblem("this is a certificate: register its public key (openssl x509 -in cert.pem -pubkey -noout)")
    if len(labels) != 1 or labels[0] not in (_SPKI, _PKCS1):
        raise KeyProblem("expected one PEM block, BEGIN PUBLIC KEY or BEGIN RSA PUBLIC KEY")
    try:
        key = serialization.load_pem_public_key(text.encode())
    except (ValueError, TypeError):
        raise KeyProblem("the PEM block does not hold a readable public key") from None
    if not isinstance(key, RSAPublicKey):
        raise KeyProblem(f"must be an RSA key; this one is {_kind(key)}")
    if key.key_size < MIN_BITS:
        raise KeyProblem(f"the key has {key.key_size} bits; RSA keys must have at least {MIN_BITS}")
    numbers = key.public_numbers()
    if not MIN_EXPONENT <= numbers.e < _MAX_EXPONENT:
        shown = numbers.e if numbers.e < MIN_EXPONENT else "above 2^256"
        raise KeyProblem(
            f"the public exponent is {shown}; RSA keys must have one from {MIN_EXPONENT} to 2^256 "
            f"({MIN_EXPONENT}, as openssl makes them)"
        )
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    pem = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return PublicKey(pem.decode(), hashlib.sha256(der).hexdigest(), key.key_size, numbers.n)


def _kind(key: object) -> str:
    kinds = {
        ec.EllipticCurvePublicKey: "an EC key",
        ed25519.Ed25519PublicKey: "an Ed25519 key",
        dsa.DSAPublicKey: "a DSA key",
    }
    return next((name for kind, name in kinds.items() if isinstance(key, kind)), "of another type")


def modulus(pem: str) -> int:
    """A stored key's modulus: its factors are the private key, whatever the exponent."""
    key = serialization.load_pem_public_key(pem.encode())
    assert isinstance(key, RSAPublicKey)  # only RSA keys are stored
    return key.public_numbers().n


def load(pem: str) -> RSAPublicKey | None:
    """A stored key, parsed (each process parses a key once: ``kassa.keyring``); None for one that
    ``read_public_key`` refuses now but a gateway kept before it checked the exponent: it verifies nothing."""
    key = serialization.load_pem_public_key(pem.encode())
    assert isinstance(key, RSAPublicKey)  # only RSA keys are stored
    return key if MIN_EXPONENT <= key.public_numbers().e < _MAX_EXPONENT else None
