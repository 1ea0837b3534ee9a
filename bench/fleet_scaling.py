"""A fleet's wall time against one board's, in the same run: `orchestrate fleet` of a 3 s app on 1 board and on N
loopback boards, each board a machine of its own, and the host's CPU seconds and peak memory for each.

Each board is an sshd of its own on 127.0.0.1 in mount and UTS namespaces (its own /run, /tmp, /dev/shm and
hostname: its own capture lock), as separate boards are; the boards still share this machine's two cores, which
real boards do not: every board's agent runs on the same CPUs as the host's orchestrate. The app runs with
--no-nsys (a sleep loop: the orchestrator's own cost is all that is timed; nsys 2022.4 stalls when captures
overlap on one kernel, see the README); --nsys runs it under nsys with the OS-runtime trace instead. Rounds
alternate 1 board and N boards; medians are printed with their ratio (target: 12 boards within 2x of one), the
orchestrate process's CPU seconds per board (user + system, its threads and the ssh processes it started included)
and its peak resident memory (target: 1.2x one board's or less, at any N).

--playbook runs the same N boards through ansible-playbook too (the orchestrate.jetson collection's profile task,
strategy free, the same forks), each round right after the native fleet: wall time and the memory of each path's
whole process tree (PSS: pages shared between Ansible's forked workers counted once; the native fleet's ssh
processes counted too) side by side (target: the playbook within 1.5x of the native fleet's wall time), and
Ansible's own share: the same play whose task only holds its worker as long, without orchestrate.

    python bench/fleet_scaling.py [--boards 12,64] [--forks 16] [--duration 3] [--rounds 3] [--no-nsys | --nsys]
                                  [--playbook]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from sshd_server import Sshd, make_sshd  # noqa: E402

APP = "sh -c 'while true; do sleep 0.2; done'"
# Each board's root logs in with the stock Debian .bashrc (/etc/skel's), as a board's account has its own: this
# machine's own sources pyenv's set-up, which bash runs for every command sshd starts (0.15 CPU-s each, a dozen
# commands a run: more than everything else a board does for a run).
STOCK_SHELL = ("mount --bind /etc/skel/.bashrc /root/.bashrc",)


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_kb(pid: int) -> int:
    """The proportional memory of a process and all its descendants (shared pages counted once)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            for line in Path(f"/proc/{current}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return total


@dataclass
class Round:
    seconds: float
    cpu_s: float   # the orchestrate process's user + system CPU seconds (its children's too for a playbook)
    peak_kb: int   # its peak resident memory
    tree_kb: int = 0   # the peak PSS of its whole process tree


PLAYBOOK = """- hosts: "{{ boards }}"
  gather_facts: false
  strategy: free
  tasks:
    - orchestrate.jetson.profile:
        app_cmd: "{{ app_cmd }}"
        no_nsys: true
        duration: "{{ duration }}"
        out: "{{ out }}"
        ssh_config: "{{ ssh_config }}"
        known_hosts: "{{ known_hosts }}"
"""
# Ansible's own share: the same play whose task only holds its worker for the app's duration (a lookup on the
# controller), no orchestrate in it
WAITING = """- hosts: "{{ boards }}"
  gather_facts: false
  strategy: free
  tasks:
    - ansible.builtin.debug:
        msg: "{{ lookup('ansible.builtin.pipe', 'sleep ' ~ duration) }}"
"""


def measured(argv: list[str], what: str, env: dict[str, str]) -> Round:
    """Run one command to its end: its wall time, CPU time (its children's included), peak RSS and peak tree PSS."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    peak = tree = 0
    samples = 0
    while True:
        peak = max(peak, rss_kb(proc.pid))
        if samples % 3 == 0:  # the whole tree every 0.3 s: reading it costs a little CPU
            tree = max(tree, tree_pss_kb(proc.pid))
        samples += 1
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.1)
    seconds = time.monotonic() - started
    err = proc.stderr.read() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        # a board's internal error keeps its traceback in the fleet folder, which goes with the bench's own
        logs = "".join(Path(p).read_text() for p in set(re.findall(r"traceback in (\S+internal-errors\.log)", err))
                       if Path(p).is_file())
        raise SystemExit(f"{what} failed ({proc.returncode}): {err.strip()[-600:]}\n{logs}")
    return Round(seconds, usage.ru_utime + usage.ru_stime, peak, tree)


def playbook(limit: str, forks: int, duration: float, inventory: Path, out: Path, ssh: list[str], root: Path,
             text: str = PLAYBOOK) -> Round:
    """One ansible-playbook of the collection's profile task (or of ``text``) over the same boards."""
    book = root / "play.yml"
    book.write_text(text)
    values = {"boards": limit, "app_cmd": APP, "duration": duration, "out": str(out), "ssh_config": ssh[1],
              "known_hosts": ssh[3]}
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(book), "--forks",
            str(forks), "-e", json.dumps(values)]
    env = dict(os.environ, ANSIBLE_HOME=str(root / "ansible-home"), PYTHONWARNINGS="ignore")
    return measured(argv, f"ansible-playbook --limit {limit}", env)


