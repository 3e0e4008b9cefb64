"""What a browser posts to the issuer's ACS for a challenge: the same for gateway pages and for the
raw data status gives merchants that run the step themselves."""

from __future__ import annotations

from kassa.domain import money
from kassa.domain import threeds as tds
from kassa.pages import urls
from kassa.storage.prepared import Record


def acs_request(base: str, record: Record, tx: Record) -> tuple[str, dict[str, str]]:
    """The ACS address and the fields to post there: ``creq`` (2.x), or ``PaReq`` and ``MD`` (1.0.2)."""
    if record["version"] == tds.VERSION_1:
        cur = money.currency(tx["currency"])
        pareq = tds.pareq(record["acs_trans_id"], money.format_amount(tx["amount"], cur), cur.code)
        return urls.acs_pareq(base), {"PaReq": pareq, "MD": record["server_trans_id"]}
    return urls.acs_challenge(base), {"creq": tds.creq(record["server_trans_id"], record["acs_trans_id"])}
