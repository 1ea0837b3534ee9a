"""Boards shared by a team, for real: six boards that are machines of their own (each sshd in its own namespaces,
its own capture lock), four fleets at once over them (two `orchestrate fleet`, two ansible-playbook runs of the
orchestrate.jetson collection) sharing one results database's leases; a holder SIGKILLed in the middle of a real
nsys capture; a board that keeps dying, quarantined and released; --any over a pattern (on PostgreSQL). When each
capture ran is the board's own record of it (its supervisor's, kept in run.json)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml
from board_state import assert_board_clean
from conftest import REPO, profiled_run, run_cli
from scenarios import start_cli
from sshd_server import descendants, make_sshd

from orchestrator.boards import ledger
from orchestrator.boards.lease import LeaseOptions, hold
from orchestrator.boards.queue import STALE_S, board_key
from orchestrator.database.connection import default_location, open_database
from orchestrator.inventory.hosts import load_inventory

pytestmark = [pytest.mark.integration, pytest.mark.machine]

BIN = Path(sys.executable).parent
BOARDS = tuple(f"b{n}" for n in range(1, 7))
NVTX_APP = f"{sys.executable} {REPO / 'tests' / 'apps' / 'nvtx_frames.py'} --frames 100000 --work 20000 --sleep-ms 10"
QUICK = ("--app-cmd", "sleep 1", "--no-nsys", "--duration", "2")
RECAP = "{name}\\s+: ok=(\\d+)\\s+changed=(\\d+)\\s+unreachable=(\\d+)\\s+failed=(\\d+)\\s+skipped=(\\d+)"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """b1..b6, each a machine of its own; group 'pick' is b1..b3. The inventory says how ssh checks their host keys,
    so that the fleets and the plays read the same hosts."""
    import shutil
    if os.geteuid() != 0 or not shutil.which("sshd"):
        pytest.skip("needs root and openssh-server (the README's test command installs them)")
    root = tmp_path_factory.mktemp("lab")
    first = make_sshd(root / "b1", own_machine=True)
    servers = {"b1": first, **{n: make_sshd(root / n, client_key=first.client_key, own_machine=True)
                               for n in BOARDS[1:]}}
    known = root / "known_hosts"
    known.write_text("".join(s.known_hosts.read_text() for s in servers.values()))
    hosts = {n: {**s.inventory_host(), "orchestrate_work_dir": str(root / "work" / n),
                 "orchestrate_python": sys.executable,
                 "ansible_ssh_common_args": f"-F /dev/null -o UserKnownHostsFile={known}"}
             for n, s in servers.items()}
    inventory = root / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"lab": {"children": {
        "pick": {"hosts": {n: hosts[n] for n in BOARDS[:3]}},
        "rest": {"hosts": {n: hosts[n] for n in BOARDS[3:]}}}}}}}, sort_keys=False))
    try:
        for server in servers.values():
            server.start()
        yield {"root": root, "inventory": inventory, "servers": servers}
    finally:
        for server in servers.values():
            server.stop()


def capture_span(run_dir: Path) -> tuple[float, float]:
    """When the board's capture of a run began (its first attempt) and ended, on the board's clock, as the board's
    supervisor recorded them (run.json keeps its record)."""
    run = json.loads((run_dir / "run.json").read_text())
    starts = [a["started_at"] for a in run.get("capture_attempts") or []] + [run["capture"]["started_at"]]
    return min(starts), run["capture"]["ended_at"]


def captures(folders: Path, name: str) -> list[tuple[float, float, str]]:
    """Every capture of board ``name`` under ``folders``: (start, end, run), in the order they began."""
    found = [p.parent for p in folders.rglob("run.json")]
    mine = [p for p in found if json.loads((p / "run.json").read_text())["target"]["name"] == name]
    return sorted((*capture_span(p), p.name) for p in mine)


def board_keys(lab) -> dict[str, str]:
    inventory = load_inventory(str(lab["inventory"]))
    return {name: board_key(inventory.host(name), os.uname().nodename) for name in BOARDS}


def ansible_env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, ANSIBLE_HOME=str(tmp_path / "ansible-home"), PYTHONWARNINGS="ignore",
                ANSIBLE_NOCOLOR="1", PATH=f"{BIN}:{os.environ['PATH']}")


def playbook(tmp_path: Path, hosts: str) -> Path:
    path = tmp_path / "quick.yml"
    path.write_text(yaml.safe_dump([{
        "name": "A quick run on every board", "hosts": hosts, "gather_facts": False, "strategy": "free",
        "tasks": [{"name": "Profile", "orchestrate.jetson.profile": {
            "app_cmd": "sleep 1", "no_nsys": True, "duration": 2, "out": "{{ out }}"}}]}], sort_keys=False))
    return path


def start_play(lab, tmp_path: Path, out: Path, hosts: str = "lab") -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / "ansible-playbook"), "-i", str(lab["inventory"]), str(playbook(tmp_path, hosts)), "--forks", "6",
         "-e", json.dumps({"out": str(out)})], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=ansible_env(tmp_path), stdin=subprocess.DEVNULL)


def recap(stdout: str, name: str) -> tuple[int, ...]:
    import re
    found = re.search(RECAP.format(name=name), stdout)
    assert found, stdout
    return tuple(int(g) for g in found.groups())


def test_four_fleets_at_once_share_six_boards_one_capture_at_a_time_in_request_order(lab, tmp_path):
    """Without nsys: nsys 2022.4 stalls when two captures overlap on one kernel (which these boards share)."""
    fleets = [start_cli("fleet", *QUICK, "--limit", "lab", "--forks", "6", "--inventory", str(lab["inventory"]),
                        "--out", str(tmp_path / f"fleet{n}")) for n in (1, 2)]
    plays = [start_play(lab, tmp_path, tmp_path / f"play{n}") for n in (1, 2)]
    ended = [p.communicate(timeout=900) for p in [*fleets, *plays]]
    for process, (out, err) in zip([*fleets, *plays], ended):
        assert process.returncode == 0, out + err
    for out, _ in ended[2:]:
        for name in BOARDS:
            assert recap(out, name) == (1, 1, 0, 0, 0)
    for n in (1, 2):  # every run ended well: none "busy"
        [folder] = (tmp_path / f"fleet{n}").iterdir()
        document = json.loads((folder / "fleet.json").read_text())
        assert document["recap"] == {"ok": 6, "failed": 0, "unreachable": 0, "skipped": 0}
    runs = [json.loads(p.read_text()) for p in tmp_path.glob("play*/*/run.json")]
    assert len(runs) == 12 and {r["status"] for r in runs} == {"ok"}

    keys = board_keys(lab)
    database = open_database(str(default_location()))
    try:
        rows = ledger.lease_rows(database, active=False)
    finally:
        database.close()
    assert len(rows) == 24 and {(r.state, r.end_reason) for r in rows} == {("ended", "done")}
    for name in BOARDS:
        held = sorted((r for r in rows if r.board == keys[name]), key=lambda r: r.granted_at or 0)
        assert len(held) == 4 and [r.id for r in held] == sorted(r.id for r in held), name  # in request order
        ran = captures(tmp_path, name)
        assert len(ran) == 4, name
        for (_, end, run), (start, _, after) in zip(ran, ran[1:]):
            assert end <= start, f"{name}: {after} began before {run} ended"
        # each lease spans its own capture: granted before it began, ended after it ended
        for lease, (start, end, _) in zip(held, ran):
            assert (lease.granted_at or 0) <= start and end <= (lease.ended_at or 0), name
        assert_board_clean(lab["root"] / "work" / name)


def test_a_holder_killed_mid_capture_frees_the_board_once_its_capture_ends_and_its_report_is_fetched(
        lab, tmp_path):
    """Real nsys on b1; its holder SIGKILLed 3 s into the 20 s capture. The lease outlives the holder's heartbeat
    while the board's capture runs, and ends within the board check after it."""
    import shutil
    if not shutil.which("nsys"):
        pytest.skip("needs nsys (the README's test command installs it)")
    key = board_keys(lab)["b1"]
    holder = start_cli("profile", "--target", "b1", "--inventory", str(lab["inventory"]), "--app-cmd", NVTX_APP,
                       "--trace", "osrt,nvtx", "--sample", "none", "--cpuctxsw", "none", "--duration", "20",
                       "--retries", "2", "--out", str(tmp_path / "holder"))
    database = open_database(str(default_location()))
    try:
        capture = wait_for(lambda: next((r.capture for r in ledger.lease_rows(database) if r.board == key
                                         and r.capture), None), 120, holder)
        waiter = start_cli("profile", "--target", "b1", "--inventory", str(lab["inventory"]), *QUICK,
                           "--out", str(tmp_path / "waiter"))
        wait_for(lambda: any(r.state == "waiting" for r in ledger.lease_rows(database)), 60, waiter)
        time.sleep(3)
        killed_at = time.time()
        for pid in [holder.pid, *descendants(holder.pid)]:  # the holder and all it started, as a laptop dies
            os.kill(pid, signal.SIGKILL)
        holder.communicate()
        out, err = waiter.communicate(timeout=300)
        assert waiter.returncode == 0, err
        rows = ledger.lease_rows(database, active=False)
    finally:
        database.close()
    [gone] = [r for r in rows if r.capture == capture]
    [took] = [r for r in rows if r.purpose == "profile sleep"]
    assert gone.end_reason == "its holder stopped answering; its capture ended on the board"
    assert (gone.ended_at or 0) <= (took.granted_at or 0)
    assert "waiting for a board: " in err and f"took {key}" in err

    [killed] = (tmp_path / "holder").iterdir()
    assert killed.name == Path(capture).name
    fetched = run_cli("fetch", str(killed), "--inventory", str(lab["inventory"]), timeout=600)
    assert profiled_run(fetched, tmp_path / "holder") == killed  # (or nsys's own stall, its report back)
    assert list(killed.glob("*.nsys-rep")) and json.loads((killed / "run.json").read_text())["stage"] == "pulled"
    start, end = capture_span(killed)
    assert end - start > 15  # the board captured on without its holder
    print(f"capture {start - killed_at:+.1f} .. {end - killed_at:+.1f} s from the kill; the lease passed on "
          f"{(took.granted_at or 0) - end:.1f} s after the capture's end")
    # never while the capture ran, and within a board check of its end (or of the holder's heartbeat running out)
    assert end <= (took.granted_at or 0) <= max(end, killed_at + STALE_S) + 10, (end, took.granted_at, killed_at)
    assert_board_clean(lab["root"] / "work" / "b1")


