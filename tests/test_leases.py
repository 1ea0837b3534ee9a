"""The boards' leases and health in the results database, on both backends for real (SQLite files and a PostgreSQL
server of the session's own): request order, holders that die (with and without a capture running), quarantine and
release, and many processes asking for the same boards at once."""
from __future__ import annotations

import json
import multiprocessing
import threading
import time
from contextlib import ExitStack

import pytest
from conftest import write_inventory
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import update

from orchestrator.boards import ledger
from orchestrator.boards.lease import LeaseOptions, board_failure, hold
from orchestrator.boards.overview import board_of, overview
from orchestrator.boards.queue import HEARTBEAT_S, STALE_S, Waiting, board_key, grants
from orchestrator.database.connection import open_database
from orchestrator.database.schema import leases
from orchestrator.errors import (
    AppNotFoundError,
    AuthError,
    BoardBusyError,
    BoardQuarantinedError,
    ConnectError,
    ConnectionLostError,
    NsysMissingError,
    PreflightError,
    ResultsDatabaseError,
    UsageError,
)
from orchestrator.inventory.host import Host
from orchestrator.inventory.hosts import load_inventory


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "results.db")
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture
def database(db_url):
    opened = open_database(db_url)
    yield opened
    opened.close()


class Said:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def note(self, level: str, text: str) -> None:
        self.lines.append((level, text))


BOARDS = st.sampled_from(["a:22", "b:22", "c:22", "d:22"])


@given(st.lists(st.lists(BOARDS, min_size=1, max_size=3, unique=True), max_size=12),
       st.sets(BOARDS), st.sets(BOARDS))
def test_each_board_goes_to_the_oldest_request_that_can_take_it(wanted, held, quarantined):
    waiting = [Waiting(i, tuple(c)) for i, c in enumerate(wanted)]
    granted = grants(reversed(waiting), held, quarantined)  # the order rows come in does not matter
    assert len(set(granted.values())) == len(granted)  # a board to one request at most
    assert not set(granted.values()) & (held | quarantined)
    for request in waiting:
        free = [b for b in request.candidates if b not in held and b not in quarantined]
        # nobody younger took a board this request could have had; it has its first free choice otherwise
        younger = {granted[w.id] for w in waiting if w.id > request.id and w.id in granted}
        if request.id not in granted:
            assert set(free) <= {granted[w.id] for w in waiting if w.id < request.id and w.id in granted}
        else:
            assert granted[request.id] in free and not younger & set(free[:free.index(granted[request.id])])


def test_a_board_is_named_by_where_ssh_reaches_it_whatever_the_inventory_calls_it(tmp_path):
    assert board_key(Host("nano01", address="10.0.0.5", port=2222), "pc") == "10.0.0.5:2222"
    assert board_key(Host("Nano01.lab"), "pc") == "nano01.lab:22"
    assert board_key(Host("n", address="10.0.0.5", proxy_jump="bastion-b"), "pc") == "10.0.0.5:22 via bastion-b"
    assert board_key(Host("local", connection="local"), "pc") == "local:pc"
    written = write_inventory(tmp_path / "inventory.yaml", {"nano01": {"ansible_host": "10.0.0.5"}})
    inventory = load_inventory(str(written))
    assert board_of("nano01", inventory) == "10.0.0.5:22" and board_of("10.0.0.9:22", inventory) == "10.0.0.9:22"


def _age(database, uid: str, seconds: float) -> None:
    """The request's last heartbeat ``seconds`` ago, as a holder that stopped answering leaves it."""
    with database.engine.begin() as connection:
        connection.execute(update(leases).where(leases.c.uid == uid)
                           .values(heartbeat_at=ledger.now(connection) - seconds))


def test_leases_are_granted_in_request_order_and_a_gone_holder_frees_its_board(database):
    for uid, candidates in (("first", ("a",)), ("second", ("a", "b")), ("third", ("a",)), ("fourth", ("b",))):
        ledger.ask(database, uid, candidates, f"tester {uid}", "test")
    ledger.settle(database, "tester")
    state = {r.uid: (r.state, r.board) for r in ledger.lease_rows(database)}
    # first takes a; second wanted a too but takes b, its next choice, before fourth asked for b
    assert state == {"first": ("held", "a"), "second": ("held", "b"), "third": ("waiting", None),
                     "fourth": ("waiting", None)}
    ledger.end(database, "first", "done", "tester")
    assert ledger.read(database, "third").board == "a"  # the holder that ends passes the board on
    _age(database, "second", STALE_S + 1)  # its holder died
    ledger.settle(database, "tester")
    assert (ledger.read(database, "second").state, ledger.read(database, "second").end_reason) == (
        "ended", "its holder stopped answering")
    assert ledger.read(database, "fourth").board == "b"
    assert [(e["board"], e["kind"]) for e in ledger.events(database)] == [("b", "holder-gone")]
    _age(database, "third", 3.0)
    assert ledger.beat(database, "third", None) == "held"  # a beat renews it
    assert ledger.lease_rows(database, uid="third")[0].heartbeat_at > time.time() - 2 - (
        0 if database.backend == "sqlite" else 60)  # (PostgreSQL's clock: the server's)


