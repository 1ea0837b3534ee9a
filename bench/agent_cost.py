"""What the agent costs the board during a real capture: all of its processes together (the capture's supervisor
and the follower of the host's channel), read from /proc while `orchestrate profile` captures over SSH.
On a Jetson the board's samples come from tegrastats, a process of the board's own that the agent starts: not
counted here (this machine has none: the supervisor reads the same figures from sysfs every 200 ms, and that is).

A real sshd on 127.0.0.1 is the board. The app is a sleep loop, so that what the board spends beside it is the
agent's and nsys's; --app-cmd runs another. Every 0.5 s while run.json says "capturing", the bench reads each
agent process (a command line naming the agent's archive): its CPU ticks (user + system) and its memory
(proportional set size, PSS: the pages two agent processes share counted once, as the board pays for them;
and the resident set, RSS, each process counted whole). It prints, per round and as medians, the agent's share of
one core over the capture (target: 1 % or less) and its peak memory (target: 30 MB or less), with nsys's own
processes' share beside them (the baseline measured in the same run: what the capture costs anyway).

    python bench/agent_cost.py [--rounds 3] [--duration 20] [--no-nsys] [--app-cmd CMD]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from sshd_server import make_sshd  # noqa: E402

APP = "sh -c 'while true; do sleep 0.2; done'"
TICK_S = os.sysconf("SC_CLK_TCK")
AGENT_MARK = "orchestrate-agent-"
# the agent's processes during a capture: the supervisor (forked by 'launch', whose command line it keeps) and the
# follower of the host's channel ('attach'); the short calls around the capture (board_state, remove) are not
CAPTURE_COMMANDS = ("launch", "attach")
# seconds into the capture before the looks start: the follower's own start (a Python interpreter's, ~0.1 CPU
# seconds once a capture) is not what it costs while the capture runs
SETTLE_S = 2.0


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def cpu_ticks(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[11]) + int(fields[12])  # utime, stime


def memory_kb(pid: int) -> tuple[int, int]:
    """(PSS, RSS) in kB, from smaps_rollup."""
    pss = rss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
    except OSError:
        pass
    return pss, rss


@dataclass
class Watch:
    """CPU ticks per process (first and last seen) and the peak memory of the agent's processes together."""
    first: dict[int, int] = field(default_factory=dict)
    last: dict[int, int] = field(default_factory=dict)
    nsys_first: dict[int, int] = field(default_factory=dict)
    nsys_last: dict[int, int] = field(default_factory=dict)
    peak_pss_kb: int = 0
    peak_rss_kb: int = 0
    agent_pids: set[int] = field(default_factory=set)
    commands: dict[int, str] = field(default_factory=dict)

    def look(self) -> None:
        pss = rss = 0
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            line = cmdline(pid)
            if AGENT_MARK in line and line.split()[-1] in CAPTURE_COMMANDS:
                ticks = cpu_ticks(pid)
                if ticks is None:
                    continue
                self.first.setdefault(pid, ticks)
                self.last[pid] = ticks
                self.agent_pids.add(pid)
                self.commands[pid] = line.split()[-1]
                p, r = memory_kb(pid)
                pss, rss = pss + p, rss + r
            elif "nsys" in line.split(" ", 1)[0] or "/nsys" in line.split(" ", 1)[0]:
                ticks = cpu_ticks(pid)
                if ticks is not None:
                    self.nsys_first.setdefault(pid, ticks)
                    self.nsys_last[pid] = ticks
        self.peak_pss_kb = max(self.peak_pss_kb, pss)
        self.peak_rss_kb = max(self.peak_rss_kb, rss)

    def agent_cpu_s(self) -> float:
        return sum(self.last[p] - self.first[p] for p in self.last) / TICK_S

    def by_command(self) -> dict[str, float]:
        """CPU seconds per agent command (the supervisor counts as 'launch')."""
        found: dict[str, float] = {}
        for pid in self.last:
            name = self.commands[pid]
            found[name] = found.get(name, 0.0) + (self.last[pid] - self.first[pid]) / TICK_S
        return found

    def nsys_cpu_s(self) -> float:
        return sum(self.nsys_last[p] - self.nsys_first[p] for p in self.nsys_last) / TICK_S


