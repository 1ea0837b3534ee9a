"""Holding a board: ``hold`` asks for one of the hosts' boards, waits its turn (saying who holds the board and how
many wait before it), renews the lease from a thread of its own while the caller runs, records whether the board
got past its connection and preflight, and ends the lease when the caller is done.

A holder that dies stops renewing; its lease ends STALE_S later, unless a capture runs under it: then the first
waiter asks the board, every CHECK_S, whether its capture lock is still held, and the lease ends with the capture.
"""
from __future__ import annotations

import getpass
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ..database.connection import Database, open_database
from ..errors import (
                      BoardBusyError,
                      BoardQuarantinedError,
                      ConnectError,
                      ConnectionLostError,
                      HostKeyError,
                      InterruptedRunError,
                      OrchestratorError,
                      ResultsDatabaseError,
)
from ..inventory.host import Host
from ..targets.settings import ConnectOptions
from . import ledger
from .board_check import ENDED, UNKNOWN, capture_state
from .queue import HEARTBEAT_S, QUARANTINE_AFTER, STALE_S, Waiting, board_key, is_stale, queue_ahead

LOOK_S = 0.25   # how often a waiting request looks whether it was granted (a read: the one that ends a lease grants)
POLL_S = 1.0    # how often it grants the free boards itself (a holder that is gone grants nothing)
CHECK_S = 3.0   # how often the first waiter for a board asks it whether a gone holder's capture still runs
# a gone holder's board that cannot say whether its capture runs (it does not answer) stays held this long
UNKNOWN_CAP_S = 900.0
# what a run's failure says of its board (not of the request: a wrong command, a power mode it has not): its
# connection, or these preflight findings
BOARD_ERRORS = (ConnectError, HostKeyError, ConnectionLostError)
BOARD_FINDINGS = frozenset({"perf_event_paranoid", "nsys_missing", "nsys_too_old", "no_display", "low_disk"})


def board_failure(error: BaseException) -> bool:
    """Whether a run's error counts against its board: it could not reach it, lost it, or found it unfit."""
    return isinstance(error, BOARD_ERRORS) or getattr(error, "finding", None) in BOARD_FINDINGS


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
    """The board a caller holds (``host``), and what its runs tell the ledger of it: the capture running under it
    (``capturing``) and whether the board got past each run's connection and preflight (``checked``)."""

    def __init__(self, host: Host, board: str | None, database: Database | None = None, uid: str = "",
                 options: LeaseOptions | None = None, view: LeaseView | None = None) -> None:
        self.host, self.board, self.database, self.uid = host, board, database, uid
        self.options, self.view = options or LeaseOptions(), view
        self.holder = holder_name()
        self.capture: str | None = None  # the board's folder of the capture running under it, if one does
        self.error: BaseException | None = None  # what the work ended with, when it did not raise it
        self.lost = threading.Event()  # the ledger ended the lease while this process was silent too long
        self._told: list[BaseException] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def capturing(self, capture: str | None) -> None:
        """A capture is about to run under the lease in the board's folder ``capture`` (None: it ended, or never
        began). A lease lost meanwhile is taken again when nobody took the board, else the capture is refused."""
        if capture is not None and self.lost.is_set() and self.database is not None and self.board is not None:
            if not ledger.retake(self.database, self.uid, self.board):
                raise BoardBusyError(f"the lease on {self.board} lapsed while this process was silent for more than "
                                     f"{STALE_S:g} s, and another run holds the board now", "run it again")
            self.lost.clear()
        self.capture = capture
        if self.database is not None:
            try:
                ledger.beat(self.database, self.uid, capture)
            except ResultsDatabaseError:
                pass  # the next heartbeat writes it

    def checked(self, error: OrchestratorError | None) -> None:
        """A run got past the board's connection and preflight (None), or ended with ``error``: a failure in a row
        when it says something of the board (``board_failure``), nothing otherwise."""
        self._record(error)

    def ended_with(self, error: BaseException | None) -> None:
        """The work ended with ``error``, which the caller keeps as its result instead of raising it: the board's
        health counts it as it would a raised one."""
        self.error = error

    def _record(self, error: BaseException | None) -> None:
        if self.database is None or self.board is None:
            return
        if error is not None and (not board_failure(error) or any(error is told for told in self._told)):
            return
        if error is not None:
            self._told.append(error)
        # a board's failure is orchestrate's own error (board_failure): its one line
        failure = error.one_line() if isinstance(error, OrchestratorError) else None
        try:
            health = ledger.record_health(self.database, self.board, failure, self.holder,
                                          self.options.quarantine_after)
        except ResultsDatabaseError as exc:
            self._note("warning", f"{exc.one_line()}: the board's health was not recorded")
            return
        if failure is not None and health.quarantined_at is not None and \
                health.failures == self.options.quarantine_after:
            self._note("warning", f"{self.board} is quarantined after {health.failures} failures in a row; "
                                  f"{release_command(self.board, self.database, self.options)} brings it back")

    def _note(self, level: str, text: str) -> None:
        if self.view is not None:
            self.view.note(level, text)

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                if self.database is not None and ledger.beat(self.database, self.uid, self.capture) is None \
                        and self.board is not None and not self.lost.is_set():  # (a request: asked again)
                    self.lost.set()
                    self._note("warning", f"the lease on {self.board} lapsed while this process was silent too "
                                          "long; it is taken again before the next capture if the board is free")
            except Exception:  # noqa: BLE001 (a database down for a moment: the next beat tries again)
                continue

    def start(self) -> None:
        self._thread = threading.Thread(target=self._beat, daemon=True, name="lease-heartbeat")
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(HEARTBEAT_S)  # a beat stuck on the database is left to end with the process


