"""Holding a board: ``hold`` asks for one of the hosts' boards, waits its turn (saying who holds the board and how
many wait before it), renews the lease from a thread of its own while the caller runs, records whether the board
got past its connection and preflight, and ends the lease when the caller is done.

A holder that dies stops renewing; its lease ends STALE_S later, unless a capture runs under it: then a waiter
asks the board, every CHECK_S, whether that capture's supervisor still runs, and the lease ends with the capture.
"""
from __future__ import annotations

import getpass
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ..database.connection import Database, open_database
from ..errors import (
                      BoardQuarantinedError,
                      ConnectError,
                      ConnectionLostError,
                      HostKeyError,
                      InterruptedRunError,
                      OrchestratorError,
                      PreflightError,
                      ResultsDatabaseError,
)
from ..inventory.host import Host
from ..targets.settings import ConnectOptions
from . import ledger
from .board_check import capture_running
from .queue import HEARTBEAT_S, QUARANTINE_AFTER, Waiting, board_key, is_stale, queue_ahead

LOOK_S = 0.25   # how often a waiting request looks whether it was granted (a read: the one that ends a lease grants)
POLL_S = 1.0    # how often it grants the free boards itself (a holder that is gone grants nothing)
CHECK_S = 3.0   # how often a waiter asks a board whether the capture of a holder that is gone still runs
# a run that failed with one of these never got past the board's connection or preflight: a failure in a row
BOARD_FAILURES = (ConnectError, HostKeyError, ConnectionLostError, PreflightError)


class LeaseView(Protocol):
    def note(self, level: str, text: str) -> None: ...


class Stopping(Protocol):
    interrupt: threading.Event


@dataclass(frozen=True)
class LeaseOptions:
    """The command line's lease options: the database they live in, none at all, and when to quarantine."""
    database: str | None = None
    enabled: bool = True
    quarantine_after: int = QUARANTINE_AFTER


def holder_name() -> str:
    return f"{getpass.getuser()}@{socket.gethostname()} pid {os.getpid()}"


class Lease:
    """The board a caller holds (``host``), and what it tells the ledger of it while it runs."""

    def __init__(self, host: Host, board: str | None, database: Database | None = None, uid: str = "") -> None:
        self.host, self.board, self.database, self.uid = host, board, database, uid
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost: str | None = None  # why the lease ended under its holder (the ledger ended it), if it did
        self.capture: str | None = None  # the board's folder of the capture running under it, if one does
        self.error: BaseException | None = None  # what the holder's work ended with, when it did not raise it

    def ended_with(self, error: BaseException | None) -> None:
        """The work ended with ``error``, which the caller keeps as its result instead of raising it: the board's
        health counts it as it would a raised one."""
        self.error = error

    def capturing(self, capture: str | None) -> None:
        """A capture runs under the lease in the board's folder ``capture`` (None: it ended and came back)."""
        self.capture = capture
        if self.database is not None:
            try:
                ledger.note_capture(self.database, self.uid, capture)
            except ResultsDatabaseError:
                pass  # the capture goes on: a database down for a moment costs only the lease's knowing of it

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                if self.database is not None and ledger.beat(self.database, self.uid) is None:
                    self.lost = "the lease was ended by another process (this one was silent too long)"
            except ResultsDatabaseError:
                pass  # a database that is down for a moment: the next beat tries again

    def start(self) -> None:
        self._thread = threading.Thread(target=self._beat, daemon=True, name="lease-heartbeat")
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


@contextmanager
def hold(options: LeaseOptions, hosts: Sequence[Host], purpose: str, view: LeaseView,
         connect: ConnectOptions | None = None, stop: Stopping | None = None) -> Iterator[Lease]:
    """The first free, unquarantined board of ``hosts`` (in their order), held until the block ends. Without
    leases, the first host."""
    if not hosts:
        raise ValueError("a lease needs at least one host")
    if not options.enabled:
        yield Lease(hosts[0], None)
        return
    database = _open(options.database)
    machine = socket.gethostname()
    by_key = {board_key(h, machine): h for h in hosts}
    uid, holder = uuid.uuid4().hex, holder_name()
    lease: Lease | None = None
    try:
        candidates = _in_service(database, tuple(by_key))
        ledger.ask(database, uid, candidates, holder, purpose)
        lease = Lease(hosts[0], None, database, uid)
        lease.start()
        row = _wait_turn(database, uid, by_key, view, connect or ConnectOptions(), stop)
        assert row.board is not None
        lease.host, lease.board = by_key[row.board], row.board
        try:
            yield lease
        except BaseException as exc:
            _record(database, lease.board, exc, holder, options.quarantine_after, view)
            raise
        _record(database, lease.board, lease.error, holder, options.quarantine_after, view)
    finally:
        if lease is not None:
            lease.close()
        if lease is not None and lease.capture is not None:  # left running on the board (a second Ctrl-C)
            view.note("info", f"{lease.board} stays held until its capture ends there")
        else:
            try:
                ledger.end(database, uid, "done", holder)
            except ResultsDatabaseError as exc:
                view.note("warning", f"{exc.one_line()}: the lease ends when its heartbeat stops")
        database.close()


