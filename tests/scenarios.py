"""Runs captured once per test session and read by every test that asks something of that kind of run
(``workers.once``: the first test of any worker that needs one makes it). Each maker returns what the tests
read (the command's exit status and output, the run folder, the board's files), as JSON; it checks itself that
nothing of nsys's was left in the board's /tmp, since no single test's own check sees a shared run's capture.

- ``ordinary``: a sleep loop on the worker's board, its work dir named with spaces and quotes, an environment
  value that looks like a secret, and an nsys with no importer beside it (the host imports the raw capture).
- ``interrupted_nano``: a Jetson Nano's capture with its clocks locked (mode 1), Ctrl-C on the host 4 s after
  the app started.
- ``abandoned_nano``: the same, with the host process killed 2 s after (heartbeat timeout 3 s), then ``fetch``.
- ``failing_app_nano``: an app that prints the clocks it sees, then exits with status 3 after 2 s, on a Nano
  with its clocks locked.
- ``es2gears_here``: es2gears on this machine (the local target), 7 s, its FPS line kept.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from fake_board import lay_out
from sshd_server import Sshd

REPO = Path(__file__).resolve().parent.parent
LOOP = "while true; do sleep 0.2; done"
QUIET = ("--trace", "osrt", "--sample", "none", "--cpuctxsw", "none")
SECRET = "s3cr3t-Value-917"
CPU0_MIN = "sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq"
GPU_MIN = "sys/class/devfreq/57000000.gpu/min_freq"


def ssh_args(sshd: Sshd) -> list[str]:
    return ["--ssh-config", str(sshd.ssh_config), "--known-hosts", str(sshd.known_hosts)]


def board(sshd: Sshd, work_dir: Path, **extra: object) -> dict[str, object]:
    return {**sshd.inventory_host(), "orchestrate_work_dir": str(work_dir), **extra}


def write_inventory(path: Path, hosts: dict[str, dict]) -> Path:
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return path


def cli_env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="120", **extra)


def as_from_a_terminal() -> None:
    """A command started from a terminal takes Ctrl-C. A test runner started in the background by a
    non-interactive shell ignores SIGINT, and children inherit the ignoring: give it back."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


STARTED: list[subprocess.Popen] = []  # this worker's commands in the background, ended after each test


def start_cli(*args: str, cwd: Path = REPO) -> subprocess.Popen:
    """The command line in the background, as from a terminal (it takes Ctrl-C). A test that fails before it
    waits for it leaves it to ``end_started``."""
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator", *args], cwd=cwd, env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)
    STARTED.append(proc)
    return proc


def end_started() -> None:
    """Kill what start_cli started and nobody waited for (its test failed first), and reap it."""
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def run_cli(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrator", *args], cwd=cwd, env=cli_env(),
                          capture_output=True, text=True, timeout=timeout)


def wait_for_stage(runs: Path, stage: str, timeout_s: float = 60) -> Path:
    """The run folder under runs whose run.json first says stage."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for run_json in runs.glob("*/run.json"):
            try:
                if json.loads(run_json.read_text()).get("stage") == stage:
                    return run_json.parent
            except ValueError:
                pass
        time.sleep(0.1)
    raise AssertionError(f"no run reached stage {stage}")


def wait_for_app(run_dir: Path, timeout_s: float = 60) -> None:
    """Until the capture's app has started on the board (its pid file there, which the launch wrapper writes
    as it becomes the app): on a loaded machine nsys, or the clocks' lock before it, can take seconds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            remote = Path(json.loads((run_dir / "run.json").read_text())["remote"]["run_dir"])
            if (remote / "app.pid").read_text().strip():
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"the app of {run_dir.name} never started")


def clock_app(root: Path, then: str) -> str:
    """Prints what the app sees of the board's clocks and power mode as it starts, then `then`."""
    return (f"sh -c 'cat {root}/{CPU0_MIN} {root}/{GPU_MIN}; cat {root}/var/lib/nvpmodel/status 2>/dev/null "
            f"|| echo default; {then}'")


def nano_board(folder: Path, sshd: Sshd, kind: str = "nano") -> dict[str, Any]:
    """A Jetson Nano (or another kind of tests/fake_board.py) laid out from real files, on the worker's board."""
    root = lay_out(folder / f"{kind}-files", kind)
    work = folder / "work"
    inventory = write_inventory(folder / "inventory.yaml", {kind: {
        **sshd.inventory_host(), "orchestrate_work_dir": str(work), "orchestrate_board_root": str(root)}})
    return {"root": str(root), "work": str(work), "runs": str(folder / "runs"),
            "args": ["--target", kind, "--inventory", str(inventory), "--out", str(folder / "runs"),
                     *ssh_args(sshd)]}


def completed(done: subprocess.CompletedProcess | subprocess.Popen, out: str, err: str) -> dict[str, Any]:
    return {"returncode": done.returncode, "stdout": out, "stderr": err}


