"""The targets of issue 6 (and issue 17's OAuth cost), each figure set beside its reference measured in the
same run (the *target* column of the table, and the ratio notes)."""

from __future__ import annotations

from collections.abc import Sequence

from bench import probe
from bench.scenarios import Row

SALE_VS_CEILING = 0.5
STATUS_VS_CEILING = 0.7
PEER_FACTOR = 10.0
E2E_P99_MS = 50.0
BULK_P99_FACTOR = 1.5
SCALE_FACTOR = 1.7
RSS_MIB = 150.0
OAUTH_ADDS_US = 100.0
CONSOLE_SEARCH_P99_MS = 100.0
CLAIM_FLAT_FACTOR = 1.5  # a claim's median with a backlog against the same claim's with none
# A scrape's queue figures count up to storage.queue_figures.COUNTED_UP_TO rows: past that many the backlog
# costs nothing more, and the bound is absolute (a scrape every 15 s).
SCRAPE_FIGURES_MS = 20.0
OVERLOAD_RECOVERY_S = 10.0  # after a burst at twice the capacity, until the p99 is back to normal
ISOLATION_FACTOR = 1.5  # a healthy merchant's p99 to callback beside a dead receiver's backlog, against none
# Each OAuth row against the control-signed row of the same server that does the same work.
OAUTH_REFERENCES = {"oauth-hmac": "oauth-none", "oauth-rsa": "oauth-none", "cardref-v4": "cardref-v2"}


def _find(rows: Sequence[Row], kind: str, backend: str = "") -> Row | None:
    return next((r for r in rows if r.kind == kind and (not backend or r.backend == backend)), None)


def _met(ok: bool) -> str:
    return "met" if ok else "missed"


def _rss(row: Row) -> str:
    biggest = max(row.rss_each_kib or (row.rss_kib,)) / 1024
    return f"RSS <= {RSS_MIB:.0f} MiB: {_met(biggest <= RSS_MIB)}"


def peer_ratio(rows: Sequence[Row]) -> float | None:
    """Kassa sales (SQLite) per localstripe charge, both measured in this run."""
    kassa, peer = _find(rows, "sale", "sqlite"), _find(rows, "peer")
    if kassa is None or peer is None or not peer.result.rps:
        return None
    return kassa.result.rps / peer.result.rps


def bulk_ratio(rows: Sequence[Row], backend: str) -> float | None:
    small, big = _find(rows, "bulk-small", backend), _find(rows, "bulk-big", backend)
    if small is None or big is None or not small.result.p99_ms:
        return None
    return big.result.p99_ms / small.result.p99_ms


def scale_ratio(rows: Sequence[Row]) -> float | None:
    one, two = _find(rows, "scale-1"), _find(rows, "scale-2")
    if one is None or two is None or not one.result.rps:
        return None
    return two.result.rps / one.result.rps


def cell(row: Row, rows: Sequence[Row]) -> str:
    """What the row is held to and whether it made it."""
    ceiling = rows[0].result.rps if rows and rows[0].kind == "ceiling" else 0.0
    vs_ceiling = row.result.rps / ceiling if ceiling else 0.0
    if row.kind == "ceiling":
        return "reference"
    if row.kind in ("floor-sale", "floor-status"):
        return "the least this work costs in Python"
    if row.kind in ("sale", "status"):
        goal = SALE_VS_CEILING if row.kind == "sale" else STATUS_VS_CEILING
        verdict = f">= {goal:.1f}x ceiling: {vs_ceiling:.2f}x, {_met(vs_ceiling >= goal)}"
        floor = _find(rows, f"floor-{row.kind}")
        if floor is None or not ceiling:
            return verdict
        return f"{verdict} (floor {floor.result.rps / ceiling:.2f}x)"
    if row.kind == "peer":
        ratio = peer_ratio(rows)
        return (
            ""
            if ratio is None
            else f"Kassa sale sqlite >= {PEER_FACTOR:.0f}x this: {ratio:.1f}x, {_met(ratio >= PEER_FACTOR)}"
        )
    if row.kind == "e2e":
        ok = row.result.p99_ms <= E2E_P99_MS and row.lost == 0
        return f"p99 <= {E2E_P99_MS:.0f} ms, 0 lost: {row.result.p99_ms:,.0f} ms, {row.lost:,} lost, {_met(ok)}"
    if row.kind == "e2e-sustained":
        return f"reference, below overload: p99 {row.result.p99_ms:,.0f} ms, {row.lost:,} lost"
    if row.kind == "bulk-small":
        return "reference of the next row"
    if row.kind == "bulk-big":
        ratio = bulk_ratio(rows, row.backend)
        return (
            ""
            if ratio is None
            else f"p99 <= {BULK_P99_FACTOR}x previous: {ratio:.2f}x, {_met(ratio <= BULK_P99_FACTOR)}"
        )
    if row.kind == "console-search":
        ok = row.result.p99_ms <= CONSOLE_SEARCH_P99_MS
        return f"p99 <= {CONSOLE_SEARCH_P99_MS:.0f} ms: {row.result.p99_ms:,.1f} ms, {_met(ok)}"
    if row.kind.startswith("claim-"):
        return _claim_cell(row, rows)
    if row.kind == "overload":
        return _overload_cell(row)
    if row.kind == "isolation-none":
        return "reference of the next rows"
    if row.kind.startswith("isolation-"):
        return _isolation_cell(row, rows)
    if row.kind == "oauth-none":
        return "reference of the two OAuth rows refused at their first field"
    if row.kind == "cardref-v2":
        return "reference of the next row"
    if row.kind in OAUTH_REFERENCES:
        return _oauth_cell(row, rows)
    if row.kind == "scale-1":
        return f"reference of the next row; {_rss(row)}"
    if row.kind == "scale-2":
        ratio = scale_ratio(rows)
        scaled = "" if ratio is None else f">= {SCALE_FACTOR}x previous: {ratio:.2f}x, {_met(ratio >= SCALE_FACTOR)}; "
        return scaled + _rss(row)
    return ""