def _open(given: str | None) -> Database:
    try:
        return open_database(given)
    except ResultsDatabaseError as exc:
        raise ResultsDatabaseError(f"{exc.message} (the boards' leases live there)",
                                   f"{exc.hint}; or run a lone board without leases: --no-leases") from None


def _in_service(database: Database, keys: tuple[str, ...]) -> tuple[str, ...]:
    quarantined = {h.board: h for h in ledger.health_rows(database) if h.quarantined_at is not None}
    free = tuple(k for k in keys if k not in quarantined)
    if not free:
        first = quarantined[keys[0]]
        since = datetime.fromtimestamp(first.quarantined_at or 0).strftime("%Y-%m-%d %H:%M")
        many = f" and the {len(keys) - 1} other boards it could take" if len(keys) > 1 else ""
        raise BoardQuarantinedError(f"{keys[0]}{many} quarantined (since {since}: {first.reason})",
                                    f"mend the board, then 'orchestrate boards release {keys[0]}'")
    return free


def _wait_turn(database: Database, uid: str, by_key: dict[str, Host], view: LeaseView, connect: ConnectOptions,
               stop: Stopping | None) -> ledger.LeaseRow:
    said, settled, checked = "", -POLL_S, -CHECK_S
    holder = holder_name()
    while True:
        started = time.monotonic()
        if started - settled >= POLL_S:
            ledger.settle(database, holder)
            settled = started
        rows = ledger.lease_rows(database)
        own = next((r for r in rows if r.uid == uid), None) or ledger.read(database, uid)
        if own.state == ledger.HELD:
            if said:
                view.note("info", f"took {own.board}")
            return own
        if own.state == ledger.ENDED:
            raise ResultsDatabaseError(f"the request for {', '.join(own.candidates)} was ended: {own.end_reason}",
                                       "this process was silent too long; try again")
        text = _waiting_text(own, rows)
        if text != said:
            view.note("info", text)
            said = text
        if started - checked >= CHECK_S:
            checked = started
            _in_service(database, own.candidates)  # every board it could take quarantined meanwhile: say so
            _free_ended_captures(database, rows, own, by_key, connect, holder)
        if stop is not None and stop.interrupt.wait(LOOK_S):
            raise InterruptedRunError(f"interrupted while waiting for {', '.join(own.candidates)}",
                                      "nothing ran; the board was not taken")
        if stop is None:
            time.sleep(LOOK_S)


def _waiting_text(own: ledger.LeaseRow, rows: list[ledger.LeaseRow]) -> str:
    waiting = [Waiting(r.id, r.candidates) for r in rows if r.state == ledger.WAITING]
    parts = []
    for board in own.candidates:
        holding = next((r for r in rows if r.state == ledger.HELD and r.board == board), None)
        who = f"held by {holding.holder} ({holding.purpose}) since " \
              f"{datetime.fromtimestamp(holding.granted_at or 0).strftime('%H:%M:%S')}" if holding else "free"
        ahead = queue_ahead(waiting, Waiting(own.id, own.candidates), board)
        parts.append(f"{board} {who}, {ahead} before this one" if ahead else f"{board} {who}")
    return "waiting for a board: " + "; ".join(parts)


def _free_ended_captures(database: Database, rows: list[ledger.LeaseRow], own: ledger.LeaseRow,
                         by_key: dict[str, Host], connect: ConnectOptions, holder: str) -> None:
    """The leases of the boards this request waits for whose holders are gone while a capture ran: ended once the
    board says that capture's supervisor has ended."""
    at = ledger.clock(database)
    for row in rows:
        if row.state != ledger.HELD or row.board not in own.candidates or not row.capture:
            continue
        if not is_stale(row.heartbeat_at, at):
            continue
        running, detail = capture_running(by_key[row.board], row.capture, connect)
        if not running:
            ledger.capture_ended(database, row, holder, detail)


def _record(database: Database, board: str, exc: BaseException | None, holder: str, quarantine_after: int,
            view: LeaseView) -> None:
    """Whether the run got past the board's connection and preflight: a failure in a row, or the streak reset.
    A run that ended otherwise (interrupted, a usage error) says nothing of the board."""
    if exc is not None and not isinstance(exc, BOARD_FAILURES):
        if not isinstance(exc, OrchestratorError) or exc.exit_code < 9 or exc.exit_code in (16, 18):
            return
    failure = None if exc is None or not isinstance(exc, BOARD_FAILURES) else exc.one_line()
    try:
        health = ledger.record_health(database, board, failure, holder, quarantine_after)
    except ResultsDatabaseError as exc_db:
        view.note("warning", f"{exc_db.one_line()}: the board's health was not recorded")
        return
    if failure is not None and health.quarantined_at is not None and health.failures == quarantine_after:
        view.note("warning", f"{board} is quarantined after {health.failures} failures in a row; 'orchestrate "
                             f"boards release {board}' brings it back")
