"""The board's own display, as GDM starts it: an X server with ``-auth`` and a cookie owned by the desktop user,
in the board's own /run. The app drawn through orchestrate on it (the agent found the cookie); without the
cookie the server refuses even root, which is what makes the test worth anything."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import nsys_stall_only, profiled_run, run_cli, write_inventory
from scenarios import ssh_args
from sshd_server import Sshd

from remote_agent import xdisplay

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (shutil.which("nsys") and shutil.which("es2gears_x11") and shutil.which("Xvfb")
                                      and shutil.which("nsenter")),
                                 reason="needs nsys, es2gears_x11, Xvfb and nsenter (the README's test command "
                                        "installs them)")]


def counted(raw: bytes) -> bytes:
    return struct.pack(">H", len(raw)) + raw


def write_cookie(path: Path, cookie: bytes, number: bytes = b"") -> None:
    """An Xauthority entry for one display number, or any (family Wild, no number), as xauth writes one."""
    path.write_bytes(struct.pack(">H", xdisplay.FAMILY_WILD) + counted(b"") + counted(number)
                     + counted(xdisplay.COOKIE.encode()) + counted(cookie))


class BoardX:
    """An X server started on the board (in its namespaces) with -auth, as a display manager starts Xorg."""

    def __init__(self, sshd: Sshd, uid: int, name: str, number: bytes = b"") -> None:
        assert sshd.process is not None
        self.board_pid = sshd.process.pid
        folder = Path(f"/run/user/{uid}/{name}")  # as the board sees it, in its private /run
        self.cookie = os.urandom(16)
        here = Path(f"/proc/{self.board_pid}/root") / folder.relative_to("/")
        here.mkdir(parents=True, exist_ok=True)
        write_cookie(here / "Xauthority", self.cookie, number)
        os.chown(here / "Xauthority", uid, uid)
        (here / "Xauthority").chmod(0o600)
        self.auth, self.auth_here = str(folder / "Xauthority"), here / "Xauthority"
        self.process = subprocess.Popen(self.on_board("Xvfb", "-displayfd", "1", "-auth", self.auth, "-noreset",
                                                      "-nolisten", "tcp", "-screen", "0", "640x480x24"),
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        self.number = int(self.process.stdout.readline())
        self.display = f":{self.number}"

    def on_board(self, *argv: str) -> list[str]:
        return ["nsenter", "-t", str(self.board_pid), "-m", "-u", "--", *argv]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def board_x(sshd, login_users):
    user = login_users["nopasswd"]
    server = BoardX(sshd, user.home.stat().st_uid, "gdm")
    yield server
    server.stop()


def profile_es2gears(tmp_path: Path, sshd: Sshd, host: dict) -> tuple[subprocess.CompletedProcess, Path | None]:
    tmp_path.mkdir(exist_ok=True)
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": host})
    done = run_cli("profile", "--target", "board", "--app", "es2gears", "--sample", "none", "--cpuctxsw", "none",
                   "--duration", "2", "--retries", "3", "--inventory", str(inventory), "--out", str(tmp_path / "runs"),
                   *ssh_args(sshd))
    runs = list((tmp_path / "runs").glob("*/run.json")) if (tmp_path / "runs").exists() else []
    return done, (runs[0].parent if runs else None)


def swaps(run_dir: Path) -> int:
    with sqlite3.connect(run_dir / "report.sqlite") as db:
        return db.execute("SELECT count(*) FROM OPENGL_API a JOIN StringIds s ON a.nameId = s.id "
                          "WHERE s.value = 'eglSwapBuffers'").fetchone()[0]


def test_the_app_draws_on_the_boards_own_display_with_the_cookie_it_was_started_with(tmp_path, sshd, login_users,
                                                                                     board_x):
    # the proof the server checks cookies: es2gears as root on the board, without the cookie, is refused
    refused = subprocess.run(board_x.on_board("env", "-u", "XAUTHORITY", f"DISPLAY={board_x.display}", "timeout",
                                              "20", "es2gears_x11"), capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "Authorization required" in refused.stderr + refused.stdout
    assert xdisplay.try_connect(board_x.number, None)[0] is False
    assert xdisplay.try_connect(board_x.number, board_x.cookie) == (True, None)

    user = login_users["nopasswd"]
    for display in (board_x.display, "auto"):
        host = user.inventory_host(sshd, ansible_become=True, orchestrate_work_dir=str(tmp_path / "work"),
                                   orchestrate_display=display, orchestrate_xvfb="never")
        done, _ = profile_es2gears(tmp_path / display.strip(":"), sshd, host)
        run_dir = profiled_run(done, tmp_path / display.strip(":") / "runs")
        record = json.loads((run_dir / "run.json").read_text())
        assert record["status"] == "ok" or nsys_stall_only(record)
        assert record["capture"]["display"] == board_x.display
        assert f"XAUTHORITY={board_x.auth}" in record["remote_command"]
        assert swaps(run_dir) > 20  # 2 s of gears on the board's own server


def test_a_display_that_refuses_us_is_one_line_with_what_to_do(tmp_path, sshd, login_users):
    """The server's file holds its cookie under another display's number: a client (and the agent) finds none
    for this display, while the server still checks it. (A removed file would not do: the X server reloads
    its -auth file as it changes, and one gone means no cookie to check.)"""
    board_x = BoardX(sshd, login_users["nopasswd"].home.stat().st_uid, "other", number=b"99")
    try:
        host = {**sshd.inventory_host(), "orchestrate_work_dir": str(tmp_path / "work"),
                "orchestrate_display": board_x.display, "orchestrate_xvfb": "auto"}
        done, _ = profile_es2gears(tmp_path, sshd, host)
    finally:
        board_x.stop()
    assert done.returncode == 7, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert f"the X server of {board_x.display} refused us (Authorization required" in line
    assert "xhost +local:" in line  # the fix; and no silent Xvfb instead of the desktop that was asked for


def test_no_x_server_and_no_xvfb_allowed_says_so(tmp_path, sshd):
    host = {**sshd.inventory_host(), "orchestrate_work_dir": str(tmp_path / "work"), "orchestrate_display": "auto",
            "orchestrate_xvfb": "never"}
    done, _ = profile_es2gears(tmp_path, sshd, host)
    assert done.returncode == 7, done.stderr
    assert "orchestrate_display is auto and no X server runs on the board" in done.stderr
