"""nsys where JetPack puts it, or nowhere: a board of its own whose /opt is its own and whose PATH has no nsys.
Each JetPack layout is made there with links to the real nsys and found by the agent; then a board with none
gets the host's install through `orchestrate nsys deploy` (through sudo), captures with it, and a deploy cut
short sends only what is missing."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import nsys_stall_only, profiled_run, run_cli, write_inventory
from scenarios import QUIET, ssh_args
from sshd_server import make_sshd

from remote_agent.nsys_locate import symlink_chain

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not shutil.which("nsys"), reason="needs nsys (the README's test command installs it)")]

HOST_NSYS = shutil.which("nsys") or "nsys"
REAL_NSYS = str(Path(HOST_NSYS).resolve())
# Debian: /usr/bin/nsys -> /usr/lib/nsight-systems/bin/nsys -> ../target-linux-x64/nsys; the board hides the bin
# folder, so that nothing on its PATH is nsys
CHAIN = symlink_chain(HOST_NSYS)
PATH_FOLDER = str(Path(CHAIN[1]).parent) if len(CHAIN) > 2 else None
INSTALL = Path(PATH_FOLDER).parent if PATH_FOLDER else None

# As each JetPack (and the host's GUI) lays nsys out on the board: see tests/data/nsys-help/SOURCES.md
LAYOUTS = {
    "JetPack 4, deployed by the host's GUI": "/opt/nvidia/nsight_systems/nsys",
    "JetPack 4.5-4.6, nsight-systems-cli 2020.5": "/opt/nvidia/nsight-systems-cli/2020.5.3/target-linux-armv8/nsys",
    "JetPack 4.6.1, nsight-systems-cli 2021.5":
        "/opt/nvidia/nsight-systems-cli/2021.5.4/target-linux-tegra-armv8/nsys",
    "JetPack 5.1, nsight-systems-2022.5.2": "/opt/nvidia/nsight-systems/2022.5.2/bin/nsys",
    "JetPack 6 without bin/": "/opt/nvidia/nsight-systems/2024.5.4/target-linux-tegra-armv8/nsys",
}


@pytest.fixture(scope="module")
def bare_board(tmp_path_factory, sshd):
    if PATH_FOLDER is None:
        pytest.skip(f"nsys at {HOST_NSYS} is not laid out as Debian's package lays it out")
    server = make_sshd(tmp_path_factory.mktemp("bare-board"), client_key=sshd.client_key, own_machine=True,
                       setup=("mount -t tmpfs tmpfs /opt", f"mount -t tmpfs tmpfs {PATH_FOLDER}"))
    server.start()
    yield server
    server.stop()


def board_path(board, path: str) -> Path:
    return Path(f"/proc/{board.process.pid}/root") / path.lstrip("/")


def doctor(tmp_path: Path, board, host: dict) -> dict:
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": host})
    done = run_cli("doctor", "--inventory", str(inventory), "--json", *ssh_args(board))
    [check] = [json.loads(line) for line in done.stdout.splitlines()]
    return check


def test_nsys_is_found_wherever_jetpack_put_it(tmp_path, bare_board):
    host = {**bare_board.inventory_host(), "orchestrate_work_dir": str(tmp_path / "work")}
    none = doctor(tmp_path, bare_board, host)
    assert none["status"] == "problems" and none["board"]["nsys"] is None
    [missing] = [f for f in none["findings"] if f["code"] == "nsys_missing"]
    assert "/opt/nvidia/nsight_systems/nsys" in missing["what"]
    assert "orchestrate nsys deploy --target <this board> --from" in missing["fix"]
    for layout, path in LAYOUTS.items():
        place = board_path(bare_board, path)
        place.parent.mkdir(parents=True)
        place.symlink_to(REAL_NSYS)
        try:
            found = doctor(tmp_path, bare_board, host)
        finally:
            shutil.rmtree(board_path(bare_board, "/opt/nvidia"))
        assert (found["board"]["nsys_path"], found["board"]["nsys"]) == (path, "2022.4.2.1"), layout
        assert found["status"] == "ok" and found["findings"] == [], (layout, found["findings"])


def test_doctor_says_when_this_machine_cannot_read_what_the_boards_nsys_writes(tmp_path, bare_board):
    """JetPack 6.1's nsys 2024.5 on the board (a stand-in that answers as it does), 2022.4 here."""
    place = board_path(bare_board, "/opt/nvidia/nsight-systems/2024.5.4/bin/nsys")
    place.parent.mkdir(parents=True)
    place.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2024.5.4.34-245434855735v0'\n")
    place.chmod(0o755)
    try:
        found = doctor(tmp_path, bare_board, {**bare_board.inventory_host(),
                                              "orchestrate_work_dir": str(tmp_path / "work")})
    finally:
        shutil.rmtree(board_path(bare_board, "/opt/nvidia"))
    assert found["board"]["nsys"] == "2024.5.4.34" and found["status"] == "ok"  # a warning: it does not block
    [warning] = [f for f in found["findings"] if f["code"] == "host_cannot_read"]
    assert warning["what"] == ("the board's nsys 2024.5.4.34 writes reports this machine's nsys 2022.4.2.1 cannot "
                               "read")
    assert warning["fix"].startswith("install Nsight Systems 2024.5.4.34 or newer here")


