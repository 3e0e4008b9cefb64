"""The gateway's figures for Prometheus: what each process counts as it works, recorded in plain calls
that cost a few µs (``make bench``, "Metrics on the request path").

The figures are prometheus-client's own metrics. A server of several processes (``kassa serve
--processes N``) puts prometheus-client in its multiprocess mode: each process writes its figures to
memory-mapped files in one directory that the parent made empty (``PROMETHEUS_MULTIPROC_DIR``, set
before this module is first imported), and whichever process answers a scrape adds them up. What the
database knows (queues, pending callbacks) is read at scrape time by ``kassa.ops.probes``, not counted.
"""

from __future__ import annotations

import functools
import os
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROCESS_DIR: Final = "PROMETHEUS_MULTIPROC_DIR"

# A ``_created`` timestamp beside every counter and histogram doubles the page for nothing Prometheus
# needs (it tells counter resets apart by itself), and multiprocess mode has none anyway.
disable_created_metrics()  # type: ignore[no-untyped-call]  # untyped in prometheus-client 0.26

# From a status read in a millisecond to a sale waiting on a slow acquirer; callbacks wait on merchants.
_REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_CALLBACK_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS: Final = Counter(
    "kassa_requests",
    "API requests answered, by operation, HTTP status and the contract's error-code (empty when none).",
    ("operation", "http_status", "error_code"),
)
REQUEST_SECONDS: Final = Histogram(
    "kassa_request_duration_seconds",
    "Time from a request's arrival to its answer, by operation.",
    ("operation",),
    buckets=_REQUEST_BUCKETS,
)
OUTCOMES: Final = Counter(
    "kassa_outcomes",
    "Processing outcomes recorded, by the status they gave the transaction and the decline code.",
    ("status", "decline_code"),
)
CALLBACK_ATTEMPTS: Final = Counter(
    "kassa_callback_attempts",
    "Callback delivery attempts, by result: delivered (2xx), retry (will be tried again), failed (no attempt left).",
    ("result",),
)
CALLBACK_SECONDS: Final = Histogram(
    "kassa_callback_attempt_duration_seconds",
    "Time a callback attempt took, answered or not.",
    buckets=_CALLBACK_BUCKETS,
)
ACQUIRER_MESSAGES: Final = Counter(
    "kassa_acquirer_messages",
    "Messages sent to acquirers over ISO 8583 (reversals and repetitions included), by connection, MTI and the "
    "answer's field 39; `none`: no answer within the connection's response timeout.",
    ("connection", "mti", "response_code"),
)
ACQUIRER_ABANDONED: Final = Counter(
    "kassa_acquirer_abandoned",
    "Reversals and advices given up after 24 hours unanswered, by connection and the MTI of the message: the "
    "acquirer may hold a transaction the gateway ended in error.",
    ("connection", "mti"),
)
ACQUIRER_ANSWER_SECONDS: Final = Histogram(
    "kassa_acquirer_answer_seconds",
    "Time an acquirer's host took to answer a message, by connection.",
    ("connection",),
    buckets=(*_REQUEST_BUCKETS, 20.0),
)
ACQUIRER_SOCKETS_SIGNED_ON: Final = Gauge(
    "kassa_acquirer_sockets_signed_on",
    "Sockets to an acquirer's host signed on, by connection, over the processes that opened the link.",
    ("connection",),
    multiprocess_mode="livesum",
)
DB_CONNECTIONS_IN_USE: Final = Gauge(
    "kassa_db_connections_in_use",
    "Database connections checked out of this server's pools, sampled each second.",
    multiprocess_mode="livesum",
)

JOB_FAILURES: Final = Counter(
    "kassa_job_failures",
    "Job attempts that raised, by kind (logged as 'job failed' with the job's id): retried, or given up when "
    "none is left, as error 500, or as unknown and reconciled again when a message may have reached an acquirer.",
    ("kind",),
)

