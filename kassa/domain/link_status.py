"""What an operator sees of an ISO 8583 connection's link (CONTRACT §15): signed on, sockets, messages in
flight, reversals and advices pending, last error.

A link lives in each gateway process that opened it, so each such process reports its own view
(``LinkReport``) and a reader adds up the views reported lately (``LinkStatus``): the CLI and the console
may run where no link was ever opened. How often a process reports, and when a report no longer counts,
are the constants below: a process that dies without signing off stops counting ``STALE_MS`` after its
last report; one that stops cleanly takes its reports away as it goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

REPORT_GAP_MS = 2_000  # a process writes a link's view at most this often: in flight changes with each payment
REFRESH_MS = 10_000  # and at least this often, changed or not, so that its view stays fresh
STALE_MS = 30_000  # a view not written for this long is a process that died or cannot reach the database
MAX_ERROR_LENGTH = 300


@dataclass(frozen=True, slots=True)
class LinkReport:
    """One process's view of a link it opened."""

    sockets: int  # configured: the connection's sockets per process
    signed_on: int
    in_flight: int  # messages sent and not answered yet, network messages included
    last_error: str | None  # which socket and why, never a message's content
    last_error_at_ms: int | None


@dataclass(frozen=True, slots=True)
class ProcessView:
    """A process's report as read back: which process, and when it wrote it."""

    process: str
    report: LinkReport
    reported_at_ms: int


class LinkHealth(StrEnum):
    SIGNED_ON = "signed on"  # every socket of every process reporting
    PARTLY = "partly signed on"
    DOWN = "down"  # no socket signed on: its payments end error 907 at once
    NOT_OPENED = "no process has opened it"  # nothing to say of the link, which is not the same as down


@dataclass(frozen=True, slots=True)
class LinkStatus:
    """A connection's link over the processes that reported it within ``STALE_MS``, and its messages left
    to repeat (``storage.acquirer_messages``), which outlive any process."""

    processes: tuple[ProcessView, ...]
    reversals_pending: int  # authorizations left unanswered whose reversal is not answered yet
    advices_pending: int  # captures and voids not answered yet, repeated until they are

    @property
    def sockets(self) -> int:
        return sum(view.report.sockets for view in self.processes)

    @property
    def signed_on(self) -> int:
        return sum(view.report.signed_on for view in self.processes)

    @property
    def in_flight(self) -> int:
        return sum(view.report.in_flight for view in self.processes)

    @property
    def health(self) -> LinkHealth:
        if not self.processes:
            return LinkHealth.NOT_OPENED
        if self.signed_on == 0:
            return LinkHealth.DOWN
        return LinkHealth.SIGNED_ON if self.signed_on >= self.sockets else LinkHealth.PARTLY

    @property
    def last_error(self) -> ProcessView | None:
        """The process whose error is the latest, if any reported one."""
        failed = [view for view in self.processes if view.report.last_error_at_ms is not None]
        return max(failed, key=lambda view: view.report.last_error_at_ms or 0, default=None)

    def as_dict(self, now_ms: int) -> dict[str, Any]:
        """As the CLI's JSON shows it; ages in seconds at ``now_ms``."""
        failed = self.last_error
        return {
            "state": self.health.value,
            "processes": len(self.processes),
            "sockets": self.sockets,
            "signed_on": self.signed_on,
            "in_flight": self.in_flight,
            "reversals_pending": self.reversals_pending,
            "advices_pending": self.advices_pending,
            "last_error": None if failed is None else _error(failed, now_ms),
            "by_process": [_view(view, now_ms) for view in self.processes],
            "fresh_within_seconds": STALE_MS // 1000,
        }

    def lines(self, now_ms: int) -> list[str]:
        """As the CLI prints it."""
        pending = f"reversals pending: {self.reversals_pending}, advices pending: {self.advices_pending}"
        if not self.processes:
            return [f"link: {self.health.value} (none reported it in the last {STALE_MS // 1000} s)", pending]
        lines = [
            f"link: {self.health.value}, {_processes(len(self.processes))} reporting",
            f"sockets signed on: {self.signed_on} of {self.sockets}",
            f"messages in flight: {self.in_flight}",
            pending,
        ]
        failed = self.last_error
        if failed is not None:
            at = failed.report.last_error_at_ms or 0
            lines.append(f"last error: {failed.report.last_error}, {ago(now_ms - at)} ({failed.process})")
        for view in self.processes:
            report = view.report
            lines.append(
                f"process {view.process}: {report.signed_on} of {report.sockets} sockets signed on, "
                f"{report.in_flight} in flight, reported {ago(now_ms - view.reported_at_ms)}"
            )
        return lines


def _processes(count: int) -> str:
    return "1 process" if count == 1 else f"{count} processes"


def _error(view: ProcessView, now_ms: int) -> dict[str, Any]:
    at = view.report.last_error_at_ms or 0
    return {"text": view.report.last_error, "at_ms": at, "age_seconds": _seconds(now_ms - at), "process": view.process}


def _view(view: ProcessView, now_ms: int) -> dict[str, Any]:
    report = view.report
    return {
        "process": view.process,
        "sockets": report.sockets,
        "signed_on": report.signed_on,
        "in_flight": report.in_flight,
        "last_error": report.last_error,
        "last_error_at_ms": report.last_error_at_ms,
        "reported_at_ms": view.reported_at_ms,
        "reported_seconds_ago": _seconds(now_ms - view.reported_at_ms),
    }


def _seconds(ms: int) -> int:
    return max(0, ms) // 1000


def ago(ms: int) -> str:
    """A time past as an operator reads it: ``12 s ago``, ``5 min ago``, ``3 h ago``, ``2 d ago``."""
    seconds = _seconds(ms)
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"
