"""The two scripts of docs/api.md, *Signing with OAuth*, run as a merchant would run them (their own
process, their own client library) against a gateway: both payouts are accepted."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.gateway import Gateway, new_merchant
from tests.support.oauth import key_pair, register_key

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def scripts() -> list[str]:
    section = API_DOC.read_text().split("## Signing with OAuth", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


@pytest.mark.backends("sqlite")
def test_the_documented_scripts_sign_as_the_gateway_checks(shared_gateway: Gateway, tmp_path: Path) -> None:
    hmac_script, rsa_script = scripts()
    merchant = new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")
    register_key(shared_gateway, merchant.login, key_pair()[1])
    (tmp_path / "private.pem").write_text(key_pair()[0])
    env = {
        **os.environ,
        "KASSA_BASE": shared_gateway.base,
        "KASSA_ENDPOINT": str(merchant.endpoint_id),
        "KASSA_LOGIN": merchant.login,
        "KASSA_CONTROL_KEY": merchant.control_key,
        "KASSA_PRIVATE_KEY": str(tmp_path / "private.pem"),
    }
    for script in (hmac_script, rsa_script):
        done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("200 {'type': 'async-response', 'status': 'processing'"), done.stdout
