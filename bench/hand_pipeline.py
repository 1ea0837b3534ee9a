"""One capture through orchestrate against the same capture by hand, side by side in the same run.

The board is an sshd on 127.0.0.1 that is a machine of its own (its own /run, /tmp, /dev/shm and hostname; root
logs in with the stock Debian .bashrc) with its own X display already up (an Xvfb started in its namespaces), as
a board's desktop is. Each round does both, in turns that alternate which goes first:

- by hand (the baseline), what one types at the host to get nsys's tables of one capture:
    ssh board 'nsys profile --trace=opengl,osrt --sample=none --cpuctxsw=none -o /tmp/hand/r timeout 3 es2gears_x11'
    scp board:/tmp/hand/r.nsys-rep .
    nsys export --type sqlite -o r.sqlite r.nsys-rep
    nsys stats r.sqlite
  (the app is ended by `timeout`, not nsys's --duration, whose timer leaves nsys 2022.4 stuck in "Generating" in
  about a third of es2gears runs: the orchestrate side ends it the same way, a SIGTERM at 3 s);
- orchestrate: `orchestrate profile --target board --app es2gears --duration 3 --sample none`, which on top
  connects, checks its agent, runs preflight (board facts, nsys found, the display's access), locks the board,
  supervises the capture detached from the link, samples the board's telemetry, pulls the report and the app's
  output verified by sha256, removes them from the board, exports to SQLite, analyzes (frames, the hot path,
  the verdict) and writes report.html.

nsys on one kernel stalls now and then after the app ends; a round in which either side saw a stall (by hand:
nothing after 3 + 30 s; orchestrate: a capture it made again) is said and done again, up to --rounds more times,
so that the medians compare captures that went as they should. It prints each round, the medians, their ratio
(target: orchestrate within 1.05x the hand pipeline) and where orchestrate's time went (run.json's phases).

    python bench/hand_pipeline.py [--rounds 5] [--duration 3]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
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

TARGET_RATIO = 1.05
STOCK_SHELL = ("mount --bind /etc/skel/.bashrc /root/.bashrc",)
STALL_S = 30.0  # past the capture's end: the hand side's nsys is taken as stalled
# Debian's nsys 2022.4 leaves a .qdstrm that its importer turns into the report (JetPack's nsys runs it itself)
IMPORTER = next(iter(glob.glob("/usr/lib/nsight-systems/host-linux-*/QdstrmImporter")), "QdstrmImporter")
ENV = "vblank_mode=0 __GL_SYNC_TO_VBLANK=0"  # the built-in es2gears spec's environment


class Stalled(Exception):
    pass


def board_display(server: Sshd) -> subprocess.Popen[str]:
    """An Xvfb in the board's namespaces, as the board's own desktop."""
    assert server.process is not None
    x = subprocess.Popen(["nsenter", "-t", str(server.process.pid), "-m", "-u", "--", "Xvfb", "-displayfd", "1",
                          "-nolisten", "tcp", "-noreset", "-screen", "0", "640x480x24"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert x.stdout is not None
    x.display = f":{int(x.stdout.readline())}"  # type: ignore[attr-defined]
    return x


class Hand:
    """The four commands one types, with the board's ssh options."""

    def __init__(self, server: Sshd, display: str, host_dir: Path, duration: float) -> None:
        self.options = ["-F", str(server.ssh_config), "-i", str(server.client_key), "-o",
                        f"UserKnownHostsFile={server.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                        "-o", "BatchMode=yes"]
        self.server, self.display, self.host_dir, self.duration = server, display, host_dir, duration

    def run(self, name: str) -> dict[str, float]:
        """Seconds per step."""
        started = time.monotonic()
        steps: dict[str, float] = {}
        remote = f"/tmp/hand/{name}"
        capture = (f"mkdir -p /tmp/hand && DISPLAY={self.display} {ENV} nsys profile --trace=opengl,osrt "
                   f"--sample=none --cpuctxsw=none --force-overwrite=true -o {remote} "
                   f"timeout {self.duration:g} es2gears_x11; {IMPORTER} -i {remote}.qdstrm")
        ssh = ["ssh", *self.options, "-p", str(self.server.port), "root@127.0.0.1", capture]
        try:
            ended = subprocess.run(ssh, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   timeout=self.duration + STALL_S)
        except subprocess.TimeoutExpired:
            self.end_stalled()
            raise Stalled() from None
        steps["ssh + nsys profile + import"] = time.monotonic() - started
        if ended.returncode != 0:
            raise SystemExit(f"by hand: the import of nsys's capture exited {ended.returncode}")
        report = self.host_dir / f"{name}.nsys-rep"
        subprocess.run(["scp", "-q", *self.options, "-P", str(self.server.port),
                        f"root@127.0.0.1:{remote}.nsys-rep", str(report)], check=True)
        steps["scp"] = time.monotonic() - started - sum(steps.values())
        sqlite = self.host_dir / f"{name}.sqlite"
        subprocess.run(["nsys", "export", "--type", "sqlite", "-o", str(sqlite), str(report)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        steps["nsys export"] = time.monotonic() - started - sum(steps.values())
        subprocess.run(["nsys", "stats", str(sqlite)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        steps["nsys stats"] = time.monotonic() - started - sum(steps.values())
        return steps

    def end_stalled(self) -> None:
        """What one does by hand after a stall: Ctrl-C, and kill what nsys left behind."""
        subprocess.run(["ssh", *self.options, "-p", str(self.server.port), "root@127.0.0.1",
                        "pkill -KILL -f 'nsys|es2gears' ; rm -rf /tmp/hand"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)


def orchestrate(inventory: Path, out: Path, ssh: list[str], duration: float) -> tuple[float, dict]:
    argv = [sys.executable, "-m", "orchestrator", "profile", "--target", "board", "--app", "es2gears",
            "--duration", f"{duration:g}", "--sample", "none", "--inventory", str(inventory), "--out", str(out),
            *ssh]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="120"))
    seconds = time.monotonic() - started
    runs = sorted(out.glob("*/run.json"))
    run = json.loads(runs[-1].read_text()) if runs else {}
    if done.returncode == 3 or run.get("capture_attempts"):  # stalled (and made again, or given up)
        raise Stalled()
    if done.returncode != 0:
        raise SystemExit(f"orchestrate profile failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    return seconds, run


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=3.0)
    args = parser.parse_args()
    if not (shutil.which("nsys") and shutil.which("es2gears_x11") and shutil.which("Xvfb")):
        raise SystemExit("needs nsys, es2gears_x11 and Xvfb: run the README's test command first, which installs "
                         "them")
    # orchestrate's bytecode written, as an install writes it (scripts/setup.sh does; an editable install does not)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "orchestrator"), str(REPO / "remote_agent")],
                   check=True)
    hand_s: list[float] = []
    tool_s: list[float] = []
    phases: list[dict[str, float]] = []
    steps: list[dict[str, float]] = []
    stalls = {"by hand": 0, "orchestrate": 0}
    with tempfile.TemporaryDirectory(prefix="orchestrate-bench-") as folder:
        root = Path(folder)
        server = make_sshd(root / "board", own_machine=True, setup=STOCK_SHELL)
        server.start()
        x = board_display(server)
        display = x.display  # type: ignore[attr-defined]
        inventory = root / "inventory.yaml"
        inventory.write_text(yaml.safe_dump({"all": {"hosts": {"board": {
            **server.inventory_host(), "orchestrate_display": display}}}}))
        ssh = ["--ssh-config", str(server.ssh_config), "--known-hosts", str(server.known_hosts)]
        host_dir = root / "hand"
        host_dir.mkdir()
        hand = Hand(server, display, host_dir, args.duration)
        try:
            for warm in range(3):  # the agent uploaded, nsys's first start, the page cache: untimed
                try:
                    hand.run(f"warm{warm}")
                    orchestrate(inventory, root / "warm", ssh, args.duration)
                    break
                except Stalled:
                    continue
            done = tries = 0
            while done < args.rounds and tries < 2 * args.rounds:
                tries += 1
                pair: dict[str, float] = {}
                by_hand: dict[str, float] = {}
                try:
                    for side in (("hand", "tool") if tries % 2 else ("tool", "hand")):
                        if side == "hand":
                            by_hand = hand.run(f"r{tries}")
                            pair[side] = sum(by_hand.values())
                        else:
                            pair[side], run = orchestrate(inventory, root / f"runs{tries}", ssh, args.duration)
                except Stalled:
                    stalls["by hand" if side == "hand" else "orchestrate"] += 1
                    print(f"try {tries}: {'by hand' if side == 'hand' else 'orchestrate'}'s nsys stalled; done again",
                          flush=True)
                    continue
                done += 1
                hand_s.append(pair["hand"])
                tool_s.append(pair["tool"])
                phases.append(run.get("phases", {}))
                steps.append(by_hand)
                print(f"round {done}: by hand {pair['hand']:.2f} s, orchestrate {pair['tool']:.2f} s "
                      f"({pair['tool'] / pair['hand']:.3f}x)", flush=True)
        finally:
            x.send_signal(signal.SIGTERM)
            x.wait(timeout=10)
            server.kill_all()
    if not hand_s:
        raise SystemExit("no round without a stall")
    base, tool = statistics.median(hand_s), statistics.median(tool_s)
    ratio = tool / base
    print(f"by hand: {base:.2f} s, orchestrate: {tool:.2f} s (medians of {len(hand_s)} rounds; stalls done again: "
          f"{stalls['by hand']} by hand, {stalls['orchestrate']} orchestrate)")
    print("by hand, its steps (medians): " + ", ".join(
        f"{name} {statistics.median(run[name] for run in steps):.2f} s" for name in steps[0]))
    names = list(dict.fromkeys(name for run in phases for name in run))
    print("orchestrate's phases (medians): " + ", ".join(
        f"{name} {statistics.median(run.get(name, 0.0) for run in phases):.2f} s" for name in names))
    paired = statistics.median(tool / hand for tool, hand in zip(tool_s, hand_s))
    print(f"the rounds' own ratios: median {paired:.3f}x, from {min(t / h for t, h in zip(tool_s, hand_s)):.3f}x "
          f"to {max(t / h for t, h in zip(tool_s, hand_s)):.3f}x")
    print(f"orchestrate: {ratio:.3f}x the hand pipeline (target {TARGET_RATIO:.2f}x or less): "
          f"{'met' if ratio <= TARGET_RATIO else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
