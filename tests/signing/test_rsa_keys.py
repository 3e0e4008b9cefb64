"""Which public keys an operator may register for a merchant (CONTRACT §4): RSA, at least 2048 bits, a
public exponent from 65537 to 2^256, as SubjectPublicKeyInfo or PKCS#1 PEM; a private key is refused
without being read."""

from __future__ import annotations

import hashlib
import re

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kassa.signing.rsa_keys import KeyProblem, read_public_key
from tests.support.oauth import key_pair, with_exponent


def _pkcs1(public_pem: str) -> str:
    key = serialization.load_pem_public_key(public_pem.encode())
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1).decode()


def test_spki_and_pkcs1_forms_of_one_key_read_as_the_same_key() -> None:
    public = key_pair()[1]
    spki, pkcs1 = read_public_key(public), read_public_key(_pkcs1(public))
    assert "BEGIN RSA PUBLIC KEY" in _pkcs1(public)
    assert spki == pkcs1
    assert (spki.bits, spki.pem) == (2048, public)


def test_the_fingerprint_is_the_sha256_of_the_spki_der() -> None:
    public = key_pair()[1]
    der = serialization.load_pem_public_key(public.encode()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert read_public_key(public).fingerprint == hashlib.sha256(der).hexdigest()


def test_a_private_key_is_refused_and_not_quoted() -> None:
    private = key_pair()[0]
    with pytest.raises(KeyProblem, match="PRIVATE key") as refused:
        read_public_key(private)
    assert private.splitlines()[1] not in str(refused.value)


def test_a_1024_bit_key_is_refused() -> None:
    with pytest.raises(KeyProblem, match="has 1024 bits; RSA keys must have at least 2048"):
        read_public_key(key_pair(1024)[1])


@pytest.mark.parametrize(("exponent", "shown"), [(3, "3"), (17, "17"), (65535, "65535"), (2**256 + 1, "above 2^256")])
def test_a_public_exponent_below_65537_or_above_2_to_the_256_is_refused(exponent: int, shown: str) -> None:
    with pytest.raises(
        KeyProblem, match=re.escape(f"the public exponent is {shown}; RSA keys must have one from 65537")
    ):
        read_public_key(with_exponent(key_pair()[1], exponent))


def test_exponent_65537_and_larger_odd_ones_are_accepted_with_their_modulus() -> None:
    public = key_pair()[1]
    modulus = serialization.load_pem_public_key(public.encode()).public_numbers().n  # type: ignore[union-attr]
    assert read_public_key(public).modulus == read_public_key(with_exponent(public, 65539)).modulus == modulus


def test_an_ec_key_is_refused() -> None:
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    pem = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    with pytest.raises(KeyProblem, match="must be an RSA key; this one is an EC key"):
        read_public_key(pem)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "expected one PEM block"),
        ("ssh-rsa AAAAB3NzaC1yc2E", "expected one PEM block"),
        ("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "this is a certificate"),
        ("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n", "does not hold a readable public key"),
    ],
)
def test_other_texts_are_refused_saying_why(text: str, problem: str) -> None:
    with pytest.raises(KeyProblem, match=problem):
        read_public_key(text)


def test_two_keys_in_one_file_are_refused() -> None:
    with pytest.raises(KeyProblem, match="expected one PEM block"):
        read_public_key(key_pair()[1] + key_pair(2048, 1)[1])