def stage(out: Path) -> str | None:
    runs = list(out.glob("*/run.json"))
    if not runs:
        return None
    try:
        return json.loads(runs[0].read_text()).get("stage")
    except (OSError, ValueError):
        return None


def one_round(inventory: Path, out: Path, ssh: list[str], app: str, duration: float, nsys: bool) -> tuple[Watch, float]:
    capture = ["--trace", "osrt", "--sample", "none", "--cpuctxsw", "none"] if nsys else ["--no-nsys"]
    argv = [sys.executable, "-m", "orchestrator", "profile", "--target", "board", "--app-cmd", app, *capture,
            "--duration", str(duration), "--inventory", str(inventory), "--out", str(out), *ssh]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="120"))
    watch, capturing, began, ended = Watch(), None, None, None
    while proc.poll() is None:
        if stage(out) == "capturing":
            capturing = capturing or time.monotonic()
            if time.monotonic() - capturing >= SETTLE_S:  # the follower has started: the steady state
                watch.look()
                began = began or time.monotonic()
                ended = time.monotonic()
        time.sleep(0.5)
    _, err = proc.communicate()
    if proc.returncode != 0 or began is None or ended is None:
        raise SystemExit(f"orchestrate profile failed ({proc.returncode}): {err.strip()[-600:]}")
    return watch, ended - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--no-nsys", action="store_true", help="run the app without nsys")
    parser.add_argument("--app-cmd", default=APP)
    args = parser.parse_args()
    shares, nsys_shares, pss, rss = [], [], [], []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        server = make_sshd(root / "board")
        inventory = root / "inventory.yaml"
        inventory.write_text(yaml.safe_dump({"all": {"hosts": {"board": {
            **server.inventory_host(), "orchestrate_work_dir": str(root / "work")}}}}))
        ssh = ["--ssh-config", str(server.ssh_config), "--known-hosts", str(server.known_hosts)]
        server.start()
        try:
            for round_ in range(args.rounds):
                watch, window = one_round(inventory, root / f"runs{round_}", ssh, args.app_cmd, args.duration,
                                          not args.no_nsys)
                shares.append(100 * watch.agent_cpu_s() / window)
                nsys_shares.append(100 * watch.nsys_cpu_s() / window)
                pss.append(watch.peak_pss_kb / 1024)
                rss.append(watch.peak_rss_kb / 1024)
                parts = ", ".join(f"{name} {100 * cpu / window:.2f} %" for name, cpu in watch.by_command().items())
                print(f"round {round_ + 1}: {window:.1f} s capturing; agent ({parts}) "
                      f"{shares[-1]:.2f} % of a core, peak PSS {pss[-1]:.1f} MB, RSS {rss[-1]:.1f} MB; nsys "
                      f"{nsys_shares[-1]:.1f} % of a core", flush=True)
        finally:
            server.kill_all()
    share, nsys_share = statistics.median(shares), statistics.median(nsys_shares)
    print(f"agent: {share:.2f} % of one core (target 1 % or less: {share / 1.0:.2f}x the target), peak PSS "
          f"{statistics.median(pss):.1f} MB (target 30 MB: {statistics.median(pss) / 30:.2f}x), RSS "
          f"{statistics.median(rss):.1f} MB; median of {args.rounds} rounds")
    if not args.no_nsys:
        print(f"nsys in the same captures: {nsys_share:.1f} % of one core; the agent costs "
              f"{share / max(nsys_share, 1e-9):.3f}x what nsys does")
    return 0


if __name__ == "__main__":
    sys.exit(main())
