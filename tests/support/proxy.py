"""Debian's nginx in front of gateway processes, run from the recipe's own file (``docs/deploy/nginx.conf``)
with its placeholders filled: TLS ends at nginx with a self-signed certificate made here, and requests go
on to the API processes over plain HTTP. ``ProxiedGateway`` is the gateway as clients see it through it."""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.gateway import JSON_ACCEPT, LISTEN, Gateway, children_of, free_port, sockets_on

RECIPE = Path(__file__).resolve().parents[2] / "docs" / "deploy" / "nginx.conf"
SERVER_NAME = "localhost"  # the name the test's clients address, and the certificate's

# What Debian's /etc/nginx/nginx.conf gives the recipe's file in production (it is included in its http
# block), with everything nginx writes kept in the test's own folder.
MAIN = """\
{user}
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log info;
events {{ worker_connections 256; }}
http {{
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    default_type application/octet-stream;
    include {folder}/kassa.conf;
}}
"""


@dataclass
class Proxy:
    """A running nginx: ``origin`` is the https address clients use, ``tls`` a context trusting only it."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes]
    tls: ssl.SSLContext

    @property
    def origin(self) -> str:
        return f"https://{SERVER_NAME}:{self.port}"

    @property
    def certificate(self) -> Path:
        return self.folder / "certificate.pem"

    def access_log(self) -> str:
        return (self.folder / "kassa-access.log").read_text()

    def error_log(self) -> str:
        return (self.folder / "error.log").read_text()


def filled_recipe(values: dict[str, str]) -> str:
    """The recipe's nginx file with its ``@NAME@`` placeholders replaced; each must have a value."""
    text = RECIPE.read_text()
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    if left := sorted(set(re.findall(r"@[A-Z0-9_]+@", text))):
        raise ValueError(f"no value for {', '.join(left)} of {RECIPE}")
    return text


@contextmanager
def nginx_in_front_of(api_servers: list[str]) -> Iterator[Proxy]:
    """nginx on a free port of 127.0.0.1 with the recipe's file, spreading over ``api_servers`` (two
    HOST:PORT, as the recipe's example has), stopped at the end."""
    folder = Path(tempfile.mkdtemp(prefix="kassa-nginx-"))
    folder.chmod(0o755)  # nginx's workers (www-data when the tests run as root) reach their files
    try:
        certificate, key = _self_signed(folder)
        tls = ssl.create_default_context(cafile=str(certificate))
        for _ in range(3):  # another test may take the port between its pick and nginx's bind
            port = free_port()
            values = {
                "SERVER_NAME": SERVER_NAME,
                "LISTEN": f"127.0.0.1:{port}",
                "CERTIFICATE": str(certificate),
                "CERTIFICATE_KEY": str(key),
                "API_SERVER_1": api_servers[0],
                "API_SERVER_2": api_servers[1],
                "LOG_DIR": str(folder),
            }
            (folder / "kassa.conf").write_text(filled_recipe(values))
            user = "user www-data;" if os.geteuid() == 0 else ""
            (folder / "nginx.conf").write_text(MAIN.format(user=user, folder=folder))
            process = _start(folder, port)
            if process is not None:
                proxy = Proxy(folder, port, process, tls)
                try:
                    yield proxy
                finally:
                    _stop(process)
                return
        raise RuntimeError("no free port for nginx after three tries")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def nginx() -> str:
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
    if found is None:
        raise RuntimeError("nginx is not installed: `make services` installs Debian's")
    return found


def _start(folder: Path, port: int) -> subprocess.Popen[bytes] | None:
    """nginx in the foreground (the test holds its process); None if its port was taken meanwhile."""
    command = [nginx(), "-p", str(folder), "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")]
    log = (folder / "stderr.log").open("ab")
    process = subprocess.Popen([*command, "-g", "daemon off;"], stdout=log, stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            failure = (folder / "stderr.log").read_text() + (folder / "error.log").read_text()
            if "Address already in use" in failure:
                return None
            raise RuntimeError(f"nginx exited: {failure[-2000:]}")
        if sockets_on([process.pid, *children_of(process.pid)], port, LISTEN):  # its own socket, not another's
            return process
        time.sleep(0.05)
    _stop(process)
    raise RuntimeError("nginx did not start")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGQUIT)  # nginx's graceful stop
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for ``SERVER_NAME`` (and 127.0.0.1) signed by its own key, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName(SERVER_NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certificate_path, key_path = folder / "certificate.pem", folder / "key.pem"
    certificate_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    key_path.touch(mode=0o600)
    key_path.write_bytes(key_bytes)
    return certificate_path, key_path


class ProxiedGateway(Gateway):
    """The gateway as merchants and customers reach it: through the proxy, over HTTPS. Its ``base`` is the
    proxy's, so a ``Merchant`` made on it signs and sends its requests there."""

    proxy: Proxy

    @classmethod
    def of(cls, gateway: Gateway, proxy: Proxy) -> ProxiedGateway:
        seen = cls(
            gateway.database_url,
            gateway.data_dir,
            port=gateway.port,
            console_port=gateway.console_port,
            ops_port=gateway.ops_port,
            extra_env=gateway.extra_env,
        )
        seen.proxy = proxy
        return seen

    @property
    def base(self) -> str:
        return f"{self.proxy.origin}/paynet"

    def post(self, path: str, data: dict[str, str] | str, headers: dict[str, str] | None = None) -> httpx.Response:
        return httpx.post(
            self.base + path, data=data if isinstance(data, dict) else None,
            content=data if isinstance(data, str) else None,
            headers=JSON_ACCEPT if headers is None else headers, timeout=30, verify=self.proxy.tls,
        )  # fmt: skip
