"""The gateway's 3-D Secure server: each step of an authentication as one state change. What the card's
issuer decides (the path, the challenge's code and verdict, the authentication values) comes from the
``Authenticator`` the caller passes, named ``issuer`` here.

A transaction with a card the issuer wants to authenticate leaves ``processing`` for ``3d_method``
(the browser fingerprint step), ``3d_validating`` (a challenge) or straight to ``3d_validated``. The
customer's browser (gateway pages, or the merchant's own with the upload operations) moves it on;
timers end it when nobody does. The CVV stays encrypted in the meantime and is deleted with the
outcome, whatever it is.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sqlalchemy import Connection

from kassa.core.errors import NotWaiting
from kassa.core.followups import OrderRef, locked_order
from kassa.core.outcomes import move_stage, record
from kassa.domain.action_codes import ActionCode
from kassa.domain.lifecycle import Stage
from kassa.domain.threeds_protocol import Step, ThreeDSPath
from kassa.processors.interface import Authenticator, Outcome
from kassa.storage import authentications as store
from kassa.storage import browser_sessions
from kassa.storage import jobs as job_queue
from kassa.storage import orders as order_store
from kassa.storage.browser_sessions import SessionKind
from kassa.storage.jobs import JobKind
from kassa.vault.tokens import SealedToken

METHOD_WAIT_MS = 10_000  # SPEC.md: a Method step not completed within 10 s counts as threeDSCompInd=N


def begin(
    conn: Connection,
    issuer: Authenticator,
    transaction_id: int,
    path: ThreeDSPath,
    brand: str | None,
    now_ms: int,
    ttl_ms: int,
    checkout: SealedToken,
) -> Stage:
    """Starts authentication on the issuer's ``path``; returns the transaction's new stage. The checkout
    page's session is opened behind ``checkout`` unless the transaction has one (a hosted form's)."""
    order = order_store.lock_order_of(conn, transaction_id)
    ids = {
        "server_trans_id": str(uuid.uuid4()),
        "acs_trans_id": str(uuid.uuid4()),
        "ds_trans_id": issuer.ds_trans_id(path.version),  # as the directory server passes the request on
    }
    started = {"version": path.version, "path": path.value, **ids}
    if path is ThreeDSPath.REJECTED:
        store.create(conn, transaction_id, {**started, "step": Step.DONE, "trans_status": "R"}, now_ms)
        record(conn, transaction_id, _failed("rejected by the issuer"), now_ms)
        return Stage.DECLINED
    if path is ThreeDSPath.ATTEMPTED:
        store.create(conn, transaction_id, {**started, "step": Step.DONE, **issuer.authenticated("A", brand)}, now_ms)
        move_stage(conn, transaction_id, Stage.THREE_D_VALIDATED, now_ms)
        return Stage.THREE_D_VALIDATED
    if path.has_method:
        stage = Stage.THREE_D_METHOD
        store.create(conn, transaction_id, {**started, "step": Step.METHOD}, now_ms)
        deadline = now_ms + METHOD_WAIT_MS
        job_queue.add(conn, JobKind.METHOD_TIMEOUT, transaction_id, run_at_ms=deadline, now_ms=now_ms)
    else:
        stage = Stage.THREE_D_VALIDATING
        store.create(conn, transaction_id, {**started, **_challenge(issuer)}, now_ms)
    move_stage(conn, transaction_id, stage, now_ms)  # refuses a move the table does not allow
    if browser_sessions.session_of(conn, transaction_id, SessionKind.CHECKOUT) is None:
        kind = SessionKind.CHECKOUT
        browser_sessions.open_session(conn, kind, order["id"], transaction_id, now_ms, ttl_ms, checkout)
    job_queue.add(conn, JobKind.SESSION_TIMEOUT, transaction_id, run_at_ms=now_ms + ttl_ms, now_ms=now_ms)
    return stage


def method_result(
    conn: Connection, issuer: Authenticator, transaction_id: int, comp_ind: str, brand: str | None, now_ms: int
) -> None:
    """The Method step ended (Y: completed, N: not within 10 s, U: no Method URL); the AReq follows."""
    authentication = _at_step(conn, transaction_id, Step.METHOD)
    if ThreeDSPath(str(authentication["path"])) is ThreeDSPath.METHOD_FRICTIONLESS:
        authenticated = issuer.authenticated("Y", brand)
        store.change(conn, transaction_id, now_ms, step=Step.DONE, comp_ind=comp_ind, **authenticated)
        _validated(conn, transaction_id, now_ms)
    else:
        store.change(conn, transaction_id, now_ms, comp_ind=comp_ind, **_challenge(issuer))
        move_stage(conn, transaction_id, Stage.THREE_D_VALIDATING, now_ms)


def acs_answer(
    conn: Connection, issuer: Authenticator, acs_trans_id: str, code: str, brand: str | None, now_ms: int
) -> str:
    """The issuer's ACS judges the code the cardholder entered; returns transStatus (Y or N)."""
    authentication = store.by_acs_trans_id(conn, acs_trans_id)
    if authentication is None or authentication["step"] != Step.CHALLENGE or authentication["trans_status"] != "C":
        raise NotWaiting("no challenge is waiting for this transaction")
    status = issuer.judge(code, authentication["challenge_code"])
    values = issuer.authenticated("Y", brand) if status == "Y" else {"trans_status": "N"}
    store.change(conn, authentication["transaction_id"], now_ms, **values)
    return status


