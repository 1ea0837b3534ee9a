"""How well the dashboard's change points (orchestrator/stats/changepoints.py) find a real step, and how rarely they
find one where there is none, on histories whose noise is resampled from real es2gears jobs.

The noise: the 150 runs of tests/data/gate-history/es2gears-local.json (30 real `orchestrate ci` jobs of 5 runs of
an unchanged es2gears, see its SOURCES.md), each as a ratio to its own job's median: the spread of runs within a job,
heavy tail and all (a run of 3.15 ms in a job of 1.3 ms). A history is 60 jobs; each job's value is the median of 5
ratios drawn at random from the 150, times 1 ms, as the dashboard plots a job (the median of its runs).

- Steps: from job 40 on (the 41st, index 40), every value 5 % higher. Found when a change point lies within 3 jobs of
  it (index 37..43). Target: at least 90 % of histories.
- Unchanged: the same histories without the step; any change point is a false alarm. Target: at most 1 in 200.

Both are printed with the targets, over --histories of each (default 1000), from a fixed seed; then what bounds
them: the Mann-Whitney test of the true split alone (the step's 40 jobs against its 20, as if the detector knew where
it is) and how often it falls below the change points' threshold, the smallest step found 90 % of the time, and
the runs per job a 5 % step needs to be.

    python bench/changepoints.py [--histories 1000] [--runs-per-job 5] [--seed 1]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scipy.stats import mannwhitneyu  # noqa: E402

from orchestrator.stats.changepoints import P_VALUE, change_points  # noqa: E402

HISTORY = Path(__file__).resolve().parent.parent / "tests" / "data" / "gate-history" / "es2gears-local.json"
JOBS, STEP_AT, STEP, WITHIN = 60, 40, 1.05, 3


def run_ratios(path: Path = HISTORY) -> np.ndarray:
    """Each valid run's steady mean over its job's median."""
    ratios = []
    for job in json.loads(path.read_text())["jobs"]:
        values = [r["metrics"]["steady_mean_ms"] for r in job["runs"] if r["valid"]]
        middle = statistics.median(values)
        ratios += [v / middle for v in values]
    return np.asarray(ratios)


def histories(ratios: np.ndarray, count: int, runs_per_job: int, seed: int) -> np.ndarray:
    """count x JOBS job values: each the median of runs_per_job ratios drawn with replacement."""
    rng = np.random.default_rng(seed)
    return np.median(rng.choice(ratios, size=(count, JOBS, runs_per_job)), axis=2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--histories", type=int, default=1000)
    parser.add_argument("--runs-per-job", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    ratios = run_ratios()
    noise = histories(ratios, args.histories, args.runs_per_job, args.seed)
    steps = noise.copy()
    steps[:, STEP_AT:] *= STEP
    began = time.perf_counter()
    found = sum(any(abs(c.index - STEP_AT) <= WITHIN for c in change_points(h)) for h in steps)
    alarms = sum(bool(change_points(h)) for h in noise)
    seconds = time.perf_counter() - began
    print(f"noise: {len(ratios)} real es2gears runs as ratios to their job's median; a job = the median of "
          f"{args.runs_per_job} of them; {JOBS} jobs per history, {args.histories} histories of each kind")
    print(f"5 % step at job {STEP_AT}, found within {WITHIN} jobs: {found}/{args.histories} = "
          f"{found / args.histories:.1%} (target at least 90 %)")
    print(f"unchanged, a change point called: {alarms}/{args.histories} = {alarms / args.histories:.2%} "
          f"(target at most 1 in 200 = 0.50 %)")
    print(f"{2 * args.histories} histories in {seconds:.1f} s ({seconds / (2 * args.histories) * 1e3:.1f} ms each)")
    oracle = [mannwhitneyu(h[:STEP_AT], h[STEP_AT:]).pvalue for h in steps]
    print(f"the true split alone, tested: p below {P_VALUE:g} in {np.mean(np.asarray(oracle) < P_VALUE):.1%}; p's "
          f"10/50/90th percentiles {' / '.join(f'{q:.1g}' for q in np.quantile(oracle, [0.1, 0.5, 0.9]))}")
    for step in (1.08, 1.10, 1.12, 1.15):
        bigger = noise.copy()
        bigger[:, STEP_AT:] *= step
        rate = np.mean([any(abs(c.index - STEP_AT) <= WITHIN for c in change_points(h)) for h in bigger])
        print(f"a {step - 1:.0%} step: found {rate:.1%}")
    for runs in (10, 20):
        more = histories(ratios, args.histories, runs, args.seed + runs)
        alarms_more = sum(bool(change_points(h)) for h in more)
        more[:, STEP_AT:] *= STEP
        rate = np.mean([any(abs(c.index - STEP_AT) <= WITHIN for c in change_points(h)) for h in more])
        print(f"jobs of {runs} runs: a 5 % step found {rate:.1%}; unchanged, a change called "
              f"{alarms_more / args.histories:.2%}")
    return 0 if found >= 0.9 * args.histories and alarms <= args.histories / 200 else 1


if __name__ == "__main__":
    sys.exit(main())
