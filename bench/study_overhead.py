"""A study's overhead per run against single `orchestrate profile` runs of the same app, in the same run.

Starts a real sshd on 127.0.0.1 (generated keys, root by key) and alternates, for a few rounds:
- the baseline: `orchestrate profile` of a loop app (OS-runtime trace, 2 s), REPEAT times, each run its own
  process, connection and agent check, as one types it by hand;
- the study: `orchestrate study` of the same app with `repeat: REPEAT`: one process, one connection, one
  agent deployment, the same runs.
It prints the median seconds per run of each and their ratio; the target is a study within 5 % of the
single runs (1.05x or less): a study adds the reuse scan, study.json and study.html, and saves a
connection and an agent check per run.

    python bench/study_overhead.py [--repeat 4] [--rounds 3]
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

from sshd_server import make_sshd  # noqa: E402

APP = "sh -c 'while true; do sleep 0.2; done'"
TRACE = ["--trace", "osrt", "--sample", "none", "--cpuctxsw", "none", "--duration", "2"]


def orchestrate(*args: str) -> float:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "orchestrator", *args], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    seconds = time.monotonic() - started
    if done.returncode not in (0, 11):  # 11: nsys stalled around its report and said so; the run still counts
        raise SystemExit(f"orchestrate {args[0]} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        server = make_sshd(root / "sshd")
        server.start()
        try:
            inventory = root / "inventory.yaml"
            inventory.write_text(yaml.safe_dump({"all": {"hosts": {"board": {
                **server.inventory_host(), "orchestrate_work_dir": str(root / "work")}}}}))
            study = root / "loop.yaml"
            study.write_text(yaml.safe_dump({"study": "loop", "command": ["sh", "-c", APP.split("'")[1]],
                                             "repeat": args.repeat, "duration_s": 2, "trace": ["osrt"],
                                             "sample": "none", "cpuctxsw": "none"}))
            ssh = ["--ssh-config", str(server.ssh_config), "--known-hosts", str(server.known_hosts)]
            single, studied = [], []
            orchestrate("profile", "--target", "board", "--app-cmd", APP, *TRACE, "--inventory", str(inventory),
                        "--out", str(root / "warm"), *ssh)  # the agent goes up once before any timing
            for round_ in range(args.rounds):
                total = sum(orchestrate("profile", "--target", "board", "--app-cmd", APP, *TRACE, "--inventory",
                                        str(inventory), "--out", str(root / f"single{round_}"), *ssh)
                            for _ in range(args.repeat))
                single.append(total / args.repeat)
                studied.append(orchestrate("study", str(study), "--target", "board", "--inventory", str(inventory),
                                           "--out", str(root / f"study{round_}"), "--fresh", *ssh) / args.repeat)
                print(f"round {round_ + 1}: profile {single[-1]:.2f} s/run, study {studied[-1]:.2f} s/run",
                      flush=True)
        finally:
            server.kill_all()
    base, mine = statistics.median(single), statistics.median(studied)
    print(f"single profile runs: {base:.2f} s per run (median of {args.rounds} rounds of {args.repeat})")
    print(f"study runs:          {mine:.2f} s per run")
    print(f"ratio study/profile: {mine / base:.3f}x (target: 1.05x or less)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