def test_a_lease_whose_holder_died_mid_capture_ends_with_the_capture_not_before(database):
    ledger.ask(database, "holder", ("a",), "tester 1", "profile app")
    ledger.ask(database, "waiter", ("a",), "tester 2", "profile app")
    ledger.settle(database, "tester")
    ledger.beat(database, "holder", "/work/runs/r1")  # the holder names its capture
    _age(database, "holder", STALE_S + 5)
    ledger.settle(database, "tester")
    [gone] = [r for r in ledger.lease_rows(database) if r.uid == "holder"]
    assert (gone.state, gone.capture) == ("held", "/work/runs/r1")  # its capture may still run: kept
    assert ledger.read(database, "waiter").state == "waiting"
    assert overview(database).held[0]["gone"] is True
    ledger.beat(database, "holder", "/work/runs/r1")  # it came back meanwhile: the board's answer is for an older state
    ledger.capture_ended(database, gone, "tester 2", "its capture ended on the board")
    assert ledger.read(database, "holder").state == "held"
    _age(database, "holder", STALE_S + 5)
    [gone] = [r for r in ledger.lease_rows(database) if r.uid == "holder"]
    ledger.capture_ended(database, gone, "tester 2", "its capture ended on the board")
    ledger.settle(database, "tester")
    assert ledger.read(database, "holder").end_reason == "its holder stopped answering; its capture ended on the board"
    assert ledger.read(database, "waiter").board == "a"


def test_three_failures_in_a_row_quarantine_a_board_and_release_brings_it_back(database):
    assert ledger.record_health(database, "a:1", "refused", "t").failures == 1
    assert ledger.record_health(database, "a:1", None, "t").failures == 0  # a run got through: the streak ends
    for n in (1, 2):
        assert ledger.record_health(database, "a:1", f"refused {n}", "t").quarantined_at is None
    quarantined = ledger.record_health(database, "a:1", "refused 3", "t")
    assert quarantined.failures == 3 and quarantined.quarantined_at is not None and quarantined.reason == "refused 3"
    ledger.ask(database, "w", ("a:1", "b:1"), "t", "test")
    ledger.settle(database, "t")
    assert ledger.read(database, "w").board == "b:1"  # never the quarantined one
    with pytest.raises(BoardQuarantinedError) as caught:
        with hold(LeaseOptions(database.url), [Host("a", address="a", port=1)], "test", Said()):
            pass
    assert caught.value.exit_code == 25
    assert caught.value.message.startswith("a:1 quarantined (since ") and caught.value.message.endswith(": refused 3)")
    # the database it is quarantined in, without a password
    assert caught.value.hint == f"mend the board, then 'orchestrate boards release a:1 --db {database.describe()}'"
    assert ledger.release(database, "a:1", "t").quarantined_at is not None  # what it was
    assert [(h.failures, h.quarantined_at) for h in ledger.health_rows(database, "a:1")] == [(0, None)]
    assert [e["kind"] for e in ledger.events(database, "a:1")] == [
        "failure", "recovered", "failure", "failure", "failure", "quarantined", "released"]
    assert ledger.release(database, "nowhere", "t") is None


HOSTS = [Host(name, address=name, port=1) for name in ("b1", "b2", "b3")]


def test_holding_takes_the_first_free_board_and_ends_the_lease(database):
    said = Said()
    options = LeaseOptions(database.url)
    granted: list[str] = []
    with ExitStack() as stack:
        first = stack.enter_context(hold(options, HOSTS[:1], "profile one", said))
        second = stack.enter_context(hold(options, HOSTS, "profile any", said, granted=lambda: granted.append("2")))
        assert (first.host.name, first.board, second.host.name, second.board) == ("b1", "b1:1", "b2", "b2:1")
        assert granted == ["2"]  # b1 is held: b2
        held = {r["board"]: r["purpose"] for r in overview(database).held}
        assert held == {"b1:1": "profile one", "b2:1": "profile any"}
        assert overview(database, "b1:1").held[0]["purpose"] == "profile one" and len(overview(database, "b1:1")
                                                                                       .held) == 1
    assert overview(database).held == [] and {r.end_reason for r in ledger.lease_rows(database, active=False)} == {
        "done"}
    with hold(LeaseOptions(enabled=False), HOSTS[2:], "profile", said) as lone:  # no database at all
        assert (lone.host.name, lone.board) == ("b3", None)


