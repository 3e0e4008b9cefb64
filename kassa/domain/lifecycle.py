"""Statuses and stages of CONTRACT §6, with the allowed stage transitions (transaction types and their
stage prefixes are in ``transactions``).

The transitions are data: one table, checked by one function. No handler or worker decides on its own
which stage may follow which.
"""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    PROCESSING = "processing"
    THREE_D_METHOD = "3d_method"
    THREE_D_VALIDATING = "3d_validating"
    THREE_D_VALIDATED = "3d_validated"
    APPROVED = "approved"
    DECLINED = "declined"
    FILTERED = "filtered"
    ERROR = "error"
    UNKNOWN = "unknown"


class Status(StrEnum):
    PROCESSING = "processing"
    APPROVED = "approved"
    DECLINED = "declined"
    FILTERED = "filtered"
    ERROR = "error"
    UNKNOWN = "unknown"


_OUTCOMES = frozenset({Stage.APPROVED, Stage.DECLINED, Stage.FILTERED, Stage.ERROR, Stage.UNKNOWN})

# Which stage may follow which. Final stages have no successors; `unknown` is resolved later by
# reconciliation with the acquirer, so it may still move to a final outcome.
TRANSITIONS: dict[Stage, frozenset[Stage]] = {
    Stage.PROCESSING: _OUTCOMES | frozenset({Stage.THREE_D_METHOD, Stage.THREE_D_VALIDATING, Stage.THREE_D_VALIDATED}),
    Stage.THREE_D_METHOD: frozenset({Stage.THREE_D_VALIDATING, Stage.THREE_D_VALIDATED, Stage.DECLINED, Stage.ERROR}),
    Stage.THREE_D_VALIDATING: frozenset({Stage.THREE_D_VALIDATED, Stage.DECLINED, Stage.ERROR}),
    Stage.THREE_D_VALIDATED: _OUTCOMES,
    Stage.UNKNOWN: frozenset({Stage.APPROVED, Stage.DECLINED, Stage.ERROR}),
    Stage.APPROVED: frozenset(),
    Stage.DECLINED: frozenset(),
    Stage.FILTERED: frozenset(),
    Stage.ERROR: frozenset(),
}

FINAL_STAGES = frozenset(stage for stage, successors in TRANSITIONS.items() if not successors)
FAILED = FINAL_STAGES - {Stage.APPROVED}


class IllegalTransition(Exception):
    def __init__(self, current: Stage, target: Stage) -> None:
        super().__init__(f"a transaction cannot move from {current} to {target}")
        self.current = current
        self.target = target


def advance(current: Stage, target: Stage) -> Stage:
    """The stage after ``current`` when the processing result is ``target``; refuses what the table forbids."""
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(current, target)
    return target


def status_of(stage: Stage) -> Status:
    if stage in (Stage.PROCESSING, Stage.THREE_D_METHOD, Stage.THREE_D_VALIDATING, Stage.THREE_D_VALIDATED):
        return Status.PROCESSING
    return Status(stage.value)


def is_final(stage: Stage) -> bool:
    return stage in FINAL_STAGES


def stages_of_status(status: str) -> list[str]:
    return [stage.value for stage in Stage if status_of(stage).value == status]
