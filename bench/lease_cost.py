"""What a board's lease costs, against the same work without one, in the same run.

- A run: `orchestrate profile --target local` of a short app without nsys, alternately with its lease (SQLite, the
  default database, in a folder of the bench's own) and with --no-leases, ROUNDS times each; it prints the median
  seconds of each and their ratio (the target: 1.10x or less: the lease opens the database, asks, is granted,
  records the board's health and ends, around a run that itself takes about a second and a half).
- A hand-over: HOLDERS processes at once want one board, each holding it HOLD_S; how long the board stays unused
  between one holder leaving its block and the next one entering its own (median and largest; the holder that ends
  grants the next, who learns it at its next look, every LOOK_S: the target is a median within 1.5x of LOOK_S), on
  SQLite and on PostgreSQL (a server of the bench's own, when Debian's postgresql is installed).

    python bench/lease_cost.py [--rounds 5] [--holders 8]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from postgres_server import make_postgres  # noqa: E402

from orchestrator.boards import ledger  # noqa: E402
from orchestrator.boards.lease import LOOK_S, LeaseOptions, hold  # noqa: E402
from orchestrator.database.connection import open_database  # noqa: E402
from orchestrator.inventory.host import Host  # noqa: E402

APP = ["--app-cmd", "sleep 0.5", "--no-nsys", "--duration", "1"]
HOLD_S = 0.2


def one_run(folder: Path, leases: bool) -> float:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "orchestrator", "profile", "--target", "local", *APP,
                           "--out", str(folder / "runs"), *([] if leases else ["--no-leases"])],
                          cwd=folder, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO), XDG_DATA_HOME=str(folder / "data")))
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"the run failed: {done.stderr[-2000:]}")
    return seconds


class Quiet:
    def note(self, level: str, text: str) -> None:
        pass


def _holder(url: str, index: int, log: str) -> None:
    with hold(LeaseOptions(url), [Host("board", address="board", port=22)], f"holder {index}", Quiet()):
        entered = time.time()
        time.sleep(HOLD_S)
        left = time.time()
    with open(log, "a") as stream:
        stream.write(f"{entered} {left}\n")


def hand_over(url: str, holders: int, log: Path) -> list[float]:
    """Seconds the board stayed unused between one holder leaving its block and the next one entering its own."""
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_holder, args=(url, i, str(log))) for i in range(holders)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    database = open_database(url)
    try:
        assert len(ledger.lease_rows(database, active=False)) == holders
    finally:
        database.close()
    spans = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "two holders at once"
    return [b[0] - a[1] for a, b in zip(spans, spans[1:])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--holders", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        one_run(folder, True)  # the database made and migrated once, as on any machine after its first run
        timed: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.rounds):
            for leases in (False, True):
                timed[leases].append(one_run(folder, leases))
        without, with_lease = statistics.median(timed[False]), statistics.median(timed[True])
        print(f"a local run without nsys: {with_lease:.2f} s with its lease, {without:.2f} s without "
              f"(median of {args.rounds}): {with_lease / without:.2f}x (target 1.10x or less)")
        urls = {"SQLite": str(folder / "handover.db")}
        server = make_postgres(folder / "postgres")
        if server is not None:
            server.start()
            urls["PostgreSQL"] = server.new_database()
        try:
            for backend, url in urls.items():
                gaps = hand_over(url, args.holders, folder / f"{backend}.log")
                median = statistics.median(gaps)
                print(f"{backend}: {args.holders} holders of one board, the board unused between two of them for "
                      f"{median * 1000:.0f} ms (median; largest {max(gaps) * 1000:.0f} ms) against a look every "
                      f"{LOOK_S * 1000:.0f} ms: {median / LOOK_S:.2f}x (target 1.5x or less)")
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
