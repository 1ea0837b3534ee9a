"""SQL over every run's rows: DuckDB reads the warehouse's Parquet as one view per table, and the results database's
rows (read through SQLAlchemy, so PostgreSQL needs no DuckDB extension) as db_runs, db_metrics and db_jobs. DuckDB
never fetches or loads an extension here: labs are often offline."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
from sqlalchemy import Boolean, DateTime, Float, Integer, select

from ..database.connection import Database
from ..database.schema import jobs, metrics, runs
from ..errors import UsageError
from ..results.store import read_rows
from .columns import SCHEMAS, TABLES
from .store import Warehouse

DATABASE_VIEWS = {"db_runs": runs, "db_metrics": metrics, "db_jobs": jobs}
VIEWS = (*TABLES, *DATABASE_VIEWS)
OFFLINE: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False, "autoload_known_extensions": False, "allow_community_extensions": False}


@dataclass(frozen=True)
class Answer:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def connect(warehouse: Warehouse, database: Database | None = None, sql: str = "") -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with a view per table; the database's views only when ``sql`` names them (reading
    them costs a query of the database)."""
    connection = duckdb.connect(":memory:", config=OFFLINE)
    for table in TABLES:
        pattern = warehouse.table_dir(table) / "board_kind=*" / "month=*" / "*.parquet"
        if warehouse.files(table):
            quoted = str(pattern).replace("'", "''")
            connection.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{quoted}', "
                               "hive_partitioning = false, union_by_name = true)")
        else:
            connection.register("no_rows", SCHEMAS[table].empty_table())
            connection.execute(f"CREATE TABLE {table} AS SELECT * FROM no_rows")
            connection.unregister("no_rows")
    for name, stored in DATABASE_VIEWS.items():
        if database is not None and re.search(rf"\b{name}\b", sql, re.IGNORECASE):
            schema = pa.schema([(column.name, _arrow_type(column.type)) for column in stored.columns])
            found = [dict(row._mapping) for row in read_rows(database, select(stored))]
            connection.register(name, pa.Table.from_pylist(found, schema=schema))
    connection.execute("SET lock_configuration = true")  # no statement turns extensions back on
    return connection


def _arrow_type(kind: Any) -> pa.DataType:
    """A database column's type in Arrow: the same types whether the table holds rows or none."""
    if isinstance(kind, Boolean):
        return pa.bool_()
    if isinstance(kind, Integer):
        return pa.int64()
    if isinstance(kind, Float):
        return pa.float64()
    if isinstance(kind, DateTime):
        return pa.timestamp("us", tz="UTC")
    return pa.string()


def run_query(warehouse: Warehouse, sql: str, database: Database | None = None) -> Answer:
    """The statement's columns and rows; a SQL error is one line that names the views."""
    with warehouse.locked(exclusive=False):
        try:
            connection = connect(warehouse, database, sql)
        except (duckdb.Error, pa.ArrowException) as exc:
            raise UsageError(f"cannot read the warehouse {warehouse.root}: {_first_line(exc)}",
                             "'orchestrate results compact' rewrites its files; a damaged one can be removed and "
                             "its runs imported again") from None
        try:
            statements = connection.extract_statements(sql)
            if len(statements) != 1:
                raise UsageError(f"the query holds {len(statements)} statements", "give one SQL statement")
            if statements[0].type == duckdb.StatementType.LOAD:
                raise UsageError("the query installs or loads a DuckDB extension: results query loads none",
                                 "query the views with DuckDB's own functions")
            result = connection.execute(sql)
            columns = [d[0] for d in result.description or []]
            return Answer(columns, result.fetchall() if columns else [])
        except duckdb.Error as exc:
            raise UsageError(f"the query failed: {_first_line(exc)}",
                             f"query the views {', '.join(VIEWS)} (see 'orchestrate results query --help')") from None
        finally:
            connection.close()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