def host_install(folder: Path) -> Path:
    """The host's install as `--from` names it, without the CUDA profiling libraries (libcupti: 70 of its 177
    MB, never loaded by an OS-runtime capture): links to the real files, which the deploy follows."""
    assert INSTALL is not None
    target = folder / "install" / Path(REAL_NSYS).parent.name
    for path in Path(REAL_NSYS).parent.rglob("*"):
        if path.is_file() and not path.name.startswith("libcupti"):
            link = target / path.relative_to(Path(REAL_NSYS).parent)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path)
    return folder / "install"


def test_nsys_deploy_puts_the_hosts_install_where_the_gui_does_and_resumes(tmp_path, bare_board, login_users):
    source = host_install(tmp_path)
    user = login_users["nopasswd"]  # /opt is root's: the deploy goes through sudo
    host = user.inventory_host(bare_board, ansible_become=True, orchestrate_work_dir=str(tmp_path / "work"))
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": host})
    deploy = ("nsys", "deploy", "--target", "board", "--from", str(source), "--inventory", str(inventory),
              *ssh_args(bare_board))
    files = [p for p in source.rglob("*") if p.is_file()]
    first = run_cli(*deploy)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "/opt/nvidia/nsight_systems"
    assert f": {len(files)} files sent (" in first.stderr and f"all {len(files)} verified" in first.stderr
    deployed = board_path(bare_board, "/opt/nvidia/nsight_systems")
    assert (deployed / "nsys").read_bytes() == Path(REAL_NSYS).read_bytes()
    assert os.access(deployed / "nsys", os.X_OK) and deployed.stat().st_uid == 0

    # the board captures with it: found by the preflight, the report imported on the host (no importer there)
    # (without context-switch trace, as the other capture tests: with it nsys 2022.4 stalls after the app far more
    # often, and four attempts in a row once did)
    done = run_cli("profile", "--target", "board", "--app-cmd", "sleep 30", *QUIET,
                   "--duration", "2", "--retries", "3", "--inventory", str(inventory), "--out", str(tmp_path / "runs"),
                   *ssh_args(bare_board))
    run_dir = profiled_run(done, tmp_path / "runs")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["facts"]["nsys"]["path"] == "/opt/nvidia/nsight_systems/nsys"
    assert (record["status"] == "ok" or nsys_stall_only(record)) and (run_dir / "report.nsys-rep").is_file()

    again = run_cli(*deploy)
    assert again.returncode == 0 and ": 0 files sent (0.0 MB), " in again.stderr, again.stderr
    # a deploy cut short: one file half there, one missing, one left from another version
    (deployed / "libToolsInjection64.so").write_bytes(b"half")
    (deployed / "nsys-launcher").unlink()
    (deployed / "from-an-older-version.so").write_bytes(b"old")
    resumed = run_cli(*deploy)
    assert resumed.returncode == 0, resumed.stderr
    assert ": 2 files sent (" in resumed.stderr and f"{len(files) - 2} already in place, 1 old ones removed" in \
        resumed.stderr
    assert (deployed / "libToolsInjection64.so").read_bytes() == (Path(REAL_NSYS).parent
                                                                  / "libToolsInjection64.so").read_bytes()
    assert not (deployed / "from-an-older-version.so").exists()
