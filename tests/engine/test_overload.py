"""Load shedding's decision (``engine.overload.LoadShedder``) from samples of its two signals: how long the
oldest waiting job and the oldest waiting callback have waited. The API's refusals while shedding are in
tests/api/test_overload.py; reading the signals, in tests/storage."""

from __future__ import annotations

from kassa.engine.overload import LoadShedder
from kassa.storage.callbacks import DeliveryLimits
from kassa.storage.database import Database

NOW = 1_000_000


def _shedder(db: Database, *, job_seconds: float = 1, callback_seconds: float = 1) -> LoadShedder:
    return LoadShedder(db, job_seconds, callback_seconds, DeliveryLimits(per_destination=16, per_merchant=32))


def _after(shedder: LoadShedder, *samples: tuple[int, int]) -> bool:
    for n, (job_ms, callback_ms) in enumerate(samples):
        shedder.observe(job_ms, callback_ms, NOW + 250 * n)
    return shedder.shedding


def test_callbacks_waiting_past_their_threshold_shed_load_as_waiting_jobs_do(db: Database) -> None:
    assert _after(_shedder(db), (0, 1_500), (0, 1_500))
    assert _after(_shedder(db), (1_500, 0), (1_500, 0))
    assert not _after(_shedder(db), (0, 1_500), (0, 200))  # one sample above is not enough


def test_shedding_stops_only_once_both_waits_are_below_half_their_thresholds(db: Database) -> None:
    shedder = _shedder(db, job_seconds=1, callback_seconds=2)
    assert _after(shedder, (1_500, 0), (1_500, 0))
    assert _after(shedder, (400, 1_200))  # the jobs drained, the callbacks are past half of theirs
    assert not _after(shedder, (400, 900))


def test_a_signal_whose_threshold_is_0_never_sheds(db: Database) -> None:
    assert not _after(_shedder(db, callback_seconds=0), (0, 3_600_000), (0, 3_600_000))
    assert not _after(_shedder(db, job_seconds=0), (3_600_000, 0), (3_600_000, 0))