def oauth_added_us(row: Row, rows: Sequence[Row]) -> float | None:
    """The server CPU per request of an OAuth row beyond its control-signed reference (same server)."""
    base = _find(rows, OAUTH_REFERENCES[row.kind], row.backend)
    if base is None or not base.result.rps or not row.result.rps:
        return None
    return _us_per_request(row.cpu.server, row) - _us_per_request(base.cpu.server, base)


def _oauth_cell(row: Row, rows: Sequence[Row]) -> str:
    """The target is read on the refused rows, where signing is the only difference from the reference; a
    create-card-ref v4 also does v4's own work beyond v2's, so its row shows what it adds, against no target."""
    added = oauth_added_us(row, rows)
    if added is None:
        verdict = ""
    elif "create-card-ref" in row.name:
        verdict = f"adds {added:.0f} µs over v2 (signing and v4's own work)"
    else:
        verdict = f"adds <= {OAUTH_ADDS_US:.0f} µs: {added:.0f} µs, {_met(added <= OAUTH_ADDS_US)}"
    sale = _find(rows, "sale", row.backend)
    if sale is None or not sale.result.rps:
        return verdict
    return f"{verdict}; {row.result.rps / sale.result.rps:.2f}x the control-signed sale's req/s"


def ratio_notes(rows: Sequence[Row]) -> list[str]:
    found = []
    ratio = peer_ratio(rows)
    if ratio is not None:
        found.append(
            f"Kassa sale acceptance on SQLite / localstripe charges = {ratio:.1f}x (target >= {PEER_FACTOR:.0f}x)"
        )
    for backend in ("sqlite", "postgresql"):
        ratio = bulk_ratio(rows, backend)
        if ratio is not None:
            found.append(
                f"status p99, big / small stored-order count on {backend} = {ratio:.2f}x (target <= {BULK_P99_FACTOR}x)"
            )
    ratio = scale_ratio(rows)
    if ratio is not None:
        found.append(
            f"sale acceptance, 2 / 1 server processes on PostgreSQL = {ratio:.2f}x (target >= {SCALE_FACTOR}x)"
        )
    return found


def _us_per_request(share: float, row: Row) -> float:
    """``share`` of a core over ``row``'s run, as CPU µs per request (or sale) of it."""
    return share / row.result.rps * 1e6 if row.result.rps else 0.0


def limit_notes(rows: Sequence[Row]) -> list[str]:
    """Where a target depends on CPU, the limit this run's own CPU figures put on it."""
    ceiling = _find(rows, "ceiling")
    found = [_ceiling_limit(row, rows, ceiling) for row in rows if row.kind in ("sale", "status") and ceiling]
    # At the target rate only: below it, the idle polling of workers and pools weighs on every sale.
    found += [_endtoend_limit(row) for row in rows if row.kind == "e2e" and row.result.rps]
    found += [_oauth_limit(row, rows) for row in rows if row.kind in OAUTH_REFERENCES and row.result.rps]
    return found + _scale_limit(rows)


