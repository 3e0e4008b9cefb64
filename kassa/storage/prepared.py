"""Hot-path statements, run on the driver's own cursor.

``Connection.execute`` costs about 40 µs a statement here (execution context, events, result wrapping);
the driver's ``cursor.execute`` costs 3-8 µs. A sale writes five rows and a status call reads three, so
those few statements are built with SQLAlchemy Core as usual, compiled once per dialect, and executed on
the DB-API cursor of the same connection, inside the same transaction. Measured on the sale's writes:
280 µs per order through ``Connection.execute``, 57 µs through the cursor.

Only statements on tables of plain integers, strings and bytes belong here: no SQLAlchemy type
processing runs, so values go to the driver and rows come back exactly as the driver has them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.sql.expression import ColumnElement, Executable, Insert, Select

Row = dict[str, Any]
# A row read by name: a SQLAlchemy RowMapping (keyed by name or column) or a Row from here alike.
Record = Mapping[Any, Any]


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    positions: tuple[str, ...] | None  # parameter names in order, for drivers that bind by position
    constants: dict[str, Any]  # values SQLAlchemy bound itself (``x + 1``, ``LIMIT ? OFFSET 0``)
    names: tuple[str, ...]  # the parameters a call gives, each once, in the order it first appears

    def parameters(self, values: Mapping[str, Any]) -> Any:
        if self.positions is None:
            return {**self.constants, **values} if self.constants else values
        if self.constants:
            return [values[n] if n in values else self.constants[n] for n in self.positions]
        return [values[n] for n in self.positions]


class Prepared:
    """One statement; every ``bindparam(name)`` without a value must be given on each call. Where the
    dialects need different constructs (``ON CONFLICT``), ``per_dialect`` gives one by dialect name."""

    __slots__ = ("_compiled", "_statements")

    def __init__(self, statement: Executable, **per_dialect: Executable) -> None:
        self._statements = {"": statement, **per_dialect}
        self._compiled: dict[str, _Compiled] = {}

    def _for(self, conn: Connection) -> _Compiled:
        name = conn.dialect.name
        found = self._compiled.get(name)
        if found is None:
            statement = self._statements.get(name, self._statements[""])
            compiled = statement.compile(dialect=conn.dialect)  # type: ignore[attr-defined]
            positions = tuple(compiled.positiontup) if conn.dialect.positional else None
            constants = {n: b.effective_value for n, b in compiled.binds.items() if not b.required}
            named = positions if positions is not None else compiled.bind_names.values()
            names = tuple(n for n in dict.fromkeys(named) if n not in constants)
            found = self._compiled[name] = _Compiled(str(compiled), positions, constants, names)
        return found

    def execute(self, conn: Connection, values: Mapping[str, Any]) -> Any:
        """Runs the statement in ``conn``'s transaction; returns the driver's cursor."""
        compiled = self._for(conn)
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        cursor.execute(compiled.sql, compiled.parameters(values))
        return cursor

    def execute_values(self, conn: Connection, values: Sequence[Any]) -> Any:
        """``execute`` with every parameter's value in the order the statement names them first, for a
        statement of many parameters run for every sale: where the driver binds by position and no name
        repeats, the values go to it as given, no name looked up (naming fifteen values and looking them
        up again cost about as much as SQLite's read of five keys' counts)."""
        compiled = self._for(conn)
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        if compiled.positions == compiled.names:
            cursor.execute(compiled.sql, values)
        else:
            cursor.execute(compiled.sql, compiled.parameters(dict(zip(compiled.names, values, strict=True))))
        return cursor

    def execute_many(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Runs the statement once per row (psycopg sends them in one round trip)."""
        compiled = self._for(conn)
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        cursor.executemany(compiled.sql, [compiled.parameters(values) for values in rows])

    def first(self, conn: Connection, values: Mapping[str, Any]) -> Row | None:
        cursor = self.execute(conn, values)
        row = cursor.fetchone()
        return None if row is None else dict(zip([d[0] for d in cursor.description], row, strict=True))

    def one(self, conn: Connection, values: Mapping[str, Any]) -> Row:
        row = self.first(conn, values)
        if row is None:
            raise LookupError(f"no row for {dict(values)}")
        return row

    def all(self, conn: Connection, values: Mapping[str, Any]) -> list[Row]:
        cursor = self.execute(conn, values)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def scalar(self, conn: Connection, values: Mapping[str, Any]) -> Any:
        row = self.execute(conn, values).fetchone()
        return None if row is None else row[0]

    def inserted_id(self, conn: Connection, values: Mapping[str, Any]) -> int | None:
        """The id of the row an ``INSERT`` wrote, None when it wrote none (``ON CONFLICT DO NOTHING``).
        The statement returns the id where the dialect needs ``RETURNING`` for it (``inserting``); on
        SQLite it has none and the cursor tells the row it wrote: fetching a returned row is one more step
        of the statement, and each step lets go of the interpreter lock, which the writer thread must then
        win back from the busy event loop."""
        cursor = self.execute(conn, values)
        if cursor.description is None:
            return int(cursor.lastrowid) if cursor.rowcount else None
        row = cursor.fetchone()
        return None if row is None else int(row[0])


def inserting(statement: Insert, returned: ColumnElement[Any], **per_dialect: Insert) -> Prepared:
    """An ``INSERT`` for ``Prepared.inserted_id``: ``RETURNING returned`` on PostgreSQL, none on SQLite."""
    postgresql = per_dialect.pop("postgresql", statement)
    return Prepared(statement, postgresql=postgresql.returning(returned), **per_dialect)


class Joined:
    """A read over joined tables, its columns labelled ``<prefix><column>`` (``t_id``, ``o_id``), each row
    split back into one dict per prefix. The split is by position, worked out once (a prefix's columns
    are contiguous): splitting by name cost more than the query on a status call."""

    __slots__ = ("_parts", "_prepared")

    def __init__(self, statement: Select[Any]) -> None:
        self._prepared = Prepared(statement)
        labels = [str(column.key) for column in statement.selected_columns]
        starts = [i for i, label in enumerate(labels) if i == 0 or label[:2] != labels[i - 1][:2]]
        bounds = zip(starts, [*starts[1:], len(labels)], strict=True)
        self._parts = tuple((labels[a][:2], tuple(x[2:] for x in labels[a:b]), a, b) for a, b in bounds)

    def all(self, conn: Connection, values: Mapping[str, Any]) -> list[dict[str, Row]]:
        return [self._split(row) for row in self._prepared.execute(conn, values).fetchall()]

    def first(self, conn: Connection, values: Mapping[str, Any]) -> dict[str, Row] | None:
        row = self._prepared.execute(conn, values).fetchone()
        return None if row is None else self._split(row)

    def one(self, conn: Connection, values: Mapping[str, Any]) -> dict[str, Row]:
        row = self.first(conn, values)
        if row is None:
            raise LookupError(f"no row for {dict(values)}")
        return row

    def _split(self, row: Sequence[Any]) -> dict[str, Row]:
        return {prefix: dict(zip(names, row[a:b], strict=True)) for prefix, names, a, b in self._parts}