def wait_for(found, timeout_s: float, process: subprocess.Popen | None = None):
    """found()'s first true value, while ``process`` still runs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        assert process is None or process.poll() is None, process.communicate()
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_a_board_that_keeps_dying_is_quarantined_skipped_by_fleets_and_plays_and_released(lab, tmp_path):
    inventory = ["--inventory", str(lab["inventory"])]
    server = lab["servers"]["b6"]
    key = board_keys(lab)["b6"]
    assert run_cli("profile", "--target", "b6", *inventory, *QUICK, "--out", str(tmp_path / "runs")).returncode == 0
    server.kill_all()  # the board loses power, three times
    try:
        for _ in range(3):
            failed = run_cli("profile", "--target", "b6", *inventory, *QUICK, "--out", str(tmp_path / "runs"))
            assert failed.returncode == 4, failed.stderr
        assert f"{key} is quarantined after 3 failures in a row; 'orchestrate boards release {key}' brings it back" \
            in failed.stderr
        refused = run_cli("profile", "--target", "b6", *inventory, *QUICK, "--out", str(tmp_path / "runs"))
        assert refused.returncode == 25
        [line] = [x for x in refused.stderr.splitlines() if x.startswith("error:")]
        assert line.startswith(f"error: {key} quarantined (since ") and "refused" in line and line.endswith(
            f"(mend the board, then 'orchestrate boards release {key}')")

        fleet = run_cli("fleet", *QUICK, "--limit", "b5:b6", *inventory, "--out", str(tmp_path / "fleet"))
        assert fleet.returncode == 0, fleet.stderr
        [folder] = (tmp_path / "fleet").iterdir()
        boards = {b["target"]: b for b in json.loads((folder / "fleet.json").read_text())["boards"]}
        assert (boards["b5"]["status"], boards["b6"]["status"]) == ("ok", "skipped")
        assert boards["b6"]["reason"].startswith(f"{key} quarantined (since ") and boards["b6"]["exit_code"] == 25
        assert "skipped" in fleet.stderr
        play = start_play(lab, tmp_path, tmp_path / "play", "b5:b6")
        out, err = play.communicate(timeout=600)
        assert play.returncode == 0, out + err
        assert recap(out, "b5") == (1, 1, 0, 0, 0) and recap(out, "b6") == (0, 0, 0, 0, 1)
        assert "skipping: [b6]" in out

        shown = run_cli("boards", "--json")
        assert shown.returncode == 0, shown.stderr
        health = json.loads(shown.stdout)["health"]
        assert [(h["board"], h["failures"], h["quarantined_at"] is not None) for h in health] == [(key, 3, True)]
        shown_b6 = run_cli("boards", "show", "b6", *inventory, "--json")
        history = [e["kind"] for e in json.loads(shown_b6.stdout)["events"]]
        assert history == ["failure", "failure", "failure", "quarantined"]
    finally:
        server.start()
    released = run_cli("boards", "release", "b6", *inventory)
    assert released.returncode == 0 and f"{key} is back in service" in released.stderr, released.stderr
    again = run_cli("profile", "--target", "b6", *inventory, *QUICK, "--out", str(tmp_path / "runs"))
    assert again.returncode == 0, again.stderr
    assert json.loads(run_cli("boards", "--json").stdout)["health"] == []


def test_any_takes_the_free_board_of_a_pattern_and_waits_in_order_when_all_are_held(lab, tmp_path, postgres):
    url = postgres.new_database()
    inventory = load_inventory(str(lab["inventory"]))
    keys = board_keys(lab)
    options = LeaseOptions(url)
    hosts = [inventory.host(n) for n in BOARDS[:3]]
    any_of = ("profile", "--target", "pick", "--any", "--db", url, "--inventory", str(lab["inventory"]), *QUICK)
    with ExitStack() as held:
        for host in hosts[:2]:
            held.enter_context(hold(options, [host], "held by the test", Quiet()))
        picked = run_cli(*any_of, "--out", str(tmp_path / "one"))
        assert picked.returncode == 0, picked.stderr
        [run] = (tmp_path / "one").iterdir()
        assert json.loads((run / "run.json").read_text())["target"]["name"] == "b3"

    releases = {h.name: threading.Event() for h in hosts}

    def keep(host) -> None:
        with hold(options, [host], "held by the test", Quiet()):
            releases[host.name].wait(120)
    keepers = [threading.Thread(target=keep, args=(h,)) for h in hosts]
    database = open_database(url)
    try:
        for keeper in keepers:
            keeper.start()
        wait_for(lambda: len([r for r in ledger.lease_rows(database) if r.state == "held"]) == 3, 30)
        # runs long enough that the first still holds its board when the second is granted one
        longer = [*any_of[:-len(QUICK)], "--app-cmd", "sleep 4", "--no-nsys", "--duration", "5"]
        first = start_cli(*longer, "--out", str(tmp_path / "first"))
        wait_for(lambda: any(r.purpose == "profile sleep" for r in ledger.lease_rows(database)), 60, first)
        second = start_cli(*longer, "--out", str(tmp_path / "second"))
        wait_for(lambda: len([r for r in ledger.lease_rows(database) if r.purpose == "profile sleep"]) == 2, 60,
                 second)
        time.sleep(2)
        assert first.poll() is None and second.poll() is None  # both wait
        releases["b2"].set()  # the first in the queue takes it
        wait_for(lambda: [r.board for r in ledger.lease_rows(database) if r.purpose == "profile sleep"
                          and r.state == "held"] == [keys["b2"]], 60, first)
        releases["b1"].set()  # and the second this one
        out1, err1 = first.communicate(timeout=300)
        out2, err2 = second.communicate(timeout=300)
        releases["b3"].set()
        assert (first.returncode, second.returncode) == (0, 0), err1 + err2
        assert f"took {keys['b2']}" in err1 and f"took {keys['b1']}" in err2
        assert "held by " in err1 and "(held by the test)" in err1
        rows = [r for r in ledger.lease_rows(database, active=False) if r.purpose == "profile sleep"]
        # the one that took b3 above, then the two that waited, in the order they asked
        assert [r.board for r in sorted(rows, key=lambda r: r.id)] == [keys["b3"], keys["b2"], keys["b1"]]
    finally:
        for event in releases.values():
            event.set()
        for keeper in keepers:
            keeper.join(60)
        database.close()


class Quiet:
    def note(self, level: str, text: str) -> None:
        pass
