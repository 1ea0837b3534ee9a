"""A fleet's wall time against one board's, in the same run: `orchestrate fleet` of a light app on 1 and on N
loopback boards (real sshd, real nsys), and the host's peak memory for each.

Each board is an sshd of its own on 127.0.0.1 with a /run and /dev/shm of its own (a mount namespace), so that
each has its own capture lock as separate boards do; the boards still share this machine's cores, which real
boards do not: every board's nsys, import and the host's export and analysis of its report run on the same CPUs.
The light app sleeps in a loop under the OS-runtime trace (no sampling, no context switches), so the capture
itself costs little CPU. Rounds alternate 1 board and N boards; medians are printed with their ratio (target:
N boards within 2x of one) and the peak resident memory of the orchestrate process (target: flat in N).

    python bench/fleet_scaling.py [--boards 16] [--forks 16] [--duration 10] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from sshd_server import Sshd, make_sshd  # noqa: E402

APP = "sh -c 'while true; do sleep 0.2; done'"


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def fleet(limit: str, forks: int, duration: float, inventory: Path, out: Path, ssh: list[str]) -> tuple[float, int]:
    """Seconds and peak resident memory (kB) of one `orchestrate fleet` process."""
    argv = [sys.executable, "-m", "orchestrator", "fleet", "--app-cmd", APP, "--trace", "osrt", "--sample", "none",
            "--cpuctxsw", "none", "--duration", str(duration), "--limit", limit, "--forks", str(forks),
            "--inventory", str(inventory), "--out", str(out), *ssh]
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="120"))
    peak = 0
    while proc.poll() is None:
        peak = max(peak, rss_kb(proc.pid))
        time.sleep(0.1)
    seconds = time.monotonic() - started
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"orchestrate fleet --limit {limit} failed ({proc.returncode}): {err.strip()[-600:]}")
    return seconds, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=16)
    parser.add_argument("--forks", type=int, default=16)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        servers: list[Sshd] = []
        first = make_sshd(root / "b00", own_machine=True)
        servers.append(first)
        for n in range(1, args.boards):
            servers.append(make_sshd(root / f"b{n:02d}", client_key=first.client_key, own_machine=True))
        known = root / "known_hosts"
        known.write_text("".join(s.known_hosts.read_text() for s in servers))
        hosts = {f"b{n:02d}": {**s.inventory_host(), "orchestrate_work_dir": str(root / "work" / f"b{n:02d}")}
                 for n, s in enumerate(servers)}
        inventory = root / "inventory.yaml"
        inventory.write_text(yaml.safe_dump({"all": {"children": {"fleet": {"hosts": hosts}}}}))
        ssh = ["--ssh-config", str(first.ssh_config), "--known-hosts", str(known)]
        for server in servers:
            server.start()
        try:
            fleet("fleet", args.forks, 2, inventory, root / "warm", ssh)  # every agent goes up once, untimed
            one, many, one_kb, many_kb = [], [], [], []
            for round_ in range(args.rounds):
                seconds, kb = fleet("b00", 1, args.duration, inventory, root / f"one{round_}", ssh)
                one.append(seconds)
                one_kb.append(kb)
                seconds, kb = fleet("fleet", args.forks, args.duration, inventory, root / f"many{round_}", ssh)
                many.append(seconds)
                many_kb.append(kb)
                print(f"round {round_ + 1}: 1 board {one[-1]:.1f} s ({one_kb[-1] / 1024:.0f} MB), {args.boards} "
                      f"boards {many[-1]:.1f} s ({many_kb[-1] / 1024:.0f} MB)", flush=True)
        finally:
            for server in servers:
                server.kill_all()
    base, mine = statistics.median(one), statistics.median(many)
    print(f"1 board:   {base:.1f} s, peak {max(one_kb) / 1024:.0f} MB (median of {args.rounds} rounds)")
    print(f"{args.boards} boards: {mine:.1f} s, peak {max(many_kb) / 1024:.0f} MB (--forks {args.forks}, "
          f"--duration {args.duration:g})")
    print(f"ratio: {mine / base:.2f}x the wall time of one board (target 2x or less); memory "
          f"{max(many_kb) / max(max(one_kb), 1):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
