"""`orchestrate fleet` and `doctor` for real: a fleet of OpenSSH servers on loopback (one per board), real nsys,
and the three ways a board goes wrong: its sshd is down, its host key is unknown, its app fails."""
from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest
import yaml
from board_state import assert_board_clean, assert_report_kept
from browser import assert_clean, open_page
from conftest import REPO, run_cli
from fake_board import lay_out
from scenarios import start_cli
from sshd_server import make_sshd
from test_faults import error_lines

from orchestrator.documents.fleet import read_fleet

# each board is a machine of its own (its own /run, /tmp, /dev/shm and hostname: its own capture lock), but
# they share this machine's kernel and its nsys
pytestmark = [pytest.mark.integration, pytest.mark.machine]

APP_PY = REPO / "tests" / "apps" / "nvtx_frames.py"
# NVTX frames of ~12 ms until the agent stops it; the board whose run folder names 'failing' cannot load its model
APP = ("case \"$ORCHESTRATE_RUN\" in *-failing-*) echo 'cannot load the model' >&2; exit 3;; esac; "
       f"exec {shlex.quote(sys.executable)} {shlex.quote(str(APP_PY))} --frames 100000 --work 20000 --sleep-ms 10")
CAPTURE = ("--trace", "osrt,nvtx", "--sample", "none", "--cpuctxsw", "none", "--duration", "3", "--retries", "2")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """good1, good2, nano and failing answer (nano's agent reads a Jetson Nano's files, laid out from real ones);
    dead's sshd is stopped; stranger's host key is not in known_hosts."""
    import shutil
    if os.geteuid() != 0 or not shutil.which("sshd") or not shutil.which("nsys"):
        pytest.skip("needs root, openssh-server and nsys (the README's test command installs them)")
    root = tmp_path_factory.mktemp("fleet")
    first = make_sshd(root / "good1", own_machine=True)
    servers = {"good1": first}
    for name in ("good2", "nano", "failing", "dead", "stranger"):
        servers[name] = make_sshd(root / name, client_key=first.client_key, own_machine=True)
    known = root / "known_hosts"
    known.write_text("".join(s.known_hosts.read_text() for n, s in servers.items() if n != "stranger"))
    for name, server in servers.items():
        if name != "dead":
            server.start()
    hosts = {name: {**server.inventory_host(), "orchestrate_work_dir": str(root / "work" / name),
                    "orchestrate_python": sys.executable} for name, server in servers.items()}
    # the Nano's tegrastats throttles: every other line has its cores' clocks halved (204 -> 102 MHz)
    hosts["nano"]["orchestrate_board_root"] = str(lay_out(root / "nano-files", "nano", throttling=True))
    inventory = root / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(sort_keys=False, data={"all": {"children": {
        "lab": {"children": {"healthy": {"hosts": {n: hosts[n] for n in ("good1", "good2", "nano")}},
                             "troubled": {"hosts": {n: hosts[n] for n in ("failing", "dead", "stranger")}}}},
    }}}))
    yield {"root": root, "inventory": inventory, "known_hosts": known, "servers": servers,
           "ssh": ["--inventory", str(inventory), "--known-hosts", str(known), "--ssh-config",
                   str(first.ssh_config)]}
    for server in servers.values():
        server.stop()


