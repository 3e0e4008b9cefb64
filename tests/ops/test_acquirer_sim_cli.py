"""``kassa acquirer-sim`` runs the acquirer host of CONTRACT §15 as a process: it prints the port it listens
on, applies the switches it is given, and stops cleanly when interrupted."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from pathlib import Path

import iso8583
from iso8583.specs import default_ascii

from kassa.processors.iso8583 import framing
from tests.support.gateway import KASSA

SILENT, LATE, PLAIN = "4000000000000997", "4000000000000998", "4000000000000999"


def _request(mti: str, stan: int, **fields: str) -> bytes:
    data, _ = iso8583.encode({"t": mti, "7": "1126093015", "11": f"{stan:06d}", **fields}, default_ascii)
    return bytes(data)


def _sale(stan: int, card: str) -> bytes:
    return _request("0200", stan, **{"2": card, "3": "000000", "4": "000000001042", "41": "TERM0001"})


async def _answers_to(port: int) -> list[tuple[str, str, str]]:
    """(MTI, STAN, field 39) of the answers, in the order they come, to a sign-on, an echo and three sales."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for message in (_request("0800", 1, **{"70": "001"}), _request("0800", 2, **{"70": "301"}), _sale(3, SILENT),
                    _sale(4, LATE), _sale(5, PLAIN)):  # fmt: skip
        await framing.write_message(writer, message)
    answers = []
    for _ in range(3):
        data = await asyncio.wait_for(framing.read_message(reader), 2)
        assert data is not None
        fields, _ = iso8583.decode(data, default_ascii)
        answers.append((fields["t"], fields["11"], fields["39"]))
    writer.close()
    return answers


def test_the_simulator_prints_its_port_answers_with_its_switches_and_stops_when_interrupted(tmp_path: Path) -> None:
    command = [KASSA, "acquirer-sim", "--port", "0", "--no-echo", "--silent", SILENT, "--late", f"{LATE}=0.1"]
    env = {**os.environ, "KASSA_DATA_DIR": str(tmp_path)}
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            listening = re.fullmatch(r"acquirer host listening on 127\.0\.0\.1:(\d+)\n", process.stdout.readline())
            assert listening, process.stderr.read() if process.stderr else ""
            answers = asyncio.run(_answers_to(int(listening.group(1))))
        finally:
            process.send_signal(signal.SIGINT)
            assert process.wait(10) == 0
    assert answers == [("0810", "000001", "00"), ("0210", "000005", "00"), ("0210", "000004", "00")]


def test_tls_needs_a_certificate_and_its_key_and_a_late_card_needs_its_seconds(tmp_path: Path) -> None:
    certificate = tmp_path / "certificate.pem"
    certificate.write_text("")
    env = {**os.environ, "KASSA_DATA_DIR": str(tmp_path)}
    for args, problem in (
        (["--tls-cert", str(certificate)], "--tls-cert and --tls-key go together"),
        (["--late", LATE], "CARD_NUMBER=SECONDS"),
    ):
        done = subprocess.run([KASSA, "acquirer-sim", "--port", "0", *args], env=env, capture_output=True, text=True)
        assert done.returncode == 2
        assert problem in done.stderr
        assert "Traceback" not in done.stderr
