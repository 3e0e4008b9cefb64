"""TLS for a link to an acquirer's host: the host's certificate is checked against the system's trust store
(``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` add an acquirer's private CA), and the connection's sealed secret, when
it holds a PEM certificate and its private key, is the client certificate the host asks for."""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path

from kassa.domain.acquirers import holds_client_certificate


def client_context(secret: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if secret is not None and holds_client_certificate(secret):
        with _readable(secret) as path:
            context.load_cert_chain(path)
    return context


@contextlib.contextmanager
def _readable(secret: str) -> Iterator[str]:
    """A path OpenSSL can read the secret from, which lives no longer than the block: a memory-only file
    where the system has them (Linux), else a file only this user can read, deleted at once."""
    if hasattr(os, "memfd_create"):
        descriptor = os.memfd_create("kassa-client-certificate")
        try:
            os.write(descriptor, secret.encode())
            yield f"/proc/self/fd/{descriptor}"
        finally:
            os.close(descriptor)
        return
    with tempfile.TemporaryDirectory() as folder:  # mode 0700
        path = Path(folder) / "client.pem"
        path.touch(mode=0o600)
        path.write_text(secret)
        yield str(path)
