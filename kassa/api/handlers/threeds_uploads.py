"""The 3-D Secure upload operations: a merchant that runs the browser step itself reports its results
(CONTRACT §8). Each moves the authentication on exactly as the gateway's own pages would."""

from __future__ import annotations

from sqlalchemy import Connection

from kassa.api.answers import Accepted
from kassa.api.context import OperationRequest
from kassa.api.errors import field_error
from kassa.api.handlers.common import async_reply, change_order, order_ref
from kassa.clock import now_ms
from kassa.core import authentication
from kassa.core.authentication import UploadedStep
from kassa.core.errors import NotWaiting
from kassa.domain import threeds_protocol as tds
from kassa.storage import orders as order_store


async def upload_method_url_result(req: OperationRequest) -> Accepted:
    server_trans_id = str(req.values["threeDSServerTransID"])
    comp_ind = str(req.values["threeDSCompInd"])

    def step(conn: Connection, tx_id: int, record: dict[str, object] | None) -> None:
        if record is None or record["server_trans_id"] != server_trans_id:
            raise NotWaiting("threeDSServerTransID does not match the order's 3-D Secure transaction")
        brand = order_store.card_brand(conn, tx_id)
        authentication.method_result(conn, req.services.authenticator, tx_id, comp_ind, brand, now_ms())

    return await _upload(req, step)


async def upload_cres_result(req: OperationRequest) -> Accepted:
    return await _upload(req, _challenge_step(_message(req, "cres").get("acsTransID")))


async def upload_pares_result(req: OperationRequest) -> Accepted:
    return await _upload(req, _challenge_step(_message(req, "pares").get("xid")))


def _message(req: OperationRequest, name: str) -> dict[str, object]:
    try:
        return tds.decode(str(req.values[name]))
    except tds.MessageError as problem:
        raise field_error(name, str(problem)) from None


def _challenge_step(acs_trans_id: object) -> UploadedStep:
    def step(conn: Connection, tx_id: int, record: dict[str, object] | None) -> None:
        if record is None or record["acs_trans_id"] != acs_trans_id:
            raise NotWaiting("the message does not belong to the order's 3-D Secure transaction")
        authentication.complete_challenge(conn, tx_id, now_ms())

    return step


async def _upload(req: OperationRequest, step: UploadedStep) -> Accepted:
    ref = order_ref(req)
    endpoint_id, client = await change_order(req, lambda conn: authentication.on_order(conn, ref, step))
    req.services.wake_workers()
    return async_reply(req.serial, client, ref.order_id, endpoint_id)