def release_command(board: str, database: Database, options: LeaseOptions) -> str:
    """The command that releases ``board`` from this database (its URL without a password)."""
    return f"'orchestrate boards release {board}" + (f" --db {database.describe()}'" if options.database else "'")


@contextmanager
def hold(options: LeaseOptions, hosts: Sequence[Host], purpose: str, view: LeaseView,
         connect: ConnectOptions | None = None, stop: Stopping | None = None,
         granted: Callable[[], None] | None = None) -> Iterator[Lease]:
    """The first free, unquarantined board of ``hosts`` (in their order), held until the block ends (``granted``
    is called once it is). Without leases, the first host."""
    if not hosts:
        raise ValueError("a lease needs at least one host")
    if not options.enabled:
        if granted is not None:
            granted()
        yield Lease(hosts[0], None)
        return
    database = _open(options.database)
    machine = socket.gethostname()
    by_key = {board_key(h, machine): h for h in hosts}
    lease = Lease(hosts[0], None, database, uuid.uuid4().hex, options, view)
    try:
        candidates = _in_service(database, tuple(by_key), options)
        ledger.ask(database, lease.uid, candidates, lease.holder, purpose)
        lease.start()
        row = _wait_turn(database, lease, by_key, view, connect or ConnectOptions(), stop, options)
        assert row.board is not None
        lease.host, lease.board = by_key[row.board], row.board
        if granted is not None:
            granted()
        try:
            yield lease
        except BaseException as exc:  # a board's failure the runs did not tell already counts (a study's connect)
            lease._record(exc)
            raise
        if lease.error is not None:  # successes are the runs' to tell (``checked``): a study catches its failures
            lease._record(lease.error)
    finally:
        lease.close()
        if lease.capture is not None:  # left running on the board (a second Ctrl-C)
            view.note("info", f"{lease.board} stays held until its capture ends there")
        else:
            try:  # the request's uid as it is now: one that waited too long asked again under another
                ledger.end(database, lease.uid, "done", lease.holder)
            except ResultsDatabaseError as exc:
                view.note("warning", f"{exc.one_line()}: the lease ends when its heartbeat stops")
        database.close()


def _open(given: str | None) -> Database:
    try:
        return open_database(given)
    except ResultsDatabaseError as exc:
        raise ResultsDatabaseError(f"{exc.message} (the boards' leases live there)",
                                   f"{exc.hint}; or run a lone board without leases: --no-leases") from None