def complete_challenge(conn: Connection, transaction_id: int, now_ms: int) -> None:
    """The CRes (or PaRes) came back through the browser: go on as the ACS decided."""
    authentication = _at_step(conn, transaction_id, Step.CHALLENGE)
    if authentication["trans_status"] not in ("Y", "N"):
        raise NotWaiting("the cardholder has not answered the challenge yet")
    store.change(conn, transaction_id, now_ms, step=Step.DONE)
    if authentication["trans_status"] == "Y":
        _validated(conn, transaction_id, now_ms)
    else:
        record(conn, transaction_id, _failed("failed: wrong challenge answer"), now_ms)


def method_timeout(issuer: Authenticator, conn: Connection, transaction_id: int, now_ms: int) -> int:
    """The Method step timed out; returns the callbacks queued (none: authentication goes on)."""
    authentication = store.of_transaction(conn, transaction_id, lock=True)
    if authentication is not None and authentication["step"] == Step.METHOD:
        brand = order_store.card_brand(conn, transaction_id)
        method_result(conn, issuer, transaction_id, "N", brand, now_ms)
    return 0


def session_timeout(conn: Connection, transaction_id: int, now_ms: int) -> int:
    """Nobody finished the customer's part in time: the transaction is declined and its CVV forgotten.
    Returns the callbacks queued."""
    stage = Stage(order_store.transaction(conn, transaction_id)["stage"])
    if stage not in (Stage.PROCESSING, Stage.THREE_D_METHOD, Stage.THREE_D_VALIDATING):
        return 0
    if stage is Stage.PROCESSING and job_queue.exists(conn, transaction_id, JobKind.PROCESS):
        return 0  # the card is in: processing decides
    outcome = Outcome(Stage.DECLINED, ActionCode.DO_NOT_HONOUR, "The customer did not complete the payment in time")
    return record(conn, transaction_id, outcome, now_ms).count


def _at_step(conn: Connection, transaction_id: int, step: Step) -> dict[str, object]:
    authentication = store.of_transaction(conn, transaction_id, lock=True)
    if authentication is None or authentication["step"] != step:
        raise NotWaiting(f"the order is not waiting for the 3-D Secure {step} step")
    return dict(authentication)


def _validated(conn: Connection, transaction_id: int, now_ms: int) -> None:
    move_stage(conn, transaction_id, Stage.THREE_D_VALIDATED, now_ms)
    job_queue.add(conn, JobKind.PROCESS, transaction_id, run_at_ms=now_ms, now_ms=now_ms)


def _challenge(issuer: Authenticator) -> dict[str, object]:
    return {"step": Step.CHALLENGE, "trans_status": "C", "challenge_code": issuer.challenge_code()}


def _failed(why: str) -> Outcome:
    return Outcome(Stage.DECLINED, ActionCode.DO_NOT_HONOUR, f"3-D Secure authentication {why}")


# A step a merchant's own pages report (CONTRACT §8): the transaction, and its authentication record if any.
UploadedStep = Callable[[Connection, int, dict[str, object] | None], None]


def on_order(conn: Connection, ref: OrderRef, step: UploadedStep) -> tuple[int, str]:
    """Runs ``step`` on the latest transaction of the order ``ref`` names, under the order's lock;
    returns the order's endpoint id and client_orderid."""
    order = locked_order(conn, ref)
    tx_id = order_store.latest_transaction_id(conn, ref.order_id)
    authentication = store.of_transaction(conn, tx_id, lock=True)
    step(conn, tx_id, dict(authentication) if authentication else None)
    return order["endpoint_id"], order["client_orderid"]
