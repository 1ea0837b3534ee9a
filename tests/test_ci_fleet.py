"""`orchestrate ci --limit`: one CI job over a fleet of boards that are machines of their own (real sshd in
namespaces of their own, --no-nsys), two board kinds (this machine twice, and a Jetson Nano laid out from its
real files). Five unchanged commits on main build each kind's baseline; an unchanged commit on a branch passes
on every board; a commit whose inferences do more work fails on every board, with one JUnit case per board x
metric. A board's job never counts its fleet siblings' runs of the same commit as its baseline."""
from __future__ import annotations

import os
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from board_state import assert_board_clean
from conftest import REPO, run_cli
from fake_board import lay_out
from sshd_server import make_sshd

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # the gate's verdicts on timings

APP = REPO / "tests" / "apps" / "inference_lines.py"
NANO = "NVIDIA Jetson Nano Developer Kit"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("sshd"):
        pytest.skip("needs root and openssh-server (the README's test command installs them)")
    root = tmp_path_factory.mktemp("ci-fleet")
    first = make_sshd(root / "pc1", own_machine=True)
    servers = {"pc1": first, **{name: make_sshd(root / name, client_key=first.client_key, own_machine=True)
                                for name in ("pc2", "nano")}}
    known = root / "known_hosts"
    known.write_text("".join(s.known_hosts.read_text() for s in servers.values()))
    hosts = {name: {**server.inventory_host(), "orchestrate_work_dir": str(root / "work" / name),
                    "orchestrate_python": sys.executable} for name, server in servers.items()}
    hosts["nano"]["orchestrate_board_root"] = str(lay_out(root / "nano-files", "nano"))
    inventory = root / "inventory.yaml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"lab": {"hosts": hosts}}}}))
    apps = root / "apps"
    apps.mkdir()
    for server in servers.values():
        server.start()
    yield {"root": root, "apps": apps, "args": ["--inventory", str(inventory), "--known-hosts", str(known),
                                                "--ssh-config", str(first.ssh_config), "--apps-dir", str(apps),
                                                "--db", str(root / "results.db")]}
    for server in servers.values():
        server.stop()


def job(lab, tmp_path: Path, commit: str, branch: str, work: int, max_repeat: int = 4) -> tuple:
    """One CI job over the fleet, the app doing ``work`` square roots and a 10 ms wait per inference (the wait
    keeps the figure steady on a machine whose cores other work may take for a second: an unchanged commit must
    pass here every time)."""
    (lab["apps"] / "infer.yaml").write_text(yaml.safe_dump({
        "name": "infer", "parser": "tftrt-bench", "duration_s": 60,
        "command": [sys.executable, str(APP), "--frames", "30", "--work", str(work), "--sleep-ms", "10"]}))
    junit = tmp_path / f"junit-{commit[:1]}.xml"
    # the steady figure, gated: the first inference is one sample a run (a cold one), too few to tell a change
    done = run_cli("ci", "--app", "infer", "--no-nsys", "--limit", "lab", "--repeat", "2",
                   "--max-repeat", str(max_repeat), "--commit", commit, "--gate", "app.inference_mean_ms:50%",
                   "--branch", branch, "--baseline", "main", "--junit", str(junit), "--out", str(tmp_path / "runs"),
                   *lab["args"], timeout=600)
    return done, ET.parse(junit).getroot() if junit.exists() else None


def cases(suite) -> dict[tuple[str, str], str]:
    """(class name, case name) -> what the case holds: failure, skipped, or passed."""
    found = {}
    for case in suite.iter("testcase"):
        kind = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        found[(case.get("classname"), case.get("name"))] = kind
    return found


def test_a_fleet_ci_job_gates_every_board_against_its_own_kind(lab, tmp_path):
    here = None
    for number in range(1, 6):
        done, suite = job(lab, tmp_path, str(number) * 40, "main", 2_000)
        assert done.returncode == 0, done.stdout + done.stderr  # unchanged code passes, judged or not
        found = cases(suite)
        assert len(found) == 3, found  # 3 boards x 1 gated figure
        here = here or next(kind for kind, _ in found if kind.endswith(".pc1")).rsplit(".", 1)[0]
        # each board's kind: this machine's for both PCs, the Nano's for the Nano (a baseline of its own)
        assert {kind for kind, _ in found} == {f"{here}.pc1", f"{here}.pc2", f"{NANO}.nano"}
        # the Nano has number - 1 jobs before this one: fewer than five, no baseline yet. The PCs share their
        # kind's jobs (two a commit) but never count each other's job of this commit: 2 x (number - 1) before
        judged = {key for key, kind in found.items() if kind != "skipped"}
        assert judged == ({key for key in found if not key[0].endswith(".nano")} if 2 * (number - 1) >= 5 else set())

    done, suite = job(lab, tmp_path, "6" * 40, "same-speed", 2_000)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("### orchestrate ci passed")
    found = cases(suite)
    assert len(found) == 3 and "failure" not in found.values() and "error" not in found.values()
    # the newest ten jobs of main for the PCs' kind (five commits on two boards), five for the Nano's
    lines = [line for line in done.stdout.splitlines() if line.startswith("| ") and "infer" in line]
    assert len(lines) == 3 and all("(n=10) |" in line for line in lines if "| pc" in line), lines
    assert all("(n=5) |" in line for line in lines if "| nano" in line), lines

    # ~18 ms more work in each ~10 ms inference, up to eight runs a board while not sure: three boards share two
    # cores, and a board whose runs scatter wider than its baseline's is judged on its own scatter; on four runs
    # (three degrees of freedom) both PCs once ended not sure of a +180 % change at p = 0.010 and 0.018
    done, suite = job(lab, tmp_path, "7" * 40, "slower", 300_000, max_repeat=8)
    assert done.returncode == 22, done.stdout + done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert "regressed" in error
    found = cases(suite)
    metric = "infer app.inference_mean_ms"
    # the PCs' kind has ten jobs of main: the slowdown is a regression there; the Nano's has five, the fewest that
    # judge at all. A board whose runs spread (its runs slowed unevenly on 2 shared cores) may leave the gate not sure
    # after the most runs rather than call it: never a pass
    pcs = [found[(f"{here}.{name}", metric)] for name in ("pc1", "pc2")]
    assert "failure" in pcs and set(pcs) <= {"failure", "skipped"}, done.stdout
    assert found[(f"{NANO}.nano", metric)] in ("failure", "skipped"), done.stdout
    nano_line = next(line for line in done.stdout.splitlines() if line.startswith("| nano"))
    assert "**regression**" in nano_line or "not sure after" in nano_line, nano_line
    for name in ("pc1", "pc2", "nano"):
        assert_board_clean(lab["root"] / "work" / name)
