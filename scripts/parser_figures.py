"""How many figures the parsers read from the published tool output in tests/data/parsers (and how many runs
they call failed): `python scripts/parser_figures.py [--each]`. Each file's parser is named by its prefix."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.parsers import PARSERS  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "parsers"
PREFIXES = {"trtexec": "trtexec", "jetson-inference": "jetson-inference", "glmark2": "glmark2",
            "tftrt": "tftrt-bench", "benchmark_model": "benchmark_model"}


def main() -> int:
    figures = failures = files = 0
    for path in sorted(DATA.glob("*.txt")):
        tool = next((name for prefix, name in PREFIXES.items() if path.name.startswith(prefix)), None)
        if tool is None or tool not in PARSERS:
            continue
        parsed = PARSERS[tool](path.read_text())
        files, figures, failures = files + 1, figures + len(parsed.figures), failures + (parsed.failure is not None)
        if "--each" in sys.argv:
            print(f"{len(parsed.figures):4d}  {'failed' if parsed.failure else '      '}  {path.name}")
    print(f"{files} logs, {figures} figures read, {failures} runs said to have failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
