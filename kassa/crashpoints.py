"""Crash points, for tests only: with ``KASSA_TEST_CRASH_POINT=name`` (and ``KASSA_TEST_CLOCK=1``) a
process kills itself with SIGKILL, as ``kill -9`` would, when it reaches the point of that name. Crash
tests (tests/engine/test_recurring_processes.py, tests/api/test_oauth.py, tests/processors/test_connectors.py)
use it to stop a process between two steps they could not otherwise hit, and show that the restart neither
skips nor repeats the work. With ``KASSA_TEST_FAIL_POINT=name`` the process lives on and the unit of work
that reaches the point fails instead (``InjectedFailure``), every time: what a job does after failures it
could not otherwise be made to have (tests/processors/test_iso8583_connector.py).

A point is reached inside a unit of work: the process dies with the database transaction open, as it
would if the machine lost power there."""

from __future__ import annotations

import os
import signal

# The recurring scheduler has opened a charge's order and not yet moved the payment on to its next charge.
RECURRING_CHARGE_OPENED = "RECURRING_CHARGE_OPENED"
# create-recurring-payment has written its payment, after its OAuth nonce, in one transaction not yet committed.
RECURRING_PAYMENT_WRITTEN = "RECURRING_PAYMENT_WRITTEN"
# An acquirer's answer to a payment is written to its message's row, not yet committed: in the transaction
# that records the transaction's outcome, or in the route's own write of a try cascaded on before the next.
ACQUIRER_ANSWER_UNCOMMITTED = "ACQUIRER_ANSWER_UNCOMMITTED"
# A route has committed the answer of a try it cascades on, and not yet sent the next try.
TRY_CASCADED_ON = "TRY_CASCADED_ON"
POINTS = (RECURRING_CHARGE_OPENED, RECURRING_PAYMENT_WRITTEN, ACQUIRER_ANSWER_UNCOMMITTED, TRY_CASCADED_ON)

_armed: str | None = None
_failing: str | None = None


class InjectedFailure(RuntimeError):
    """The failure a test asked for at a point (``KASSA_TEST_FAIL_POINT``)."""


def arm(point: str | None, failing: str | None = None) -> None:
    """Makes ``point`` kill this process when reached, and ``failing`` fail the unit that reaches it (None:
    no point does)."""
    global _armed, _failing
    _armed, _failing = point, failing


def reached(point: str) -> None:
    if _armed == point:
        os.kill(os.getpid(), signal.SIGKILL)
    if _failing == point:
        raise InjectedFailure(f"failure injected at {point}")