def _preflight_error(kind, code: str):
    error = kind(f"preflight: {code}", "fix it")
    error.finding = code
    return error


def test_what_counts_against_a_board_is_what_says_something_of_the_board():
    assert board_failure(ConnectError("refused")) and board_failure(ConnectionLostError("lost"))
    assert board_failure(_preflight_error(NsysMissingError, "nsys_missing"))
    assert board_failure(_preflight_error(PreflightError, "perf_event_paranoid"))
    # the request's own mistakes: the app, its folder, a power mode the board has not, a password
    assert not board_failure(_preflight_error(AppNotFoundError, "app_not_found"))
    assert not board_failure(_preflight_error(PreflightError, "workdir_missing"))
    assert not board_failure(_preflight_error(PreflightError, "power_mode_unknown"))
    assert not board_failure(AuthError("refused our key")) and not board_failure(UsageError("bad option"))


def test_each_run_s_preflight_counts_and_a_quarantine_is_said_with_its_release(database):
    """A study's runs each tell the lease (a study catches its runs' errors): three that fail preflight on the
    board quarantine it, whatever the study's own ending; one raised again at the block's end counts once."""
    said = Said()
    options = LeaseOptions(database.url, quarantine_after=3)
    with hold(options, HOSTS[2:], "study", said) as lease:
        lease.checked(_preflight_error(NsysMissingError, "nsys_missing"))
        lease.checked(None)  # a run got through: the streak ends
        for _ in range(2):
            lease.checked(_preflight_error(NsysMissingError, "nsys_missing"))
        lease.checked(_preflight_error(AppNotFoundError, "app_not_found"))  # the request's: nothing said
    assert [(h.board, h.failures, h.quarantined_at) for h in ledger.health_rows(database)] == [("b3:1", 2, None)]
    lost = ConnectError("b3: connection refused", "is its sshd up?")
    with pytest.raises(ConnectError):
        with hold(options, HOSTS[2:], "profile", said) as lease:
            lease.checked(lost)  # the run told it, then raised it
            raise lost
    [health] = ledger.health_rows(database)
    assert health.failures == 3 and health.quarantined_at is not None and health.reason == lost.one_line()
    assert said.lines[-1] == ("warning", f"b3:1 is quarantined after 3 failures in a row; 'orchestrate boards release "
                                         f"b3:1 --db {database.describe()}' brings it back")
    with pytest.raises(UsageError):  # says nothing of the board
        with hold(options, HOSTS[:1], "profile", said):
            raise UsageError("bad option")
    assert [h.board for h in ledger.health_rows(database)] == ["b3:1"]


def test_a_capture_is_named_before_it_begins_and_a_lapsed_lease_is_taken_again_or_refused(database):
    options = LeaseOptions(database.url)
    with hold(options, HOSTS[:1], "study", Said()) as lease:
        lease.capturing("/work/runs/r1")
        assert ledger.read(database, lease.uid).capture == "/work/runs/r1"
        with database.engine.begin() as connection:  # a note that failed: the next beat makes it good
            connection.execute(update(leases).where(leases.c.uid == lease.uid).values(capture=None))
        assert ledger.beat(database, lease.uid, lease.capture) == "held"
        assert ledger.read(database, lease.uid).capture == "/work/runs/r1"
        lease.capturing(None)
        # asleep too long: another process's settle ended the lease
        _age(database, lease.uid, STALE_S + 1)
        ledger.settle(database, "other")
        assert ledger.beat(database, lease.uid, None) is None
        lease.lost.set()
        lease.capturing("/work/runs/r2")  # nobody took b1: held again
        assert (ledger.read(database, lease.uid).state, lease.lost.is_set()) == ("held", False)
        lease.capturing(None)
        _age(database, lease.uid, STALE_S + 1)
        ledger.settle(database, "other")
        lease.lost.set()
        with hold(options, HOSTS[:1], "another job", Said()):
            with pytest.raises(BoardBusyError) as caught:
                lease.capturing("/work/runs/r3")
    assert "lapsed while this process was silent" in caught.value.message


def test_nobody_is_judged_gone_by_a_process_that_waited_long_for_the_others(database):
    """Another process holds the ledger for longer than a heartbeat (a busy SQLite file): the heartbeats waited as
    long behind it, so the settle that waited judges nobody gone."""
    ledger.ask(database, "sleepy", ("a",), "t", "test")
    _age(database, "sleepy", STALE_S + 1)
    entered = threading.Event()

    def busy() -> None:
        with ledger.changing(database):
            entered.set()
            time.sleep(HEARTBEAT_S + 1)
    other = threading.Thread(target=busy)
    other.start()
    entered.wait(30)
    ledger.settle(database, "t")
    other.join()
    row = ledger.read(database, "sleepy")
    assert (row.state, row.end_reason) == ("held", None)  # granted, not ended as abandoned
    _age(database, "sleepy", STALE_S + 1)
    ledger.settle(database, "t")  # no wait: gone
    assert ledger.read(database, "sleepy").end_reason == "its holder stopped answering"


