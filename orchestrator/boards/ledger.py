"""The leases, boards' health and history as rows of the results database. Each change that decides who gets a
board runs in one transaction that no other process's can interleave with (SQLite's write lock, taken at BEGIN;
an advisory lock on PostgreSQL), on the database's clock."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, insert, select, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from ..database.connection import READING, Database, _first_line
from ..database.schema import board_events, board_health, leases
from ..errors import ResultsDatabaseError
from .queue import HEARTBEAT_S, QUARANTINE_AFTER, STALE_S, Waiting, grants, is_stale

LEASE_LOCK = 7_311_948  # the advisory lock key that orders the leases' changes on PostgreSQL
WAITING, HELD, ENDED = "waiting", "held", "ended"


@dataclass(frozen=True)
class LeaseRow:
    id: int
    uid: str
    candidates: tuple[str, ...]
    board: str | None
    holder: str
    purpose: str
    state: str
    requested_at: float
    granted_at: float | None
    heartbeat_at: float
    ended_at: float | None
    end_reason: str | None
    capture: str | None

    @classmethod
    def of(cls, row: Any) -> LeaseRow:
        values = dict(row._mapping)
        values["candidates"] = tuple(json.loads(values["candidates"]))
        return cls(**values)

    def as_json(self) -> dict[str, Any]:
        return {**self.__dict__, "candidates": list(self.candidates)}


@dataclass(frozen=True)
class Health:
    board: str
    failures: int
    quarantined_at: float | None
    reason: str | None
    updated_at: float

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@contextmanager
def changing(database: Database) -> Iterator[Connection]:
    """One transaction that decides about boards, alone (on PostgreSQL at READ COMMITTED, so that it sees what the
    transaction it waited for decided). ``info["waited_s"]``: how long it waited for the others."""
    asked = time.monotonic()
    try:
        with database.engine.connect() as connection:
            if database.backend == "postgresql":
                connection.execution_options(isolation_level="READ COMMITTED")
            with connection.begin():
                if database.backend == "postgresql":
                    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LEASE_LOCK})
                connection.info["waited_s"] = time.monotonic() - asked
                yield connection
    except SQLAlchemyError as exc:
        raise unreachable(database, exc) from None


@contextmanager
def reading(database: Database) -> Iterator[Connection]:
    """A transaction that only reads (SQLite begins it without its write lock)."""
    try:
        with database.engine.connect() as connection:
            connection.execution_options(**{READING: True})
            yield connection
    except SQLAlchemyError as exc:
        raise unreachable(database, exc) from None


def unreachable(database: Database, exc: BaseException) -> ResultsDatabaseError:
    return ResultsDatabaseError(f"the boards' leases in {database.describe()} cannot be read or written: "
                                f"{_first_line(exc)}", "check --db (or $ORCHESTRATE_DB) and that the server is up, or "
                                "run a lone board with --no-leases")


def now(connection: Connection) -> float:
    """The database's clock: the server's for PostgreSQL (hosts' clocks differ), this machine's for SQLite."""
    if connection.dialect.name == "postgresql":
        return float(connection.execute(text("SELECT extract(epoch FROM clock_timestamp())")).scalar_one())
    return time.time()


def clock(database: Database) -> float:
    with reading(database) as connection:
        return now(connection)


def ask(database: Database, uid: str, candidates: tuple[str, ...], holder: str, purpose: str) -> None:
    with changing(database) as connection:
        at = now(connection)
        connection.execute(insert(leases).values(
            uid=uid, candidates=json.dumps(list(candidates)), holder=holder, purpose=purpose, state=WAITING,
            requested_at=at, heartbeat_at=at))


def settle(database: Database, by: str) -> None:
    """End the requests and leases whose holders are gone (a lease whose capture runs stays: the capture's own
    end frees it, see ``capture_ended``), then grant the free boards in request order."""
    with changing(database) as connection:
        _settle(connection, now(connection), by)


def _settle(connection: Connection, at: float, by: str) -> None:
    rows = [LeaseRow.of(r) for r in connection.execute(select(leases).where(leases.c.state != ENDED))]
    # after a long wait for the others, heartbeats may have waited as long behind them: nobody is judged gone now
    reap = connection.info.get("waited_s", 0.0) < HEARTBEAT_S
    gone = [r for r in rows if reap and is_stale(r.heartbeat_at, at) and not (r.state == HELD and r.capture)]
    for row in gone:
        why = "abandoned while waiting" if row.state == WAITING else "its holder stopped answering"
        _end(connection, row.uid, why, at)
        if row.state == HELD and row.board:
            _event(connection, row.board, "holder-gone", f"{row.holder} ({row.purpose}): {why}", by, at)
    ended = {r.uid for r in gone}
    left = [r for r in rows if r.uid not in ended]
    quarantined = {h.board for h in _health(connection) if h.quarantined_at is not None}
    held = {r.board for r in left if r.state == HELD and r.board}
    waiting = [Waiting(r.id, r.candidates) for r in left if r.state == WAITING]
    for request_id, board in grants(waiting, held, quarantined).items():
        connection.execute(update(leases).where(and_(leases.c.id == request_id, leases.c.state == WAITING))
                           .values(state=HELD, board=board, granted_at=at, heartbeat_at=at))


def beat(database: Database, uid: str, capture: str | None) -> str | None:
    """Renew the lease (or the request), with the capture running under it (a note of it that failed is made
    good); its state, None once another process ended it."""
    with changing(database) as connection:
        connection.execute(update(leases).where(and_(leases.c.uid == uid, leases.c.state != ENDED))
                           .values(heartbeat_at=now(connection), capture=capture))
        state = connection.execute(select(leases.c.state).where(leases.c.uid == uid)).scalar_one_or_none()
    return None if state == ENDED else state


def retake(database: Database, uid: str, board: str) -> bool:
    """A lease ended under its holder (silent too long) held again, when nobody took its board meanwhile."""
    with changing(database) as connection:
        at = now(connection)
        taken = connection.execute(select(leases.c.uid).where(and_(
            leases.c.board == board, leases.c.state == HELD, leases.c.uid != uid))).first()
        if taken is not None:
            return False
        connection.execute(update(leases).where(leases.c.uid == uid).values(
            state=HELD, board=board, heartbeat_at=at, ended_at=None, end_reason=None))
        return True


def end(database: Database, uid: str, reason: str, by: str) -> None:
    """End the lease (or the request), and pass its board on to the next request at once."""
    with changing(database) as connection:
        at = now(connection)
        _end(connection, uid, reason, at)
        _settle(connection, at, by)


def capture_ended(database: Database, row: LeaseRow, by: str, detail: str) -> None:
    """A lease whose holder is gone, once the capture it ran has ended on the board: ended, unless its holder came
    back or it moved on meanwhile."""
    with changing(database) as connection:
        at = now(connection)
        ended = connection.execute(update(leases).where(and_(
            leases.c.uid == row.uid, leases.c.state == HELD, leases.c.capture == row.capture,
            leases.c.heartbeat_at == row.heartbeat_at, leases.c.heartbeat_at < at - STALE_S)).values(
            state=ENDED, ended_at=at, end_reason=f"its holder stopped answering; {detail}")).rowcount
        if ended and row.board:
            _event(connection, row.board, "holder-gone", f"{row.holder} ({row.purpose}): {detail}", by, at)
            _settle(connection, at, by)


def read(database: Database, uid: str) -> LeaseRow:
    return lease_rows(database, uid=uid)[0]


def lease_rows(database: Database, uid: str | None = None, active: bool = True) -> list[LeaseRow]:
    query = select(leases).order_by(leases.c.id)
    if uid is not None:
        query = query.where(leases.c.uid == uid)
    elif active:
        query = query.where(leases.c.state != ENDED)
    with reading(database) as connection:
        return [LeaseRow.of(r) for r in connection.execute(query)]


def record_health(database: Database, board: str, failure: str | None, by: str,
                  quarantine_after: int = QUARANTINE_AFTER) -> Health:
    """A run on ``board`` got past its connection and preflight (``failure`` None), or failed one of them: the
    board's failures in a row, quarantined at ``quarantine_after``."""
    with changing(database) as connection:
        at = now(connection)
        found = next(iter(_health(connection, board)), None)
        if failure is None and (found is None or not found.failures):  # in service, and stays so: nothing to write
            return found or Health(board, 0, None, None, at)
        failures = 0 if failure is None else (found.failures if found else 0) + 1
        quarantine = found.quarantined_at if found else None
        if failure is None:  # (after failures: none is written above)
            assert found is not None
            _event(connection, board, "recovered", f"a run got past its preflight after {found.failures} failures",
                   by, at)
        else:
            _event(connection, board, "failure", failure, by, at)
            if quarantine is None and failures >= quarantine_after:
                quarantine = at
                _event(connection, board, "quarantined", f"{failures} failures in a row; the last: {failure}", by, at)
        reason = failure if failure is not None else found.reason if found else None
        health = Health(board, failures, quarantine, reason, at)
        values = health.as_json()
        if found is None:
            connection.execute(insert(board_health).values(**values))
        else:
            connection.execute(update(board_health).where(board_health.c.board == board).values(**values))
        return health


def release(database: Database, board: str, by: str) -> Health | None:
    """Bring a quarantined board back into service, its failures forgotten; what was on record before (None when
    the board has no record)."""
    with changing(database) as connection:
        at = now(connection)
        found = next(iter(_health(connection, board)), None)
        if found is None:
            return None
        connection.execute(update(board_health).where(board_health.c.board == board).values(
            failures=0, quarantined_at=None, updated_at=at))
        _event(connection, board, "released", "back in service" + (f" (quarantined for: {found.reason})"
                                                                   if found.quarantined_at else ""), by, at)
        return found


def health_rows(database: Database, board: str | None = None) -> list[Health]:
    with reading(database) as connection:
        return _health(connection, board)


def events(database: Database, board: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    query = select(board_events).order_by(board_events.c.id.desc()).limit(limit)
    if board is not None:
        query = query.where(board_events.c.board == board)
    with reading(database) as connection:
        return [dict(r._mapping) for r in connection.execute(query)][::-1]


def _health(connection: Connection, board: str | None = None) -> list[Health]:
    query = select(board_health).order_by(board_health.c.board)
    if board is not None:
        query = query.where(board_health.c.board == board)
    return [Health(**dict(r._mapping)) for r in connection.execute(query)]


def _end(connection: Connection, uid: str, reason: str, at: float) -> None:
    connection.execute(update(leases).where(and_(leases.c.uid == uid, leases.c.state != ENDED)).values(
        state=ENDED, ended_at=at, end_reason=reason))


def _event(connection: Connection, board: str, kind: str, detail: str, by: str, at: float) -> None:
    connection.execute(insert(board_events).values(board=board, at=at, kind=kind, detail=detail[:2000], by=by))