def ordinary(folder: Path, sshd: Sshd) -> dict[str, Any]:
    apps = folder / "apps"
    apps.mkdir()
    (apps / "withsecret.yaml").write_text(
        "name: withsecret\n"
        f"command: [sh, -c, 'printf %s \"$API_TOKEN\" | sha256sum; {LOOP}']\n"
        f"env: {{API_TOKEN: {SECRET}, PLAIN_SETTING: visible-value}}\n"
        "trace: [osrt]\nsample: none\ncpuctxsw: none\nduration_s: 2\n")
    bin_dir = folder / "bare-nsys" / "bin"  # an nsys with no QdstrmImporter anywhere near it
    bin_dir.mkdir(parents=True)
    (bin_dir / "nsys").write_text(f'#!/bin/sh\nexec {Path("/usr/bin/nsys").resolve()} "$@"\n')
    (bin_dir / "nsys").chmod(0o755)
    work = folder / "orch w's \"dir\""
    inventory = write_inventory(folder / "inventory.yaml",
                                {"board": board(sshd, work, orchestrate_nsys=str(bin_dir / "nsys"))})
    done = run_cli("profile", "--target", "board", "--app", "withsecret", "--apps-dir", str(apps), "--inventory",
                   str(inventory), "--out", str(folder / "runs"), *ssh_args(sshd))
    return {**completed(done, done.stdout, done.stderr), "work": str(work), "runs": str(folder / "runs")}


def interrupted_nano(folder: Path, sshd: Sshd) -> dict[str, Any]:
    nano = nano_board(folder, sshd)
    root = Path(nano["root"])
    proc = start_cli("profile", "--app-cmd", clock_app(root, "exec sleep 60"), *QUIET, "--duration", "20",
                     "--lock-clocks", "--nvpmodel", "1", *nano["args"])
    run_dir = wait_for_stage(Path(nano["runs"]), "capturing")
    wait_for_app(run_dir)
    time.sleep(2)
    held = (root / CPU0_MIN).read_text()
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    return {**completed(proc, out, err), **nano, "run_dir": str(run_dir), "clock_during": held}


def abandoned_nano(folder: Path, sshd: Sshd) -> dict[str, Any]:
    nano = nano_board(folder, sshd)
    root = Path(nano["root"])
    proc = start_cli("profile", "--app-cmd", clock_app(root, "exec sleep 60"), *QUIET, "--duration", "30",
                     "--lock-clocks", "--nvpmodel", "1", "--heartbeat-timeout", "3", *nano["args"])
    run_dir = wait_for_stage(Path(nano["runs"]), "capturing")
    wait_for_app(run_dir)
    time.sleep(1)
    held = (root / CPU0_MIN).read_text()
    time.sleep(1)
    proc.kill()  # the host vanishes: no clean-up of any kind on this side
    proc.communicate(timeout=30)
    # the board hears nothing more: it ends the capture and gives the clocks back on its own (a fetch before
    # that would re-attach and let the capture run its course)
    remote = Path(json.loads((run_dir / "run.json").read_text())["remote"]["run_dir"])
    deadline = time.monotonic() + 60
    while json.loads((remote / "state.json").read_text()).get("stage") != "ended" and time.monotonic() < deadline:
        time.sleep(0.2)
    clock_after = (root / CPU0_MIN).read_text()
    fetched = run_cli("fetch", str(run_dir), *nano["args"][2:4], *ssh_args(sshd))  # the Nano's inventory
    return {**completed(fetched, fetched.stdout, fetched.stderr), **nano, "run_dir": str(run_dir),
            "clock_during": held, "clock_before_fetch": clock_after}


def failing_app_nano(folder: Path, sshd: Sshd) -> dict[str, Any]:
    nano = nano_board(folder, sshd)
    # the app runs 2 s before failing: nsys 2022.4 sometimes hangs when the app ends within its first second
    done = run_cli("profile", "--app-cmd", clock_app(Path(nano["root"]), "sleep 2; echo boom >&2; exit 3"), *QUIET,
                   "--duration", "5", "--lock-clocks", *nano["args"])
    return {**completed(done, done.stdout, done.stderr), **nano}


def es2gears_here(folder: Path) -> dict[str, Any]:
    """The built-in spec, with es2gears's stdout line-buffered so that its FPS line (every 5 s) survives the
    SIGTERM at the end; --retries 3: CPU sampling with context switches, with which nsys 2022.4 now and then
    stalls writing its report."""
    from orchestrator.inventory.catalog import BUILTIN_DIR
    apps = folder / "apps"
    apps.mkdir()
    spec = yaml.safe_load((BUILTIN_DIR / "es2gears.yaml").read_text())
    (apps / "es2gears-fps.yaml").write_text(yaml.safe_dump({**spec, "name": "es2gears-fps",
                                                            "command": ["stdbuf", "-oL", *spec["command"]]}))
    inventory = write_inventory(folder / "inventory.yaml", {"here": {
        "ansible_connection": "local", "orchestrate_work_dir": str(folder / "work")}})
    done = run_cli("profile", "--target", "here", "--app", "es2gears-fps", "--apps-dir", str(apps), "--duration",
                   "7", "--retries", "3", "--inventory", str(inventory), "--out", str(folder / "runs"))
    return {**completed(done, done.stdout, done.stderr), "runs": str(folder / "runs")}


MAKERS: dict[str, Callable[..., dict[str, Any]]] = {
    "ordinary": ordinary, "interrupted_nano": interrupted_nano, "abandoned_nano": abandoned_nano,
    "failing_app_nano": failing_app_nano}