def test_a_fleet_runs_every_board_and_recaps_each_one(fleet, browser, tmp_path):
    """One board at a time: nsys 2022.4 stalls far more often when two captures overlap on one kernel, which
    boards of their own never share (the boards side by side are the next test's, without nsys)."""
    done = run_cli("fleet", "--app-cmd", f"sh -c {shlex.quote(APP)}", "--limit", "lab", "--forks", "1",
                   *CAPTURE, "--out", str(tmp_path / "runs"), *fleet["ssh"], timeout=900)
    assert done.returncode == 21, done.stderr
    folder = Path(done.stdout.strip().splitlines()[-1])
    assert folder.parent == tmp_path / "runs" and folder.name.endswith("-fleet-sh")
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: 3 of 6 boards did not end well; the first, failing: the app exited")

    document = json.loads((folder / "fleet.json").read_text())
    assert read_fleet(folder).as_json() == document  # its one reader reads it whole
    assert document["status"] == "complete" and document["limit"] == "lab" and document["forks"] == 1
    assert document["targets"] == ["good1", "good2", "nano", "failing", "dead", "stranger"]
    boards = {b["target"]: b for b in document["boards"]}
    assert {t: b["status"] for t, b in boards.items()} == {
        "good1": "ok", "good2": "ok", "nano": "ok", "failing": "failed", "dead": "unreachable",
        "stranger": "unreachable"}
    assert document["recap"] == {"ok": 3, "failed": 1, "unreachable": 2, "skipped": 0}
    nano = boards["nano"]["board"]
    assert (nano["kind"], nano["chip"], nano["l4t"], nano["jetpack"], nano["power_mode"]) == (
        "NVIDIA Jetson Nano Developer Kit", "tegra210", "32.7.1", "4.6.1", "MAXN")
    assert nano["fingerprint"]["kind"] != boards["good1"]["board"]["fingerprint"]["kind"]
    nano_run = json.loads((folder / boards["nano"]["folder"] / "run.json").read_text())
    assert nano_run["facts"]["board"]["gpu"]["max_mhz"] == 921.6 and nano_run["facts"]["board"]["emc_mhz"] == 1600.0
    # the Nano's tegrastats (its real line, every 200 ms): 1022 mW on POM_5V_IN, so each steady frame's energy is
    # 1022 mW x its length
    nano_summary = json.loads((folder / boards["nano"]["folder"] / "summary.json").read_text())
    assert nano_run["capture"]["board_samples"]["source"] == "tegrastats"
    assert nano_summary["board"]["samples"] >= 10
    assert nano_run["validity"]["samples"] == nano_summary["board"]["samples"]
    [flag] = nano_run["validity"]["flags"]
    assert flag["code"] == "clocks_dropped" and flag["what"].startswith("the CPU clock dropped from 204 to 102 MHz")
    assert boards["nano"]["cells"][0]["flags"] == [flag] and boards["nano"]["status"] == "ok"
    assert any("nano" in line and "CPU clock dropped" in line for line in done.stderr.splitlines())
    energy, frames = nano_summary["energy"], nano_summary["frames"]
    steady_s = [ns / 1e9 for ns in frames["per_frame_ns"][1 + frames["warmup"]["frames"]:]]
    assert energy["rail"] == "POM_5V_IN" and energy["mean_power_mw"] == 1022.0
    assert [e for e in energy["per_frame_mj"] if e is not None] == pytest.approx(
        [1022.0 * s for s, e in zip(steady_s, energy["per_frame_mj"]) if e is not None], rel=1e-6)
    assert energy["frames"] > 0.8 * len(steady_s)  # the frames the samples cover
    assert boards["nano"]["cells"][0]["energy_mj"] == energy["median_mj"]
    # this machine has no tegrastats: its loads come from sysfs
    good1_summary = json.loads((folder / boards["good1"]["folder"] / "summary.json").read_text())
    assert good1_summary["board"]["source"] == "sysfs" and good1_summary["energy"] is None
    loads = [value for _, value in good1_summary["board"]["series_ns"]["cpu_load_pct"]]
    assert len(loads) >= 10 and max(loads) > 10  # the app's frames keep a core busy
    assert boards["failing"]["exit_code"] == 10 and "status 3" in boards["failing"]["reason"]
    assert boards["dead"]["exit_code"] == 4 and "refused" in boards["dead"]["reason"]
    assert boards["stranger"]["exit_code"] == 6 and "host key" in boards["stranger"]["reason"]
    for name, code in (("dead", 4), ("stranger", 6)):  # a board never reached still has a run folder saying why
        record = json.loads((folder / boards[name]["folder"] / "run.json").read_text())
        assert (record["stage"], record["error"]["exit_code"]) == ("failed", code)
    # every line the boards streamed as they ended is fleet.json's, in the order they ended
    streamed = [json.loads(line) for line in (folder / "boards.jsonl").read_text().splitlines()]
    assert sorted(b["target"] for b in streamed) == sorted(boards)

    for name in ("good1", "good2", "nano"):
        board = boards[name]
        run_dir = folder / board["folder"]
        record = json.loads((run_dir / "run.json").read_text())
        assert record["fleet"] == {"folder": folder.name, "target": name}
        assert record["board_fingerprint"] == board["board"]["fingerprint"]
        assert run_dir.parent == folder and (run_dir / "report.html").is_file()
        summary = json.loads((run_dir / "summary.json").read_text())
        [cell] = board["cells"]
        frame = cell["frame_ms"]
        # frames of 10 ms of sleep and some work (~12 ms on a calm machine, 30 ms and more on a busy one: how many fit
        # in the 3 s is the machine's business): the median and the spread are the steady frames' own
        steady_ms = [ns / 1e6 for ns in summary["frames"]["per_frame_ns"][1 + summary["frames"]["warmup"]["frames"]:]]
        assert frame["frames"] == len(steady_ms) >= 20
        assert frame["low"] <= frame["median"] <= frame["high"] and frame["median"] > 10
        assert sorted(steady_ms)[len(steady_ms) // 2] == pytest.approx(frame["median"], rel=0.05)
        assert cell["report"] == f"{board['folder']}/report.html"
        assert cell["flags"] == [] or name == "nano"  # the Nano's tegrastats throttles (below)
        assert board["board"]["kind"].startswith("not a Jetson: ") or name == "nano"
        assert board["board"]["nsys"] == "2022.4.2.1" and len(board["board"]["fingerprint"]["software"]) == 16
    assert boards["good1"]["board"]["fingerprint"] == boards["good2"]["board"]["fingerprint"]
    assert boards["failing"]["cells"][0]["frame_ms"] is None

    recap = done.stderr[done.stderr.index("recap"):]
    for name, status in (("good1", "ok"), ("failing", "failed"), ("dead", "unreachable"),
                         ("stranger", "unreachable")):
        assert any(name in line and status in line for line in recap.splitlines()), recap

    opened = open_page(browser, folder / "fleet.html")
    page = opened.page
    assert page.locator("[data-table=recap] tbody tr").count() == 6
    assert page.locator("[data-table=recap] tr[data-board=dead]").get_attribute("data-status") == "unreachable"
    assert page.locator("[data-count=ok]").inner_text() == "ok 3"
    # by board kind: the Jetson Nano, this machine's kind, and the boards never reached
    assert page.locator("table[data-table=kind]").count() == 3
    assert page.locator("h3[data-kind='NVIDIA Jetson Nano Developer Kit']").count() == 1
    measured = page.locator("table[data-table=kind] tr[data-board=good1] td").first
    assert measured.get_attribute("data-state") == "ok" and measured.inner_text().split()[1] == "ms"
    assert page.locator("table[data-table=kind] tr[data-board=nano] td").first.get_attribute("data-state") == "flagged"
    assert "CPU clock dropped" in page.locator("[data-table=recap] tr[data-board=nano]").inner_text()
    failed = page.locator("table[data-table=kind] tr[data-board=failing] td").first
    assert failed.get_attribute("data-state") == "failed"
    drawn = sorted(c["said"] for name, c in opened.charts().items() if name.startswith("fleet-"))
    assert drawn == [1, 2]  # a bar for each board that measured; the failed one is its reason, as text
    opened.screenshot("fleet")
    assert_clean(opened, folder / "fleet.html")
    # the Nano's report draws its board under the frame chart: clocks, loads, temperature and power
    nano_page = folder / boards["nano"]["folder"] / "report.html"
    report = open_page(browser, nano_page)
    drawn = report.charts()
    assert {"board-cpu_mhz", "board-cpu_load_pct", "board-gpu_mhz", "board-gpu_pct", "board-temp_c",
            "board-power_mw"} <= set(drawn)
    assert drawn["board-power_mw"]["said"] >= 10
    assert f"{energy['median_mj']:.4g} mJ" in report.page.locator("section#frames").inner_text()
    assert report.page.locator("[data-doubt]").inner_text().startswith("Doubtful figures: the CPU clock dropped")
    report.screenshot("fleet-nano-report")
    assert_clean(report, nano_page)
    for name in ("good1", "good2", "nano", "failing"):
        assert_board_clean(fleet["root"] / "work" / name)


def with_tripwire_nsys(inventory: Path, folder: Path) -> tuple[Path, Path]:
    """The fleet's inventory with every board's nsys a script that records its calls."""
    calls = folder / "nsys-calls"
    nsys = folder / "nsys"
    nsys.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {calls}\nexit 1\n")
    nsys.chmod(0o755)
    data = yaml.safe_load(inventory.read_text())
    for group in data["all"]["children"]["lab"]["children"].values():
        for host in group["hosts"].values():
            host["orchestrate_nsys"] = str(nsys)
    changed = folder / "inventory.yaml"
    changed.write_text(yaml.safe_dump(data, sort_keys=False))
    return changed, calls


def test_boards_of_their_own_run_side_by_side_without_nsys(fleet, tmp_path):
    """--no-nsys on every board at once: each board is a machine of its own (its hostname, its lock), so all
    run at the same time; the dead board, the stranger and the failing app end as with nsys, the Nano's
    throttling is flagged from its samples, and no board's nsys is ever started."""
    inventory, calls = with_tripwire_nsys(fleet["inventory"], tmp_path)
    ssh = [*fleet["ssh"][2:], "--inventory", str(inventory)]
    done = run_cli("fleet", "--app-cmd", f"sh -c {shlex.quote(APP)}", "--no-nsys", "--limit", "lab", "--forks", "6",
                   "--duration", "3", "--out", str(tmp_path / "runs"), *ssh, timeout=300)
    assert done.returncode == 21, done.stderr
    assert not calls.exists(), calls.read_text()
    folder = Path(done.stdout.strip().splitlines()[-1])
    boards = {b["target"]: b for b in json.loads((folder / "fleet.json").read_text())["boards"]}
    assert {t: b["status"] for t, b in boards.items()} == {
        "good1": "ok", "good2": "ok", "nano": "ok", "failing": "failed", "dead": "unreachable",
        "stranger": "unreachable"}
    assert boards["failing"]["exit_code"] == 10 and "status 3" in boards["failing"]["reason"]
    records = {name: json.loads((folder / boards[name]["folder"] / "run.json").read_text())
               for name in ("good1", "good2", "nano")}
    hostnames = {name: r["facts"]["system"]["hostname"] for name, r in records.items()}
    assert hostnames == {name: f"board-{fleet['servers'][name].port}" for name in records}
    # the three ran at once: each started its app before any of them had ended it
    windows = [(r["capture"]["started_at"], r["capture"]["ended_at"]) for r in records.values()]
    assert max(start for start, _ in windows) < min(end for _, end in windows)
    for record in records.values():
        assert record["capture"]["with_nsys"] is False and record["app_exit"]["ended"].startswith("stopped by")
        assert record["facts"]["nsys"]["path"] is None and record["validity"]["samples"] >= 10
    [flag] = records["nano"]["validity"]["flags"]
    assert flag["code"] == "clocks_dropped" and records["nano"]["capture"]["board_samples"]["source"] == "tegrastats"
    for name in ("good1", "good2", "nano", "failing"):
        assert_board_clean(fleet["root"] / "work" / name)


def test_doctor_checks_every_board_in_one_table(fleet):
    done = run_cli("doctor", "--limit", "lab:!failing", "--json", *fleet["ssh"], timeout=300)
    assert done.returncode == 21, done.stderr
    checks = {c["target"]: c for c in map(json.loads, done.stdout.splitlines())}
    assert list(checks) == ["good1", "good2", "nano", "dead", "stranger"]
    assert {t: c["status"] for t, c in checks.items()} == {
        "good1": "ok", "good2": "ok", "nano": "ok", "dead": "unreachable", "stranger": "unreachable"}
    nano = checks["nano"]["board"]
    assert (nano["kind"], nano["l4t"], nano["jetpack"], nano["power_mode"], nano["nsys"]) == (
        "NVIDIA Jetson Nano Developer Kit", "32.7.1", "4.6.1", "MAXN", "2022.4.2.1")
    assert checks["good1"]["board"]["kind"].startswith("not a Jetson: ") and checks["good1"]["findings"] == []
    assert "refused" in checks["dead"]["error"] and "--accept-new-host-key" in checks["stranger"]["error"]
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: 2 of 5 boards cannot capture as they are; the first, dead: ")
    table = run_cli("doctor", "--limit", "healthy", *fleet["ssh"], timeout=300)
    assert table.returncode == 0, table.stderr
    assert "good1" in table.stdout and "MAXN" in table.stdout and "2022.4.2.1" in table.stdout


def test_targets_show_groups_and_resolved_variables(fleet):
    done = run_cli("targets", "--inventory", str(fleet["inventory"]), "--limit", "troubled")
    assert done.returncode == 0, done.stderr
    assert "failing" in done.stdout and "good1" not in done.stdout.split("groups")[0]
    assert "orchestrate_work_dir=" in done.stdout and "ansible_port=" in done.stdout


def test_ctrl_c_ends_every_capture_early_keeps_the_reports_and_starts_nothing_more(fleet, tmp_path):
    proc = start_cli("fleet", "--app-cmd", "sh -c 'while true; do sleep 0.2; done'", "--limit", "good1:good2",
                     "--forks", "1", "--trace", "osrt", "--sample", "none", "--cpuctxsw", "none", "--duration", "30",
                     "--out", str(tmp_path / "runs"), *fleet["ssh"])
    deadline = time.monotonic() + 60
    while not list((tmp_path / "runs").glob("*/*/run.json")) or json.loads(
            next((tmp_path / "runs").glob("*/*/run.json")).read_text()).get("stage") != "capturing":
        assert time.monotonic() < deadline, "the first board never started capturing"
        time.sleep(0.1)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 16, err
    [line] = error_lines(err)
    assert line.startswith("error: interrupted; 1 of 2 boards had started, and kept what they captured")
    folder = Path(out.strip().splitlines()[-1])
    document = json.loads((folder / "fleet.json").read_text())
    assert read_fleet(folder).as_json() == document  # its one reader reads it whole
    assert document["status"] == "interrupted"
    first, second = document["boards"]
    assert (second["target"], second["status"], second["reason"]) == ("good2", "failed",
                                                                       "interrupted before it started")
    assert first["target"] == "good1" and first["exit_code"] == 16  # however nsys behaved after the early end
    record = json.loads((folder / first["folder"] / "run.json").read_text())
    assert 2 < record["capture"]["ended_early"]["after_s"] < 20
    assert record["capture"]["ended_early"]["reason"] == "the user interrupted orchestrate on the host"
    if record["capture"]["reports"]:
        assert_report_kept(folder / first["folder"])
    assert not list(folder.glob("*-good2-*"))   # the board not started has no run folder
    assert_board_clean(fleet["root"] / "work" / "good1")


def test_a_board_past_its_timeout_has_its_capture_ended_and_counts_as_failed(fleet, tmp_path):
    done = run_cli("fleet", "--app-cmd", "sh -c 'while true; do sleep 0.2; done'", "--limit", "good2",
                   "--board-timeout", "8", "--trace", "osrt", "--sample", "none", "--cpuctxsw", "none", "--duration",
                   "60", "--out", str(tmp_path / "runs"), *fleet["ssh"], timeout=300)
    assert done.returncode == 21, done.stderr
    folder = Path(done.stdout.strip().splitlines()[-1])
    [board] = json.loads((folder / "fleet.json").read_text())["boards"]
    assert board["status"] == "failed" and board["seconds"] < 50
    assert board["reason"] == "took longer than --board-timeout 8 s: its capture was ended early (report kept)"
    record = json.loads((folder / board["folder"] / "run.json").read_text())
    assert record["capture"]["ended_early"]["reason"] == "the fleet's --board-timeout passed"
    if record["capture"]["reports"]:
        assert_report_kept(folder / board["folder"])
    assert_board_clean(fleet["root"] / "work" / "good2")


def test_a_study_on_every_board_gives_each_cell_per_board(fleet, tmp_path):
    study = tmp_path / "work-study.yaml"
    study.write_text(yaml.safe_dump({
        "study": "work-study", "command": [sys.executable, str(APP_PY), "--frames", "100000", "--sleep-ms", "5"],
        "args": ["--work", "{work}"], "matrix": {"work": [5000, 60000]}, "repeat": 1, "duration_s": 2,
        "trace": ["osrt", "nvtx"], "sample": "none", "cpuctxsw": "none"}, sort_keys=False))
    done = run_cli("fleet", "--study", str(study), "--limit", "good1:nano", "--forks", "1", "--retries", "2",
                   "--out", str(tmp_path / "runs"), *fleet["ssh"], timeout=900)
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip().splitlines()[-1])
    document = json.loads((folder / "fleet.json").read_text())
    assert read_fleet(folder).as_json() == document  # its one reader reads it whole
    assert document["kind"] == "study" and document["recap"] == {"ok": 2, "failed": 0, "unreachable": 0, "skipped": 0}
    for board in document["boards"]:
        study_json = json.loads((folder / board["folder"] / "study.json").read_text())
        light, heavy = board["cells"]
        assert (light["label"], heavy["label"]) == ("work=5000", "work=60000")
        for cell, entry in zip(board["cells"], study_json["cells"]):
            metric = entry["metrics"]["steady_mean_ms"]
            assert cell["frame_ms"]["median"] == metric["median"]
            assert [cell["frame_ms"]["low"], cell["frame_ms"]["high"]] == metric["ci95"]
            assert cell["report"] == f"{board['folder']}/study.html"
        assert heavy["frame_ms"]["median"] > light["frame_ms"]["median"] + 1   # twelve times the square roots
    nano = next(b for b in document["boards"] if b["target"] == "nano")
    assert nano["board"]["kind"] == "NVIDIA Jetson Nano Developer Kit"
    assert [f["code"] for f in nano["cells"][0]["flags"]] == ["clocks_dropped"]  # its tegrastats throttles
