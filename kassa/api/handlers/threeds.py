"""The 3-D Secure upload operations: a merchant that runs the browser step itself reports its results
(CONTRACT §8). Each moves the authentication on exactly as the gateway's own pages would."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from kassa.api.context import OperationRequest, Reply
from kassa.api.errors import ApiError, Code, field_error
from kassa.api.handlers.common import async_reply, locked_order
from kassa.clock import now_ms
from kassa.domain import threeds as tds
from kassa.engine import threeds
from kassa.engine.threeds import NotWaiting
from kassa.storage import orders as order_store
from kassa.storage import threeds as store

Step = Callable[[Connection, int, dict[str, object] | None], None]


async def upload_method_url_result(req: OperationRequest) -> Reply:
    server_trans_id = str(req.values["threeDSServerTransID"])
    comp_ind = str(req.values["threeDSCompInd"])

    def step(conn: Connection, tx_id: int, record: dict[str, object] | None) -> None:
        if record is None or record["server_trans_id"] != server_trans_id:
            raise NotWaiting("threeDSServerTransID does not match the order's 3-D Secure transaction")
        threeds.method_result(conn, tx_id, comp_ind, order_store.card_brand(conn, tx_id), now_ms())

    return await _upload(req, step)


async def upload_cres_result(req: OperationRequest) -> Reply:
    return await _upload(req, _challenge_step(_message(req, "cres").get("acsTransID")))


async def upload_pares_result(req: OperationRequest) -> Reply:
    return await _upload(req, _challenge_step(_message(req, "pares").get("xid")))


def _message(req: OperationRequest, name: str) -> dict[str, object]:
    try:
        return tds.decode(str(req.values[name]))
    except tds.MessageError as problem:
        raise field_error(name, str(problem)) from None


def _challenge_step(acs_trans_id: object) -> Step:
    def step(conn: Connection, tx_id: int, record: dict[str, object] | None) -> None:
        if record is None or record["acs_trans_id"] != acs_trans_id:
            raise NotWaiting("the message does not belong to the order's 3-D Secure transaction")
        threeds.complete_challenge(conn, tx_id, now_ms())

    return step


async def _upload(req: OperationRequest, step: Step) -> Reply:
    order_id: int = req.values["orderid"]
    client_orderid: str = req.values["client_orderid"]
    endpoint_ids = req.endpoint.member_ids()

    def unit(conn: Connection) -> tuple[int, str]:
        order = locked_order(conn, endpoint_ids, order_id, client_orderid)
        tx_id = order_store.latest_transaction_id(conn, order_id)
        record = store.of_transaction(conn, tx_id, lock=True)
        try:
            step(conn, tx_id, dict(record) if record else None)
        except NotWaiting as refused:
            raise ApiError(Code.STATE, str(refused)) from None
        return order["endpoint_id"], order["client_orderid"]

    endpoint_id, client = await req.services.db.write(unit)
    req.services.wake_workers()
    return async_reply(req.serial, client, order_id, endpoint_id)
