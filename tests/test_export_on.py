"""--export-on TARGET: a report exported with a board's nsys over the real sshd, the SQLite back verified,
and nothing left on the board whether the export worked or not."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import NSYS_DATA, run_cli, write_inventory

from orchestrator.analysis import analyze_report

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not shutil.which("nsys"), reason="needs nsys (the README's test command installs it)")]


def board_setup(sshd, tmp_path: Path) -> tuple[list[str], Path]:
    work = tmp_path / "board-work"
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": {
        **sshd.inventory_host(), "orchestrate_work_dir": str(work)}})
    return ["--export-on", "board", "--inventory", str(inventory), "--ssh-config", str(sshd.ssh_config),
            "--known-hosts", str(sshd.known_hosts)], work


def leftovers(work: Path) -> list[Path]:
    return sorted(p for p in (work / "exports").rglob("*")) if (work / "exports").exists() else []


def test_a_report_exported_on_the_board_analyses_like_one_exported_here(sshd, tmp_path, export):
    args, work = board_setup(sshd, tmp_path)
    report = tmp_path / "pose.nsys-rep"
    shutil.copyfile(NSYS_DATA / "tflite-pose-xnnpack.nsys-rep", report)
    done = run_cli("analyze", str(report), "--json", *args)
    assert done.returncode == 0, done.stderr
    assert "exported on root@127.0.0.1" in done.stderr and "nsys 2022.4.2.1" in done.stderr
    assert report.with_suffix(".sqlite").is_file()
    remote = json.loads(done.stdout)
    here = analyze_report(export("tflite-pose-xnnpack")).as_json()  # the same report, exported on this machine
    for section in ("frames", "nvtx", "osrt", "hotspots", "cores"):
        assert remote[section] == here[section], section
    assert leftovers(work) == []
    page = run_cli("report", str(report), "-o", str(tmp_path / "page.html"), *args)
    assert page.returncode == 0 and (tmp_path / "page.html").is_file(), page.stderr


def test_a_report_the_boards_nsys_cannot_read_fails_in_one_line_and_leaves_nothing(sshd, tmp_path):
    args, work = board_setup(sshd, tmp_path)
    report = tmp_path / "newer.nsys-rep"
    shutil.copyfile(NSYS_DATA / "cpuonly_sampling_2024.nsys-rep", report)  # recorded by nsys 2024.6
    done = run_cli("analyze", str(report), *args)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 15 and len(errors) == 1, done.stderr
    assert "nsys 2022.4.2.1 on root@127.0.0.1" in errors[0] and "could not export newer.nsys-rep" in errors[0]
    assert "newer Nsight Systems" in errors[0]
    assert not report.with_suffix(".sqlite").exists() and leftovers(work) == []


def test_export_on_needs_a_report_to_export(sshd, tmp_path, export):
    args, _ = board_setup(sshd, tmp_path)
    done = run_cli("analyze", str(export("tflite-pose-xnnpack")), *args)
    assert done.returncode == 2 and "is not a .nsys-rep or .qdrep" in done.stderr


def test_without_export_on_a_newer_report_says_how_to_export_it(tmp_path):
    report = tmp_path / "newer.nsys-rep"
    shutil.copyfile(NSYS_DATA / "cpuonly_sampling_2024.nsys-rep", report)
    done = run_cli("analyze", str(report))
    assert done.returncode == 15 and "--export-on TARGET" in done.stderr
    assert "comes from a newer nsys" in done.stderr  # nsys 2022.4: "Version number is invalid: 2024@6@2..."


def test_a_report_cut_short_is_not_called_newer(tmp_path):
    """nsys says "Section Table Reference magic number mismatch" of a cut .nsys-rep: damaged, not newer."""
    report = tmp_path / "cut.nsys-rep"
    report.write_bytes((NSYS_DATA / "tflite-pose-xnnpack.nsys-rep").read_bytes()[:60_000])
    done = run_cli("analyze", str(report))
    assert done.returncode == 15 and done.stderr.count("\n") == 1, done.stderr
    assert "may be damaged or cut short" in done.stderr and "newer nsys" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.nsys-rep"]  # no export, no partial file
