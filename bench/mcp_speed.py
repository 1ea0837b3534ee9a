"""The MCP server's answers against the CLI's: each question's time through `orchestrate mcp` (one stdio session, the
official SDK's client; its first answer, then the median of the warm ones) against the command line that answers
the same question, cold (`orchestrate analyze ...`, a new process each time), on an export grown to --events
events, in the same run. Target: each warm answer at most 0.5x the CLI's cold one. Then, on an export grown to
--bound-events events, every question's answer (windows over the whole run, every row asked for) within the
60,000-character bound.

Grows the es2gears export in tests/data/nsys along the time axis as bench/analysis_speed.py does.

    python bench/mcp_speed.py [--events 1200000] [--bound-events 3000000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analysis_speed import build_export  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SOURCE = "es2gears-opengl"
TARGET = 0.5
MAX_CHARS = 60_000


def questions(run: str) -> list[tuple[str, str, dict, list[str]]]:
    """(what, tool, its arguments, the CLI's arguments answering the same)."""
    return [
        ("verdict and shares", "summary", {"run": run}, ["analyze", run, "--json"]),
        ("slowest frames", "frames", {"run": run, "slowest": 5}, ["analyze", run, "--json"]),
        ("one frame's shares", "frames", {"run": run, "frame": 500, "slowest": 0},
         ["analyze", run, "--frame", "500", "--json"]),
        ("a second's calls per name", "window", {"run": run, "window": "2s:3s"}, ["analyze", run, "--window", "2s:3s"]),
        ("a second's CPU functions", "hotspots", {"run": run, "window": "2s:3s"},
         ["analyze", run, "--window", "2s:3s", "--json"]),
        ("GPU work of a second's calls", "gpu_work", {"run": run, "window": "2s:3s"},
         ["analyze", run, "--window", "2s:3s"]),
    ]


def cli_seconds(args: list[str], root: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "orchestrator", *args], cwd=root, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


async def server_times(root: Path, asked: list[tuple[str, dict]], rounds: int) -> list[tuple[float, list[float], int]]:
    """Per question: the first answer's seconds, the warm ones', and the largest answer's characters."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    params = StdioServerParameters(command=sys.executable, args=["-m", "orchestrator", "mcp", "--root", str(root)],
                                   cwd=str(REPO), env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    found = []
    async with Client(params, read_timeout_seconds=1800) as client:
        for tool, arguments in asked:
            times, largest = [], 0
            for _ in range(1 + rounds):
                started = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                times.append(time.perf_counter() - started)
                text = getattr(result.content[0], "text", "")  # the server answers in one text block
                if result.is_error:
                    raise SystemExit(f"{tool} {arguments}: {text}")
                largest = max(largest, len(text))
            found.append((times[0], times[1:], largest))
    return found


def grown_root(folder: Path, events: int) -> tuple[Path, int]:
    root = folder / f"root-{events}"
    (root / "run").mkdir(parents=True)
    export, total, _ = build_export(SOURCE, events, folder)
    export.rename(root / "run" / "report.sqlite")
    return root, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_200_000)
    parser.add_argument("--bound-events", type=int, default=3_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    met = True
    with tempfile.TemporaryDirectory(prefix="mcp-speed-") as tmp:
        root, total = grown_root(Path(tmp), args.events)
        print(f"{total:,} events in {SOURCE} grown; {args.rounds} warm answers and {args.rounds} CLI runs each")
        asked = questions("run")
        timed = asyncio.run(server_times(root, [(tool, a) for _, tool, a, _ in asked], args.rounds))
        print(f"{'question':32} {'first s':>8} {'warm s':>8} {'CLI s':>8} {'warm/CLI':>9}  CLI")
        for (what, _, _, cli), (first, warm, _) in zip(asked, timed):
            cold = statistics.median(cli_seconds(cli, root) for _ in range(args.rounds))
            ratio = statistics.median(warm) / cold
            met &= ratio <= TARGET
            print(f"{what:32} {first:8.3f} {statistics.median(warm):8.3f} {cold:8.3f} {ratio:9.3f}  "
                  f"orchestrate {' '.join(cli)}")
        print(f"target: each warm answer at most {TARGET}x the CLI's cold one: {'met' if met else 'NOT met'}")
        root, total = grown_root(Path(tmp), args.bound_events)
        whole: list[tuple[str, dict]] = [
            ("summary", {"run": "run"}), ("frames", {"run": "run", "slowest": 100000}),
            ("window", {"run": "run", "window": "all", "limit": 100000}),
            ("hotspots", {"run": "run", "window": "all", "top": 100000}),
            ("gpu_work", {"run": "run", "window": "all", "limit": 100000})]
        sizes = asyncio.run(server_times(root, whole, 0))
        largest = max(size for _, _, size in sizes)
        print(f"{total:,} events: the largest answer {largest:,} characters "
              f"({', '.join(f'{tool} {size:,}' for (tool, _), (_, _, size) in zip(whole, sizes))}); "
              f"bound {MAX_CHARS:,}: {'kept' if largest <= MAX_CHARS else 'EXCEEDED'}")
        met &= largest <= MAX_CHARS
    print(json.dumps({"met": met}))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
