"""What a run left on the board (this machine, for the loopback sshd): its processes and its files."""
from __future__ import annotations

import os
import time
from pathlib import Path

RUN_MARK = "ORCHESTRATE_RUN="


def run_processes(work_dir: Path) -> list[tuple[int, str]]:
    """Live processes a run under work_dir started or runs in: marked in their environment (nsys, its
    daemon, the app, Xvfb) or naming the work dir on their command line (the agent)."""
    found = []
    needle = str(work_dir).encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            if stat.rsplit(")", 1)[-1].split()[0] == "Z":
                continue
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            environ = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        marked = any(entry.startswith(RUN_MARK.encode() + needle) for entry in environ.split(b"\0"))
        if marked or needle in cmdline:
            found.append((int(name), cmdline.replace(b"\0", b" ").decode("utf-8", "replace")[:200]))
    return found


def wait_for_no_run_processes(work_dir: Path, timeout_s: float = 30) -> list[tuple[int, str]]:
    """Processes still there after timeout_s (a supervisor finishing its clean-up gets that long)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = run_processes(work_dir)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def bytes_left(work_dir: Path) -> dict[str, int]:
    """Files under the work dir other than the agent itself and the board's lock file."""
    left = {}
    for path in work_dir.rglob("*"):
        if path.is_file() and path.parent.name != "agent" and path.name != "board.lock":
            left[str(path.relative_to(work_dir))] = path.stat().st_size
    return left
