"""End to end, for real: the orchestrate command, a real sshd on loopback, real nsys, es2gears on Xvfb."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import nsys_stall_only, profiled_run, run_cli, write_inventory
from scenarios import board, ssh_args

from orchestrator.inventory.hosts import Host
from orchestrator.runs.pull import sha256_file
from orchestrator.targets.agent import deploy_agent
from orchestrator.targets.connect import open_transport
from orchestrator.targets.settings import ConnectOptions
from remote_agent.commands import FACTS
from remote_agent.messages import FactsRequest

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (shutil.which("nsys") and shutil.which("es2gears_x11") and shutil.which("Xvfb")),
                                 reason="needs nsys, es2gears_x11 and Xvfb (the README's test command installs them)")]


def swap_count(sqlite: Path) -> int:
    with sqlite3.connect(sqlite) as db:
        return db.execute("SELECT count(*) FROM OPENGL_API a JOIN StringIds s ON a.nameId = s.id "
                          "WHERE s.value = 'eglSwapBuffers'").fetchone()[0]


def check_run_folder(run_dir: Path) -> dict:
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" or nsys_stall_only(record)
    for name in ("report.nsys-rep", "report.sqlite", "app.stdout.log", "app.stderr.log", "nsys.log"):
        assert (run_dir / name).is_file(), name
        assert record["files"][name]["sha256"] == sha256_file(run_dir / name)
        assert record["files"][name]["size"] == (run_dir / name).stat().st_size
    assert not list(run_dir.glob(".*part*")), "no partial files are left behind"
    assert set(record["phases"]) >= {"connect", "deploy", "preflight", "capture", "pull", "export"}
    assert record["facts"]["nsys"]["version"] == "2022.4.2.1"
    assert "--trace=opengl,osrt" in record["remote_command"]
    assert f"DISPLAY={record['capture']['display']}" in record["remote_command"]
    assert record["app_exit"]["status"] == 143  # SIGTERM from the agent at the end of the capture
    assert record["app_exit"]["ended"].startswith("stopped by the agent after ")
    assert record["capture"]["display"].startswith(":")  # the agent's private Xvfb
    return record


def test_profile_es2gears_over_ssh(sshd, tmp_path):
    """es2gears as shipped but for its CPU sampling (the local run below keeps it): with it, nsys 2022.4 stalls
    writing its report whenever another process keeps a core busy, and this run shares the machine."""
    work = tmp_path / "board-work"
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": board(sshd, work)})
    done = run_cli("profile", "--target", "board", "--app", "es2gears", "--sample", "none", "--cpuctxsw", "none",
                   "--duration", "3", "--inventory", str(inventory), "--out", str(tmp_path / "runs"), *ssh_args(sshd))
    run_dir = profiled_run(done, tmp_path / "runs")
    assert run_dir.parent == tmp_path / "runs" and run_dir.name.endswith("-board-es2gears")
    record = check_run_folder(run_dir)
    assert record["target"]["address"] == f"root@127.0.0.1:{sshd.port}"
    # 3 s of es2gears on llvmpipe: hundreds of frames, each ended by one eglSwapBuffers
    swaps = swap_count(run_dir / "report.sqlite")
    assert swaps > 100
    # the analysis ran on this machine and its summary sits beside the report, checksummed like the rest
    summary = json.loads((run_dir / "summary.json").read_text())
    assert record["files"]["summary.json"]["sha256"] == sha256_file(run_dir / "summary.json")
    assert (summary["frames"]["source"], summary["frames"]["count"]) == ("eglSwapBuffers", swaps)
    assert record["analysis"] == {"verdict": summary["verdict"]["kind"], "frames": swaps}
    assert "analyze" in record["phases"]
    # the board's copy went only after verification, the agent stays for the next run
    assert not (work / "runs" / run_dir.name).exists()
    assert len(list((work / "agent").glob("orchestrate-agent-*.pyz"))) == 1
    assert (work.stat().st_mode & 0o777) == 0o700
    for phase in ("connect", "deploy", "preflight", "capture", "pull", "export"):  # piped: one line per phase
        assert any(line.startswith(f"{phase}: ") for line in done.stderr.splitlines()), phase
    # what the run handled itself goes to run.json, not to the terminal: nsys's missing importer, the exit
    # status 143 of an app stopped at its planned end
    assert "[info]" not in done.stderr and "nsys exit" not in done.stderr
    assert {f["what"] for f in record["preflight"] if f["level"] == "info"} <= {
        "nsys will not find its QdstrmImporter by itself"}
    if "Importer error status" in (run_dir / "nsys.log").read_text(errors="replace"):
        assert record["import"]["nsys_said"].startswith("Importer error status")
        assert record["import"]["handled"].startswith("nsys could not import its raw capture itself")


@pytest.mark.machine
@pytest.mark.alone  # CPU sampling: nsys 2022.4 stalls writing such a report whenever a core is kept busy
def test_profile_es2gears_locally_without_ssh(es2gears_here):
    """The local target (test_analysis_recorded reads the same run for es2gears's own frame rate)."""
    done = subprocess.CompletedProcess([], es2gears_here["returncode"], es2gears_here["stdout"],
                                       es2gears_here["stderr"])
    run_dir = profiled_run(done, Path(es2gears_here["runs"]))
    record = check_run_folder(run_dir)
    assert record["target"]["address"] == "this machine"
    assert swap_count(run_dir / "report.sqlite") > 50
    # the app runs as `sh -c '... exec "$@"'`: its process is shown, and picked, by the program it became
    from orchestrator.analysis import AnalysisOptions, analyze_report
    summary = json.loads((run_dir / "summary.json").read_text())
    [app] = [p for p in summary["capture"]["processes"] if "es2gears_x11" in p["aliases"]]
    assert app["name"] == "es2gears_x11"
    picked = analyze_report(run_dir / "report.sqlite", AnalysisOptions(process="es2gears_x11"))
    assert picked.frames is not None and picked.frames.count == swap_count(run_dir / "report.sqlite")


def test_agent_is_redeployed_only_when_it_changed(sshd, tmp_path):
    host = Host(name="board", address="127.0.0.1", port=sshd.port, user="root", key_file=str(sshd.client_key),
                work_dir=str(tmp_path / "work"))
    transport = open_transport(host, ConnectOptions(sshd.ssh_config, sshd.known_hosts))
    try:
        first = deploy_agent(transport, host)
        second = deploy_agent(transport, host)
        assert (first.reused, second.reused) == (False, True)
        assert first.archive == second.archive
        Path(first.archive).write_bytes(b"damaged")
        third = deploy_agent(transport, host)
        assert third.reused is False
        assert sha256_file(Path(third.archive)) == third.sha256
        facts = third.call(FACTS, FactsRequest())
        assert facts.system.uid == 0 and facts.nsys.path
    finally:
        transport.close()


def test_target_without_importer_sends_the_raw_capture_for_the_host_to_import(scenario):
    """A board whose nsys has no QdstrmImporter anywhere near it (the shared ordinary run's, tests/scenarios.py):
    the raw .qdstrm comes back verified and this machine imports it."""
    run = scenario("ordinary")
    done = subprocess.CompletedProcess([], run["returncode"], run["stdout"], run["stderr"])
    run_dir = profiled_run(done, Path(run["runs"]))
    record = json.loads((run_dir / "run.json").read_text())
    assert record["facts"]["nsys"]["importer"] is None
    assert record["import"]["where"] == "host"
    assert record["files"]["report.qdstrm"]["sha256"] == sha256_file(run_dir / "report.qdstrm")
    assert (run_dir / "report.nsys-rep").stat().st_size > 0
    with sqlite3.connect(run_dir / "report.sqlite") as db:
        assert db.execute("SELECT count(*) FROM OSRT_API").fetchone()[0] > 0
