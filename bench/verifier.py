"""The OAuth 1.0a verifier alone (``kassa.signing.oauth``), without HTTP, the pipeline or the nonce's write:
µs per call of reading a sale-sized signed body (parameters merged, base string built), of the HMAC-SHA1
and RSA-SHA256 (2048-bit) checks, and of parsing a public key's PEM. Run: ``python -m bench.verifier
[COUNT]``; ``python -m bench.inprocess oauth-hmac`` measures the whole request path."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from bench.bodies import OAuthSigner, oauth_bodies
from kassa.signing import oauth
from kassa.signing.rsa_keys import load
from kassa.web.forms import form_pairs

URL = "http://127.0.0.1:8080/paynet/api/v4/payout-check/1"


def per_call_us(action: Callable[[int], object], count: int) -> float:
    started = time.perf_counter()
    for n in range(count):
        action(n)
    return (time.perf_counter() - started) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("count", type=int, nargs="?", default=20000)
    count = parser.parse_args().count
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()
    public = load(pem)
    assert public is not None
    hmac_bodies = [form_pairs(b.encode()) for b in oauth_bodies(OAuthSigner("bench", "k" * 32), URL, "h", 1000)]
    rsa_bodies = [form_pairs(b.encode()) for b in oauth_bodies(OAuthSigner("bench", "", private), URL, "r", 200)]
    hmac_requests = [oauth.read_request(URL, None, pairs) for pairs in hmac_bodies]
    rsa_requests = [oauth.read_request(URL, None, pairs) for pairs in rsa_bodies]
    assert all(oauth.hmac_sha1_matches(r, "k" * 32) for r in hmac_requests)
    assert all(oauth.rsa_sha256_matches(r, public) for r in rsa_requests)
    figures = {
        "read a signed body (17 pairs: merge, base string)": per_call_us(
            lambda n: oauth.read_request(URL, None, hmac_bodies[n % 1000]), count
        ),
        "HMAC-SHA1 check": per_call_us(lambda n: oauth.hmac_sha1_matches(hmac_requests[n % 1000], "k" * 32), count),
        "RSA-SHA256 check (2048 bits)": per_call_us(
            lambda n: oauth.rsa_sha256_matches(rsa_requests[n % 200], public), count
        ),
        "parse a public key's PEM": per_call_us(lambda _: load(pem), count // 10),
    }
    for name, us in figures.items():
        print(f"{name}: {us:.1f} µs")


if __name__ == "__main__":
    main()