def fleet(limit: str, forks: int, duration: float, inventory: Path, out: Path, ssh: list[str], nsys: bool) -> Round:
    """One `orchestrate fleet` process: its wall time, CPU time and peak memory."""
    capture = ["--trace", "osrt", "--sample", "none", "--cpuctxsw", "none"] if nsys else ["--no-nsys"]
    argv = [sys.executable, "-m", "orchestrator", "fleet", "--app-cmd", APP, *capture, "--duration", str(duration),
            "--limit", limit, "--forks", str(forks), "--inventory", str(inventory), "--out", str(out), *ssh]
    return measured(argv, f"orchestrate fleet --limit {limit}", dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="120"))


def inventory_of(servers: list[Sshd], sizes: list[int], root: Path) -> Path:
    """Every board in group 'fleet', and the first n of them in group 'first<n>' for each size."""
    hosts = {f"b{n:02d}": {**s.inventory_host(), "orchestrate_work_dir": str(root / "work" / f"b{n:02d}")}
             for n, s in enumerate(servers)}
    groups = {f"first{size}": {"hosts": {name: None for name in list(hosts)[:size]}} for size in sizes}
    path = root / "inventory.yaml"
    path.write_text(yaml.safe_dump({"all": {"children": {"fleet": {"hosts": hosts, "children": groups}}}}))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="12,64", help="fleet sizes, comma-separated (default 12,64)")
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forks", type=int, default=16, help="boards at a time at most (default 16)")
    nsys_or_not = parser.add_mutually_exclusive_group()
    nsys_or_not.add_argument("--nsys", action="store_true", help="capture under nsys instead of --no-nsys")
    nsys_or_not.add_argument("--no-nsys", dest="nsys", action="store_false",
                             help="run the app without nsys (the default)")
    parser.add_argument("--playbook", action="store_true",
                        help="also run each fleet's boards through ansible-playbook (the collection's profile task)")
    args = parser.parse_args()
    if args.playbook and args.nsys:
        parser.error("--playbook measures runs without nsys")
    sizes = [int(n) for n in args.boards.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        first = make_sshd(root / "b00", own_machine=True, setup=STOCK_SHELL)
        servers = [first] + [make_sshd(root / f"b{n:02d}", client_key=first.client_key, own_machine=True,
                                       setup=STOCK_SHELL) for n in range(1, max(sizes))]
        known = root / "known_hosts"
        known.write_text("".join(s.known_hosts.read_text() for s in servers))
        inventory = inventory_of(servers, sizes, root)
        ssh = ["--ssh-config", str(first.ssh_config), "--known-hosts", str(known)]
        results: dict[int, list[Round]] = {1: [], **{size: [] for size in sizes}}
        played: dict[int, list[Round]] = {size: [] for size in sizes}
        waited: dict[int, list[Round]] = {size: [] for size in sizes}
        for server in servers:
            server.start()
        try:
            fleet("fleet", args.forks, 1, inventory, root / "warm", ssh, args.nsys)  # every agent goes up, untimed
            for round_ in range(args.rounds):
                for size in sizes:
                    results[1].append(fleet("b00", 1, args.duration, inventory, root / f"one{size}-{round_}", ssh,
                                            args.nsys))
                    results[size].append(fleet(f"first{size}", min(size, args.forks), args.duration, inventory,
                                               root / f"many{size}-{round_}", ssh, args.nsys))
                    one, many = results[1][-1], results[size][-1]
                    print(f"round {round_ + 1}: 1 board {one.seconds:.1f} s, {size} boards {many.seconds:.1f} s "
                          f"({many.cpu_s / size:.2f} CPU-s and {many.peak_kb / 1024:.0f} MB peak)", flush=True)
                    if args.playbook:
                        played[size].append(playbook(f"first{size}", min(size, args.forks), args.duration,
                                                     inventory, root / f"play{size}-{round_}", ssh, root))
                        waited[size].append(playbook(f"first{size}", min(size, args.forks), args.duration,
                                                     inventory, root / "unused", ssh, root, WAITING))
                        book, wait = played[size][-1], waited[size][-1]
                        print(f"round {round_ + 1}: {size} boards by ansible-playbook {book.seconds:.1f} s "
                              f"({book.cpu_s / size:.2f} CPU-s, tree {book.tree_kb / 1024:.0f} MB against the "
                              f"fleet's {many.tree_kb / 1024:.0f} MB; Ansible's own {wait.tree_kb / 1024:.0f} MB)",
                              flush=True)
        finally:
            for server in servers:
                server.kill_all()
    base = statistics.median(r.seconds for r in results[1])
    base_cpu = statistics.median(r.cpu_s for r in results[1])
    base_kb = max(r.peak_kb for r in results[1])
    mode = "under nsys" if args.nsys else "--no-nsys"
    print(f"1 board:   {base:.1f} s, {base_cpu:.2f} CPU-s, peak {base_kb / 1024:.0f} MB "
          f"(median of {len(results[1])}; {mode}, --duration {args.duration:g})")
    for size in sizes:
        wall = statistics.median(r.seconds for r in results[size])
        cpu = statistics.median(r.cpu_s for r in results[size])
        peak = max(r.peak_kb for r in results[size])
        wall_target = " (target: 2x or less)" if size <= 12 else ""
        print(f"{size} boards (--forks {min(size, args.forks)}): {wall:.1f} s = {wall / base:.2f}x one board"
              f"{wall_target}; host CPU {cpu:.1f} s = {cpu / size:.2f} s per board; peak {peak / 1024:.0f} MB "
              f"= {peak / base_kb:.2f}x one board's (target: 1.2x or less; "
              f"{(peak - base_kb) / 1024 / max(size - 1, 1):.2f} MB per further board)")
        if played[size]:
            book_wall = statistics.median(r.seconds for r in played[size])
            book_cpu = statistics.median(r.cpu_s for r in played[size])
            fleet_tree = max(r.tree_kb for r in results[size])
            book_tree = max(r.tree_kb for r in played[size])
            print(f"{size} boards by ansible-playbook (strategy free, --forks {min(size, args.forks)}): "
                  f"{book_wall:.1f} s = {book_wall / wall:.2f}x orchestrate fleet's {wall:.1f} s (target: 1.5x or "
                  f"less); CPU {book_cpu:.1f} s against {cpu:.1f} s; memory (PSS of the process tree, peak) "
                  f"{book_tree / 1024:.0f} MB against {fleet_tree / 1024:.0f} MB = {book_tree / fleet_tree:.2f}x, of "
                  f"which Ansible's own (the play with a task that only waits) "
                  f"{max(r.tree_kb for r in waited[size]) / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
