"""The gateway's 3-D Secure server: each step of an authentication as one unit of work.

A transaction with a card the issuer wants to authenticate leaves ``processing`` for ``3d_method``
(the browser fingerprint step), ``3d_validating`` (a challenge) or straight to ``3d_validated``. The
customer's browser (gateway pages, or the merchant's own with the upload operations) moves it on;
timers end it when nobody does. The CVV stays encrypted in the meantime and is deleted with the
outcome, whatever it is.
"""

from __future__ import annotations

import uuid

from sqlalchemy import Connection

from kassa.domain import threeds as tds
from kassa.domain.lifecycle import Stage
from kassa.domain.threeds import ThreeDSPath
from kassa.storage import jobs as job_queue
from kassa.storage import orders as order_store
from kassa.storage import threeds as store
from kassa.storage.orders import Outcome

METHOD_WAIT_MS = 10_000  # SPEC.md: a Method step not completed within 10 s counts as threeDSCompInd=N


class NotWaiting(Exception):
    """The transaction is not at the step this message belongs to."""


def begin(
    conn: Connection, transaction_id: int, path: ThreeDSPath, brand: str | None, now_ms: int, ttl_ms: int
) -> Stage:
    """Starts authentication on the issuer's ``path``; returns the transaction's new stage."""
    tx = order_store.transaction(conn, transaction_id)
    order = order_store.lock_order(conn, tx["order_id"])
    ids = {"server_trans_id": str(uuid.uuid4()), "acs_trans_id": str(uuid.uuid4())}
    record = {"version": path.version, "path": path.value, **ids}
    if path is ThreeDSPath.REJECTED:
        store.create(conn, transaction_id, {**record, "step": "done", "trans_status": "R"}, now_ms)
        order_store.record_outcome(conn, transaction_id, _failed("rejected by the issuer"), now_ms)
        return Stage.DECLINED
    if path is ThreeDSPath.ATTEMPTED:
        store.create(conn, transaction_id, {**record, "step": "done", **_authenticated("A", brand)}, now_ms)
        order_store.move_stage(conn, transaction_id, Stage.THREE_D_VALIDATED, now_ms)
        return Stage.THREE_D_VALIDATED
    if path.has_method:
        stage = Stage.THREE_D_METHOD
        store.create(conn, transaction_id, {**record, "step": "method"}, now_ms)
        job_queue.add(conn, "method_timeout", transaction_id, run_at_ms=now_ms + METHOD_WAIT_MS, now_ms=now_ms)
    else:
        stage = Stage.THREE_D_VALIDATING
        store.create(conn, transaction_id, {**record, **_challenge()}, now_ms)
    order_store.move_stage(conn, transaction_id, stage, now_ms)  # refuses a move the table does not allow
    if store.session_of(conn, transaction_id, "checkout") is None:
        store.open_session(conn, "checkout", order["id"], transaction_id, now_ms, ttl_ms)
    job_queue.add(conn, "session_timeout", transaction_id, run_at_ms=now_ms + ttl_ms, now_ms=now_ms)
    return stage


def method_result(conn: Connection, transaction_id: int, comp_ind: str, brand: str | None, now_ms: int) -> None:
    """The Method step ended (Y: completed, N: not within 10 s, U: no Method URL); the AReq follows."""
    record = _at_step(conn, transaction_id, "method")
    if ThreeDSPath(str(record["path"])) is ThreeDSPath.METHOD_FRICTIONLESS:
        store.change(conn, transaction_id, now_ms, step="done", comp_ind=comp_ind, **_authenticated("Y", brand))
        _validated(conn, transaction_id, now_ms)
    else:
        store.change(conn, transaction_id, now_ms, comp_ind=comp_ind, **_challenge())
        order_store.move_stage(conn, transaction_id, Stage.THREE_D_VALIDATING, now_ms)


def acs_answer(conn: Connection, acs_trans_id: str, code: str, brand: str | None, now_ms: int) -> str:
    """The issuer's ACS judges the code the cardholder entered; returns transStatus (Y or N)."""
    record = store.by_acs_trans_id(conn, acs_trans_id)
    if record is None or record["step"] != "challenge" or record["trans_status"] != "C":
        raise NotWaiting("no challenge is waiting for this transaction")
    status = "Y" if code.strip() == record["challenge_code"] else "N"
    values = _authenticated("Y", brand) if status == "Y" else {"trans_status": "N"}
    store.change(conn, record["transaction_id"], now_ms, **values)
    return status


def complete_challenge(conn: Connection, transaction_id: int, now_ms: int) -> None:
    """The CRes (or PaRes) came back through the browser: go on as the ACS decided."""
    record = _at_step(conn, transaction_id, "challenge")
    if record["trans_status"] not in ("Y", "N"):
        raise NotWaiting("the cardholder has not answered the challenge yet")
    store.change(conn, transaction_id, now_ms, step="done")
    if record["trans_status"] == "Y":
        _validated(conn, transaction_id, now_ms)
    else:
        order_store.record_outcome(conn, transaction_id, _failed("failed: wrong challenge answer"), now_ms)


def method_timeout(conn: Connection, transaction_id: int, now_ms: int) -> int:
    """The Method step timed out; returns the callbacks queued (none: authentication goes on)."""
    record = store.of_transaction(conn, transaction_id, lock=True)
    if record is not None and record["step"] == "method":
        brand = order_store.card_brand(conn, transaction_id)
        method_result(conn, transaction_id, "N", brand, now_ms)
    return 0


def session_timeout(conn: Connection, transaction_id: int, now_ms: int) -> int:
    """Nobody finished the customer's part in time: the transaction is declined and its CVV forgotten.
    Returns the callbacks queued."""
    stage = Stage(order_store.transaction(conn, transaction_id)["stage"])
    if stage not in (Stage.PROCESSING, Stage.THREE_D_METHOD, Stage.THREE_D_VALIDATING):
        return 0
    if stage is Stage.PROCESSING and job_queue.exists(conn, transaction_id, "process"):
        return 0  # the card is in: processing decides
    outcome = Outcome(Stage.DECLINED, "100", "The customer did not complete the payment in time")
    return order_store.record_outcome(conn, transaction_id, outcome, now_ms).count


def _at_step(conn: Connection, transaction_id: int, step: str) -> dict[str, object]:
    record = store.of_transaction(conn, transaction_id, lock=True)
    if record is None or record["step"] != step:
        raise NotWaiting(f"the order is not waiting for the 3-D Secure {step} step")
    return dict(record)


def _validated(conn: Connection, transaction_id: int, now_ms: int) -> None:
    order_store.move_stage(conn, transaction_id, Stage.THREE_D_VALIDATED, now_ms)
    job_queue.add(conn, "process", transaction_id, run_at_ms=now_ms, now_ms=now_ms)


def _authenticated(status: str, brand: str | None) -> dict[str, object]:
    return {"trans_status": status, "eci": tds.eci(status, brand), "authentication_value": tds.authentication_value()}


def _challenge() -> dict[str, object]:
    return {"step": "challenge", "trans_status": "C", "challenge_code": tds.challenge_code()}


def _failed(why: str) -> Outcome:
    return Outcome(Stage.DECLINED, "100", f"3-D Secure authentication {why}")