def _oauth_limit(row: Row, rows: Sequence[Row]) -> str:
    added = oauth_added_us(row, rows)
    text = f"{row.name}: {_us_per_request(row.cpu.server, row):.0f} µs of server CPU per request"
    if added is not None:
        what = (
            "verification, the nonce and v4's own extra work"
            if "create-card-ref" in row.name
            else "verification and the nonce's write"
        )
        text += f", {added:.0f} µs more than its control-signed reference ({what})"
    if row.cpu.postgres:
        text += f"; PostgreSQL {_us_per_request(row.cpu.postgres, row):.0f} µs per request"
    return text


def _ceiling_limit(row: Row, rows: Sequence[Row], ceiling: Row) -> str:
    goal = SALE_VS_CEILING if row.kind == "sale" else STATUS_VS_CEILING
    ceiling_us = _us_per_request(ceiling.cpu.server, ceiling)
    floor = _find(rows, f"floor-{row.kind}")
    floor_text = "" if floor is None else f", the floor's {_us_per_request(floor.cpu.server, floor):.0f} µs"
    return (
        f"{row.name}: {_us_per_request(row.cpu.server, row):.0f} µs of server CPU per request, against the"
        f" ceiling's {ceiling_us:.0f} µs{floor_text}; {goal:.1f}x the ceiling allows {ceiling_us / goal:.0f} µs"
    )


def _endtoend_limit(row: Row) -> str:
    us = _us_per_request(row.cpu.server, row)
    text = (
        f"{row.name}: {us:.0f} µs of server CPU per sale, request to callback: the server's one core"
        f" allows at most {1e6 / us:,.0f} sales/s"
    )
    if not row.cpu.postgres:
        return text
    pg_us = _us_per_request(row.cpu.postgres, row)
    return (
        f"{text}; PostgreSQL {pg_us:.0f} µs per sale, on the core it shares with the load: at most"
        f" {1e6 / pg_us:,.0f}/s if it had that core to itself"
    )


def _scale_limit(rows: Sequence[Row]) -> list[str]:
    one = _find(rows, "scale-1")
    if one is None or not one.result.rps:
        return []
    parts = {"server": one.cpu.server, "PostgreSQL": one.cpu.postgres, "load": one.result.generator_cpu}
    per_sale = sum(parts.values()) / one.result.rps  # core-seconds
    most = probe.cores() / per_sale
    spent = ", ".join(f"{name} {_us_per_request(share, one):.0f}" for name, share in parts.items())
    return [
        f"scale: one sale cost {per_sale * 1e6:.0f} µs of CPU in all ({spent}) with one server process;"
        f" this machine's {probe.cores()} cores allow at most {most:,.0f} sales/s, {most / one.result.rps:.2f}x"
        f" the one-process rate, so {SCALE_FACTOR}x needs {SCALE_FACTOR * per_sale * one.result.rps:.1f} cores"
        " at that cost"
    ]


def _overload_cell(row: Row) -> str:
    """Every accepted sale called back, the refusals counted, and the p99 normal again soon after."""
    recovered = row.recovery_s is not None and row.recovery_s <= OVERLOAD_RECOVERY_S
    when = "never" if row.recovery_s is None else f"{row.recovery_s:g} s"
    return (
        f"0 lost, recovery <= {OVERLOAD_RECOVERY_S:g} s: {row.lost:,} lost, {row.refused:,} refused,"
        f" recovered in {when}, {_met(row.lost == 0 and recovered)}"
    )


def _isolation_cell(row: Row, rows: Sequence[Row]) -> str:
    """The healthy merchant's p99 to callback against the same run with nothing queued."""
    alone = _find(rows, "isolation-none", row.backend)
    if alone is None or not alone.result.p99_ms:
        return ""
    ratio = row.result.p99_ms / alone.result.p99_ms
    ok = ratio <= ISOLATION_FACTOR and row.lost == 0
    return f"p99 <= {ISOLATION_FACTOR}x none queued, 0 lost: {ratio:.2f}x, {row.lost:,} lost, {_met(ok)}"


def _claim_cell(row: Row, rows: Sequence[Row]) -> str:
    """A claim with work queued that it cannot take, against the first row of its kind: the empty queue."""
    if row.kind == "claim-figures":
        took = row.result.p99_ms
        return f"p99 <= {SCRAPE_FIGURES_MS:g} ms at any backlog: {took:.1f} ms, {_met(took <= SCRAPE_FIGURES_MS)}"
    empty = _find(rows, row.kind, row.backend)
    if empty is None or empty is row or not empty.result.p50_ms:
        return "reference of the next rows"
    ratio = row.result.p50_ms / empty.result.p50_ms
    return f"p50 <= {CLAIM_FLAT_FACTOR}x empty queue: {ratio:.2f}x, {_met(ratio <= CLAIM_FLAT_FACTOR)}"