def _in_service(database: Database, keys: tuple[str, ...], options: LeaseOptions) -> tuple[str, ...]:
    quarantined = {h.board: h for h in ledger.health_rows(database) if h.quarantined_at is not None}
    free = tuple(k for k in keys if k not in quarantined)
    if not free:
        first = quarantined[keys[0]]
        since = datetime.fromtimestamp(first.quarantined_at or 0).strftime("%Y-%m-%d %H:%M")
        many = f" and the {len(keys) - 1} other boards it could take" if len(keys) > 1 else ""
        raise BoardQuarantinedError(f"{keys[0]}{many} quarantined (since {since}: {first.reason})",
                                    f"mend the board, then {release_command(keys[0], database, options)}")
    return free


def _wait_turn(database: Database, lease: Lease, by_key: dict[str, Host], view: LeaseView, connect: ConnectOptions,
               stop: Stopping | None, options: LeaseOptions) -> ledger.LeaseRow:
    said, settled, checked = "", -POLL_S, -CHECK_S
    while True:
        started = time.monotonic()
        if started - settled >= POLL_S:
            ledger.settle(database, lease.holder)
            settled = started
        rows = ledger.lease_rows(database)
        own = next((r for r in rows if r.uid == lease.uid), None) or ledger.read(database, lease.uid)
        if own.state == ledger.HELD:
            if said:
                view.note("info", f"took {own.board}")
            return own
        if own.state == ledger.ENDED:  # this process was silent too long (a laptop asleep): in the queue again
            lease.uid = uuid.uuid4().hex
            ledger.ask(database, lease.uid, own.candidates, lease.holder, own.purpose)
            view.note("warning", "this request waited silent too long and lost its place; it asked again")
            continue
        waiting = [Waiting(r.id, r.candidates) for r in rows if r.state == ledger.WAITING]
        text = _waiting_text(own, rows, waiting)
        if text != said:
            view.note("info", text)
            said = text
        if started - checked >= CHECK_S:
            checked = started
            _in_service(database, own.candidates, options)  # every board it could take quarantined meanwhile
            _free_ended_captures(database, rows, waiting, own, by_key, connect, lease.holder)
        if stop is not None and stop.interrupt.wait(LOOK_S):
            raise InterruptedRunError(f"interrupted while waiting for {', '.join(own.candidates)}",
                                      "nothing ran; the board was not taken")
        if stop is None:
            time.sleep(LOOK_S)


def _waiting_text(own: ledger.LeaseRow, rows: list[ledger.LeaseRow], waiting: list[Waiting]) -> str:
    parts = []
    for board in own.candidates:
        holding = next((r for r in rows if r.state == ledger.HELD and r.board == board), None)
        who = f"held by {holding.holder} ({holding.purpose}) since " \
              f"{datetime.fromtimestamp(holding.granted_at or 0).strftime('%H:%M:%S')}" if holding else "free"
        ahead = queue_ahead(waiting, Waiting(own.id, own.candidates), board)
        parts.append(f"{board} {who}, {ahead} before this one" if ahead else f"{board} {who}")
    return "waiting for a board: " + "; ".join(parts)


def _free_ended_captures(database: Database, rows: list[ledger.LeaseRow], waiting: list[Waiting],
                         own: ledger.LeaseRow, by_key: dict[str, Host], connect: ConnectOptions, holder: str) -> None:
    """The leases of the boards this request is first in the queue for whose holders are gone while a capture ran:
    ended once the board says that capture has ended (or has not answered for UNKNOWN_CAP_S)."""
    at = ledger.clock(database)
    for row in rows:
        if row.state != ledger.HELD or row.board not in own.candidates or not row.capture:
            continue
        if not is_stale(row.heartbeat_at, at) or queue_ahead(waiting, Waiting(own.id, own.candidates), row.board):
            continue  # its holder lives, or an older waiter asks the board
        state, detail = capture_state(by_key[row.board], row.capture, connect)
        if state == ENDED or (state == UNKNOWN and at - row.heartbeat_at > UNKNOWN_CAP_S):
            ledger.capture_ended(database, row, holder, detail)