def test_a_waiter_says_who_holds_the_board_and_gets_it_when_it_is_free(database):
    said = Said()
    options = LeaseOptions(database.url)
    order: list[str] = []
    with hold(options, HOSTS[:1], "study codecs", Said()):
        def wait() -> None:
            with hold(options, HOSTS[:1], "profile later", said):
                order.append("waiter")
        waiter = threading.Thread(target=wait)
        waiter.start()
        deadline = time.monotonic() + 30
        while not said.lines and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)
        order.append("holder")
    waiter.join(60)
    assert order == ["holder", "waiter"]
    assert said.lines[0][1].startswith("waiting for a board: b1:1 held by ") and "(study codecs) since " in \
        said.lines[0][1]
    assert said.lines[-1] == ("info", "took b1:1")


def test_an_unreachable_database_is_one_line_that_names_no_leases(tmp_path):
    with pytest.raises(ResultsDatabaseError) as caught:
        with hold(LeaseOptions("postgresql://nobody@127.0.0.1:1/none"), HOSTS, "profile", Said()):
            pass
    line = caught.value.one_line()
    assert "(the boards' leases live there)" in line and line.endswith("or run a lone board without leases: "
                                                                       "--no-leases)")
    assert "\n" not in line


def _hold_and_log(url: str, index: int, log: str) -> None:
    with hold(LeaseOptions(url), HOSTS[:1], f"process {index}", Said()):
        with open(log, "a") as stream:
            stream.write(f"{index} in {time.time()}\n")
        time.sleep(0.1)
        with open(log, "a") as stream:
            stream.write(f"{index} out {time.time()}\n")


def test_processes_asking_at_once_hold_the_board_one_at_a_time_in_the_order_they_asked(database, tmp_path):
    log = tmp_path / "holders.log"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_hold_and_log, args=(database.url, i, str(log))) for i in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [w.exitcode for w in workers] == [0] * 6
    lines = [line.split() for line in log.read_text().splitlines()]
    assert [kind for _, kind, _ in lines] == ["in", "out"] * 6  # never two inside at once
    assert [a[0] for a in lines[::2]] == [b[0] for b in lines[1::2]]
    rows = ledger.lease_rows(database, active=False)
    assert len(rows) == 6 and {r.end_reason for r in rows} == {"done"}
    by_grant = sorted(rows, key=lambda r: r.granted_at or 0)
    assert [r.id for r in by_grant] == sorted(r.id for r in rows)  # granted in request order
    assert [r.purpose for r in by_grant] == [f"process {i}" for i, *_ in lines[::2]]


def test_boards_names_each_board_by_its_inventory_hosts(database, tmp_path, capsys, monkeypatch):
    from orchestrator.cli.main import main
    monkeypatch.setenv("COLUMNS", "250")  # the tables' cells unwrapped
    written = write_inventory(tmp_path / "inventory.yaml", {"nano01": {"ansible_host": "10.0.0.5"},
                                                            "nano02": {"ansible_host": "10.0.0.6"}})
    inventory = load_inventory(str(written))
    ledger.ask(database, "holder", ("10.0.0.5:22",), "ci@runner-3 pid 4121", "ci job 1a2b")
    ledger.ask(database, "other", ("10.0.0.7:22",), "lab@pc pid 9", "study codecs")
    ledger.ask(database, "waiter", ("10.0.0.5:22", "10.0.0.7:22"), "me@pc pid 7", "profile es2gears")
    ledger.settle(database, "t")
    shown = overview(database, inventory=inventory)
    assert shown.hosts == {"10.0.0.5:22": ["nano01"]}  # the boards shown that the inventory names (not nano02)
    assert [(r["board"], r["purpose"]) for r in shown.held] == [("10.0.0.5:22", "ci job 1a2b"),
                                                                ("10.0.0.7:22", "study codecs")]
    assert [(r["candidates"], r["ahead"]) for r in shown.waiting] == [(["10.0.0.5:22", "10.0.0.7:22"],
                                                                        {"10.0.0.5:22": 0, "10.0.0.7:22": 0})]
    assert main(["boards", "--db", database.url, "--inventory", str(written)]) == 0
    out = capsys.readouterr().out
    assert "nano01 (10.0.0.5:22)" in out and "ci@runner-3 pid 4121" in out and "10.0.0.7:22" in out
    assert main(["boards", "--db", database.url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hosts"] == {}  # without an inventory: the boards' own names
