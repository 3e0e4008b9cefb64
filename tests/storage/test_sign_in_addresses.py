"""The console's sign-in allowance per address, as the database keeps it: a burst, then one more attempt
every interval; refusals cost nothing; a success gives its attempt back; a whole allowance is forgotten."""

from __future__ import annotations

from sqlalchemy import func, select

from kassa.storage import sign_in_addresses
from kassa.storage.database import Database
from kassa.storage.tables import sign_in_addresses as table

NOW = 1_000_000_000


def _take(db: Database, address: str, now: int) -> sign_in_addresses.Refused | None:
    return db.write_sync(lambda conn: sign_in_addresses.take(conn, address, now, 1000, 3))


def test_an_address_makes_its_burst_then_one_attempt_an_interval(db: Database) -> None:
    assert [_take(db, "192.0.2.1", NOW) for _ in range(3)] == [None] * 3
    refused = _take(db, "192.0.2.1", NOW)
    assert refused == sign_in_addresses.Refused(1000, first=True)
    assert _take(db, "192.0.2.1", NOW + 500) == sign_in_addresses.Refused(500, first=False)
    assert _take(db, "192.0.2.2", NOW) is None  # another address has its own
    assert _take(db, "192.0.2.1", NOW + 1000) is None
    assert _take(db, "192.0.2.1", NOW + 1000) is not None


def test_a_new_run_of_refusals_is_first_again_once_the_last_one_has_passed(db: Database) -> None:
    for _ in range(3):
        _take(db, "192.0.2.1", NOW)
    assert _take(db, "192.0.2.1", NOW) == sign_in_addresses.Refused(1000, first=True)
    assert _take(db, "192.0.2.1", NOW + 1000) is None
    assert _take(db, "192.0.2.1", NOW + 1000) == sign_in_addresses.Refused(1000, first=False)
    assert _take(db, "192.0.2.1", NOW + 3000) is None
    assert _take(db, "192.0.2.1", NOW + 3000) is None
    assert _take(db, "192.0.2.1", NOW + 3000) == sign_in_addresses.Refused(1000, first=True)


def test_an_attempt_given_back_can_be_made_again(db: Database) -> None:
    for _ in range(3):
        _take(db, "192.0.2.1", NOW)
    db.write_sync(lambda conn: sign_in_addresses.give_back(conn, "192.0.2.1", 1000))
    assert _take(db, "192.0.2.1", NOW) is None
    assert _take(db, "192.0.2.1", NOW) is not None


def test_addresses_whose_allowance_is_whole_again_are_forgotten(db: Database) -> None:
    _take(db, "192.0.2.1", NOW)
    for _ in range(3):
        _take(db, "192.0.2.2", NOW)
    assert db.write_sync(lambda conn: sign_in_addresses.prune(conn, NOW + 1001)) == 1
    assert db.read_sync(lambda conn: conn.execute(select(table.c.address)).scalars().all()) == ["192.0.2.2"]
    assert db.write_sync(lambda conn: sign_in_addresses.prune(conn, NOW + 3001)) == 1
    assert db.read_sync(lambda conn: conn.execute(select(func.count()).select_from(table)).scalar()) == 0
