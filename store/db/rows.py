"""Typed reads of query results.

apsw types a fetched row as ``Any | None`` (``fetchone``) or as a tuple of
every value SQLite can hold (``fetchall``), though each query knows what its
columns hold. These helpers give the rows as ``tuple[Any, ...]`` (the query
states the types; the caller names them) and the one row an aggregate or a
pragma always returns, so callers neither cast nor index an optional.
"""

from __future__ import annotations

from typing import Any

import apsw

#: One result row; its columns are what the query selects.
Row = tuple[Any, ...]


def first(con: apsw.Connection, sql: str, params: apsw.Bindings = ()) -> Row | None:
    """The first row of ``sql``, or None when it returns none."""
    row: Row | None = con.execute(sql, params).fetchone()
    return row


def one(con: apsw.Connection, sql: str, params: apsw.Bindings = ()) -> Row:
    """The row a query always returns (an aggregate, a pragma)."""
    row = first(con, sql, params)
    if row is None:
        raise LookupError(f"no row from: {sql}")
    return row


def scalar(con: apsw.Connection, sql: str, params: apsw.Bindings = ()) -> Any:
    """The first column of the row ``sql`` always returns."""
    return one(con, sql, params)[0]


def count(con: apsw.Connection, sql: str, params: apsw.Bindings = ()) -> int:
    """A number ``sql`` always returns (``count(*)``, a counting pragma)."""
    return int(scalar(con, sql, params))


def rows(con: apsw.Connection, sql: str, params: apsw.Bindings = ()) -> list[Row]:
    """Every row of ``sql``."""
    return list(con.execute(sql, params))
