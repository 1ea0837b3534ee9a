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
    """Files under the work dir other than the agent itself, the apps' files kept once per content for
    the next runs (files/), and the board's lock file."""
    left = {}
    for path in work_dir.rglob("*"):
        kept = path.parent.name == "agent" or path.parent == work_dir / "files" or path.name == "board.lock"
        if path.is_file() and not kept:
            left[str(path.relative_to(work_dir))] = path.stat().st_size
    return left


def record(kind: str, **values: object) -> None:
    """One line of evidence for scripts/fault_figures.py, when it asked for it (ORCHESTRATE_FAULT_LOG)."""
    log = os.environ.get("ORCHESTRATE_FAULT_LOG")
    if log:
        import json
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        with open(log, "a") as handle:
            handle.write(json.dumps({"kind": kind, "test": test, **values}) + "\n")


def assert_board_clean(work_dir: Path) -> None:
    """No process of the run left, nothing left in the work dir but the agent: measured, then asserted."""
    left = wait_for_no_run_processes(work_dir)
    files = bytes_left(work_dir)
    record("board_after_fault", processes_left=len(left), bytes_left=sum(files.values()))
    assert left == []
    assert files == {}


def assert_report_kept(run_dir: Path) -> None:
    """The run's report is here and matches the sha256 in run.json, or waits on the board."""
    import hashlib
    import json
    record_ = json.loads((run_dir / "run.json").read_text())
    names = [n for n in ("report.nsys-rep", "report.qdrep", "report.qdstrm") if n in record_.get("files", {})]
    here = bool(names) and all(
        (run_dir / n).is_file() and hashlib.sha256((run_dir / n).read_bytes()).hexdigest() ==
        record_["files"][n].get("pulled_sha256", record_["files"][n]["sha256"]) or n == "report.qdstrm" for n in names)
    remote = record_.get("remote", {}).get("run_dir")
    on_board = bool(remote) and any((Path(remote) / n).is_file() for n in ("report.nsys-rep", "report.qdrep",
                                                                             "report.qdstrm"))
    record("report_outcome", here=here, on_board=on_board, lost=not (here or on_board))
    assert here or on_board
