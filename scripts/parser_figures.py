"""How much of the published tool output in tests/data/parsers the parsers read: for each tool, the figures its
logs hold (labelled by hand in each log's .truth.json, see tests/parser_truth.py) and how many of them the parser
returns, and how many runs it calls failed. `python scripts/parser_figures.py [--each]`: --each adds a line per log
and the figures missed."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from parser_truth import DATA, PARSERS, scores, shares, tool_of  # noqa: E402


def main() -> int:
    found = scores()
    if "--each" in sys.argv:
        for s in found:
            print(f"{s.read:4d} of {s.labelled:4d}  {s.log}")
            for missed in s.missed:
                print(f"            missed: {missed}")
    failed = sum(PARSERS[tool_of(log)](log.read_text(errors="replace")).failure is not None
                 for log in sorted(DATA.glob("*.txt")))
    for tool, (read, labelled) in shares(found).items():
        share = f"{100 * read / labelled:.1f} %" if labelled else "-"
        logs = sum(s.tool == tool for s in found) if tool != "all" else len(found)
        print(f"{tool:17s} {logs:3d} logs  {read:5d} of {labelled:5d} figures read  {share}")
    print(f"{failed} runs said to have failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
