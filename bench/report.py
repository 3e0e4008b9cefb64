"""The results table, the automatic notes on anomalies, and the part of docs/performance.md a run writes."""

from __future__ import annotations

import datetime
import platform
import sqlite3
import subprocess
from collections.abc import Sequence
from pathlib import Path

from bench import probe, targets
from bench.scenarios import Row

HEADER = (
    "scenario",
    "req/s",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "errors",
    "vs ceiling",
    "server RSS MiB",
    "server CPU",
    "postgres CPU",
    "load CPU",
    "other CPU",
    "target",
)
GENERATOR_BUSY = 0.9
SERVER_IDLE = 0.8
OTHERS_BUSY = 0.15


def in_process(row: Row) -> bool:
    """A row measured in the bench's own process, with no server and no load generator."""
    return row.kind == "console-search" or row.kind.startswith("claim-")


def _cells(row: Row, rows: Sequence[Row]) -> tuple[str, ...]:
    r = row.result
    ceiling_rps = rows[0].result.rps if rows else 0.0
    measured_apart = row.kind.startswith(("e2e", "overload", "isolation")) or in_process(row)
    ratio = f"{r.rps / ceiling_rps:.2f}" if ceiling_rps and not measured_apart else "-"
    rss = " + ".join(f"{kib / 1024:.0f}" for kib in row.rss_each_kib or (row.rss_kib,))
    return (
        row.name,
        f"{r.rps:,.0f}",
        f"{r.p50_ms:.2f}",
        f"{r.p99_ms:.2f}",
        f"{r.p999_ms:.2f}",
        str(r.errors),
        ratio,
        rss,
        f"{row.server_cpu:.0%}",
        f"{row.cpu.postgres:.0%}",
        f"{r.generator_cpu:.0%}",
        f"{row.cpu.others:.0%}",
        targets.cell(row, rows),
    )


def table(rows: Sequence[Row]) -> str:
    """A Markdown table, numbers right-aligned, readable as plain text too."""
    lines = [HEADER, *(_cells(row, rows) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]

    def render(cells: Sequence[str]) -> str:
        padded = [
            c.ljust(w) if i in (0, len(widths) - 1) else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    last = len(widths) - 1
    rule = "|" + "|".join("-" * (w + 1) + (":" if 0 < i < last else "-") for i, w in enumerate(widths)) + "|"
    return "\n".join([render(lines[0]), rule, *(render(cells) for cells in lines[1:])])


def notes(rows: Sequence[Row], facts: Sequence[str] = ()) -> list[str]:
    """The ratios of the targets, what each scenario reported beyond its row, and what in the numbers
    needs a second look."""
    found: list[str] = [*targets.ratio_notes(rows), *targets.limit_notes(rows), *facts]
    for row in rows:
        found += row.facts
        r = row.result
        if r.errors:
            found.append(
                f"{row.name}: {r.non_200} non-200 answers and {r.socket_errors} socket errors; first: {r.first_error!r}"
            )
        if r.wraps and row.unique_bodies:
            found.append(f"{row.name}: the body list was replayed {r.wraps} more time(s), so some requests repeated")
        if r.generator_cpu > GENERATOR_BUSY:
            found.append(f"{row.name}: the load generator used {r.generator_cpu:.0%} of its core and may be the limit")
        if in_process(row) or row.kind.startswith(("overload", "isolation")):  # no CPU sampled
            continue
        if row.server_cpu < SERVER_IDLE and row.kind not in ("e2e", "e2e-sustained", "peer"):
            found.append(
                f"{row.name}: the server process used only {row.server_cpu:.0%} of its core: it waits on something"
                " other than its own CPU (database, locks, fsync)"
            )
        if row.cpu.others > OTHERS_BUSY:
            found.append(
                f"{row.name}: other processes kept {row.cpu.others:.0%} of a core busy during the run:"
                " the machine was not quiet, so the numbers are lower than they would be"
            )
        if r.generator not in ("wrk", "open-loop"):
            found.append(f"{row.name}: measured with the {r.generator} load generator, not wrk")
    return found


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _tool_version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return "not installed"
    output = (done.stdout or done.stderr).strip().splitlines()
    return output[0] if output else "unknown"


def machine(postgres_version: str, peer_version: str = "not measured") -> list[tuple[str, str]]:
    return [
        ("date", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("nproc", str(probe.cores())),
        ("CPU", _cpu_model()),
        ("kernel", platform.release()),
        ("Python", platform.python_version()),
        ("SQLite", sqlite3.sqlite_version),
        ("PostgreSQL", postgres_version),
        ("wrk", _tool_version(["wrk", "--version"])),
        ("peer", peer_version),
    ]


BEGIN = "<!-- bench: the last run's results begin here; `python -m bench` rewrites them -->"
END = "<!-- bench: the last run's results end here -->"


def results(
    rows: Sequence[Row], command: str, facts: Sequence[tuple[str, str]], settings: str, run_facts: Sequence[str] = ()
) -> str:
    """The part of docs/performance.md a run writes: the machine, the command, the table and its notes. The
    rest of the file (what the numbers mean, profiles, each issue's measurements) is written by hand."""
    found = notes(rows, run_facts)
    lines = [
        "## Machine",
        "",
        *(f"- {name}: {value}" for name, value in facts),
        "",
        "## Command",
        "",
        "```",
        command,
        "```",
        "",
        settings,
        "",
        "## Results",
        "",
        table(rows),
        "",
        "## Notes from this run",
        "",
        *([f"- {note}" for note in found] or ["- none: no errors, no repeated bodies, no saturated load generator."]),
        "",
        "Every number above was measured in this one run; *target* holds each figure against the target of",
        "issue 6 and the reference it names (the ceiling, the peer, the row above).",
    ]
    return "\n".join(lines)


def with_results(document: str, written: str) -> str:
    """``document`` with the part between ``BEGIN`` and ``END`` replaced by ``written``."""
    head, begin, rest = document.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not (begin and end):
        raise ValueError(f"the document has no {BEGIN!r} ... {END!r} to write the results between")
    return f"{head}{BEGIN}\n{written}\n{END}{tail}"
