"""Run the test suite (or any command) and print its figures: wall time, the real nsys captures it made (every
`nsys profile` process seen on this machine while it ran, boards of their own included: they share its process
table), how many ran at once at most, and pytest's own summary line.

    .venv/bin/python scripts/suite_figures.py                     (the README's test command)
    .venv/bin/python scripts/suite_figures.py --log ci.log -- bash .ci/run     (any command, its output kept)

Captures are counted by looking at /proc every 0.2 s; a capture lasts a second or more, so none is missed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def nsys_profiles() -> set[tuple[int, str]]:
    """(pid, start tick) of every live `nsys profile` process."""
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            started = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[19]
        except (OSError, IndexError):
            continue
        if len(argv) > 1 and argv[0].endswith(b"nsys") and argv[1] == b"profile":
            found.add((int(name), started))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("command", nargs="*", help="the command to run (default: python -m pytest)")
    parser.add_argument("--log", type=Path, help="write the command's whole output there")
    args = parser.parse_args()
    command = args.command or [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: set[tuple[int, str]] = set()
    most = 0
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    while proc.poll() is None:
        now = nsys_profiles()
        seen |= now
        most = max(most, len(now))
        time.sleep(0.2)
    reader.join()
    seconds = time.monotonic() - started
    if args.log:
        args.log.write_text("".join(lines))
    summary = next((line.strip() for line in reversed(lines) if " passed" in line or " failed" in line), "")
    print(f"command: {' '.join(command)}")
    print(f"exit status {proc.returncode}, {seconds:.0f} s ({seconds / 60:.1f} min)")
    print(f"real nsys captures: {len(seen)} (at most {most} at once)")
    print(f"pytest: {summary}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
