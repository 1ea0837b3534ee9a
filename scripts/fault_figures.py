"""Run the fault suite N times and print its figures for the README: faults injected (kinds, runs),
reports lost, orphan processes found, bytes left on the board after clean-up, hostile inputs tried,
injections, tracebacks, and the pass rate. Every figure is counted from what the tests measured
(tests/board_state.py writes one line of evidence per check), not inferred from passing.

    .venv/bin/python scripts/fault_figures.py [--rounds 1]
    .venv/bin/python scripts/fault_figures.py --from-logs LOG...   (evidence of earlier runs, e.g. whole
        suites run with ORCHESTRATE_FAULT_LOG=LOG)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAULT_FILES = ["tests/test_faults.py", "tests/test_failures.py"]
HOSTILE_FILES = ["tests/test_hostile_input.py", "tests/test_hostile_reports.py", "tests/test_inventory.py"]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--from-logs", nargs="+", type=Path, help="summarise these evidence logs instead")
    args = parser.parse_args()
    evidence: list[dict] = []
    passed = failed = 0
    outcomes: Counter[str] = Counter()
    if args.from_logs:
        for log in args.from_logs:
            evidence += [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        args.rounds = len(args.from_logs)
        print(f"evidence of {len(args.from_logs)} earlier runs")
    for _ in range(0 if args.from_logs else args.rounds):
        with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as log:
            log_path = log.name
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                               *FAULT_FILES, *HOSTILE_FILES], cwd=REPO,
                              env=dict(os.environ, ORCHESTRATE_FAULT_LOG=log_path), capture_output=True, text=True)
        for line in done.stdout.splitlines():
            if line.startswith(("PASSED ", "FAILED ", "ERROR ")):
                outcomes[line.split()[0]] += 1
        passed += done.returncode == 0
        failed += done.returncode != 0
        evidence += [json.loads(line) for line in Path(log_path).read_text().splitlines() if line.strip()]
        os.unlink(log_path)
    fault_tests = {e["test"] for e in evidence if e["kind"] in ("board_after_fault", "report_outcome")}
    boards = [e for e in evidence if e["kind"] == "board_after_fault"]
    reports = [e for e in evidence if e["kind"] == "report_outcome"]
    hostile = [e for e in evidence if e["kind"] == "hostile_input"]
    cli = [e for e in evidence if e["kind"] == "cli_output"]
    if not args.from_logs:
        print(f"suite rounds: {args.rounds}, all green in {passed} of {args.rounds}; tests "
              f"{outcomes['PASSED']} passed, {outcomes['FAILED']} failed, {outcomes['ERROR']} errors")
    print(f"fault kinds injected: {len({t.split('::')[-1].split('[')[0] for t in fault_tests})} "
          f"({len(fault_tests)} tests with evidence), fault runs: {len(boards)}")
    print(f"reports lost: {sum(e['lost'] for e in reports)} of {len(reports)} checked "
          f"({sum(e['here'] for e in reports)} here, verified; the rest on the board)")
    print(f"orphan processes found after faults: {sum(e['processes_left'] for e in boards)}")
    print(f"bytes left on the board after clean-up: {sum(e['bytes_left'] for e in boards)}")
    print(f"hostile inputs tried: {len(hostile)}, injections: {sum(e['injected'] for e in hostile)}, "
          f"tracebacks: {sum(e['traceback'] for e in cli) + sum(e.get('traceback', False) for e in hostile)} "
          f"(in {len(cli)} command outputs read)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
