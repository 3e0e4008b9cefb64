"""``python -m bench`` rewrites only the results of docs/performance.md, between its markers: the sections
written by hand after them survive every run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import report

DOCS = Path(__file__).parent.parent / "docs" / "performance.md"


def test_a_run_rewrites_the_results_between_the_markers_and_nothing_else() -> None:
    document = f"# Performance\n\nintro\n\n{report.BEGIN}\nold table\n{report.END}\n\n## By hand\n\nkept\n"
    written = report.with_results(document, "new table")
    assert written == f"# Performance\n\nintro\n\n{report.BEGIN}\nnew table\n{report.END}\n\n## By hand\n\nkept\n"


def test_a_document_without_the_markers_is_refused_rather_than_overwritten() -> None:
    with pytest.raises(ValueError, match="results between"):
        report.with_results("# Performance\n\nwritten by hand\n", "new table")


def test_the_performance_document_has_its_markers_once_each() -> None:
    text = DOCS.read_text()
    assert (text.count(report.BEGIN), text.count(report.END)) == (1, 1)
    assert text.index(report.BEGIN) < text.index("## Results") < text.index(report.END)