QUEUE_CLAIMS: Final = Counter(
    "kassa_queue_claims",
    "Claims of queued work (a database transaction each), by consumer: worker (jobs), callbacks. Flat while idle.",
    ("consumer",),
)

REFUSED: Final = Counter(
    "kassa_refused_requests",
    "Requests refused before their body was read, by reason: overload (503), address_rate, merchant_rate (429).",
    ("reason",),
)
# Each reason's child made once (``labels()`` builds its key on every call), idle ones too: an absent series
# alerts on nothing.
_REFUSED_BY = {reason: REFUSED.labels(reason) for reason in ("overload", "address_rate", "merchant_rate")}
OVERLOAD_JOB_AGE: Final = Gauge(
    "kassa_overload_job_age_seconds",
    "The overload signal: how long the oldest due job no worker holds has waited, as last sampled.",
    multiprocess_mode="livemax",
)
OVERLOAD_CALLBACK_AGE: Final = Gauge(
    "kassa_overload_callback_age_seconds",
    "The overload signal's second part: how long the oldest due first attempt of a callback that could go out "
    "now (its destination neither down nor at its limit in flight) has waited, as last sampled.",
    multiprocess_mode="livemax",
)
OVERLOAD_SHEDDING: Final = Gauge(
    "kassa_overload_shedding",
    "1 while this server refuses operations that open an order for overload (summed: processes shedding).",
    multiprocess_mode="livesum",
)


class RequestCounter:
    """``REQUESTS`` and ``REQUEST_SECONDS`` on the request path. prometheus-client's ``labels()`` builds
    and checks its key on every call; the children are kept here by a tuple instead."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, int, int], Counter] = {}
        self._latency: dict[str, Histogram] = {}

    def record(self, operation: str, http_status: int, error_code: int, seconds: float) -> None:
        key = (operation, http_status, error_code)
        count = self._counts.get(key)
        if count is None:
            count = self._counts[key] = REQUESTS.labels(operation, str(http_status), str(error_code or ""))
        count.inc()
        latency = self._latency.get(operation)
        if latency is None:
            latency = self._latency[operation] = REQUEST_SECONDS.labels(operation)
        latency.observe(seconds)


requests: Final = RequestCounter()


def outcome(status: str, decline_code: str | None) -> None:
    OUTCOMES.labels(status, decline_code or "").inc()


def acquirer_message(connection: str, mti: str, response_code: str | None, seconds: float) -> None:
    _acquirer_messages(connection, mti, response_code or "none").inc()
    if response_code is not None:
        _acquirer_answer_seconds(connection).observe(seconds)


# A labelled child found once per label values: ``labels()`` checks and locks on every call, on every message.
_acquirer_messages = functools.lru_cache(maxsize=4096)(ACQUIRER_MESSAGES.labels)
_acquirer_answer_seconds = functools.lru_cache(maxsize=256)(ACQUIRER_ANSWER_SECONDS.labels)


def acquirer_abandoned(connection: str, mti: str) -> None:
    ACQUIRER_ABANDONED.labels(connection, mti).inc()


def refused(reason: str) -> None:
    _REFUSED_BY[reason].inc()


def callback_attempt(*, delivered: bool, retried: bool, seconds: float) -> None:
    CALLBACK_ATTEMPTS.labels("delivered" if delivered else "retry" if retried else "failed").inc()
    CALLBACK_SECONDS.observe(seconds)


def claimed(consumer: str) -> None:
    QUEUE_CLAIMS.labels(consumer).inc()


def multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROCESS_DIR))


def registry() -> CollectorRegistry:
    """What a scrape reads: this process's figures, or every process's added up in multiprocess mode."""
    if not multiprocess():
        from prometheus_client import REGISTRY

        return REGISTRY
    combined = CollectorRegistry()
    MultiProcessCollector(combined)  # type: ignore[no-untyped-call]  # untyped in prometheus-client 0.26
    return combined
