"""How often the CI gate cries wolf, and how often it catches a real slowdown, on real jobs.

The history: real `orchestrate ci` jobs of one unchanged app recorded on one machine
(every file in tests/data/gate-history/, made by scripts/record_gate_history.py; each job holds more runs than the
default repeat, so a job the gate is not sure about can run more, as `orchestrate ci` does). Each replay
picks one job as the new one and ``--baseline-jobs`` other jobs as its baseline, and judges every metric
`orchestrate ci` gates by default with the gate's own code (orchestrator/stats/gate.py): the job's first
``--repeat`` runs, then one run more while any metric is "not sure yet" and none regressed, up to
``--max-repeat``.

- A/A: nothing changed; any regression (or improvement) called is a false alarm. Target: at most 1 in 200 jobs.
- Power: the new job's steady frames made 10 % slower (steady mean, p50 and p90 x 1.1, frames per second
  / 1.1), as a real slowdown of every frame would; caught when the job fails. Target: at least 90 %.
- The same replays judged by the gate of before (every run its own sample: Student's t on the job's runs
  against the newest 10 baseline runs, p < 0.05, 5 % threshold), measured in the same run.

    python bench/gate_false_alarms.py [--replays 4000] [--history FILE ...]
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import Counter
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.stats.gate import (  # noqa: E402
    BASELINE_JOBS,
    IMPROVEMENT,
    NOT_SURE,
    REGRESSION,
    decide,
    default_threshold,
)

HISTORIES = Path(__file__).resolve().parent.parent / "tests" / "data" / "gate-history"
# what `orchestrate ci` gates without --gate: every stored metric with a direction (cores_busy has none)
GATED = {"first_frame_ms": "lower", "steady_mean_ms": "lower", "steady_p50_ms": "lower", "steady_p90_ms": "lower",
         "frames_per_s": "higher"}
SLOWER = {"steady_mean_ms": 1.1, "steady_p50_ms": 1.1, "steady_p90_ms": 1.1, "frames_per_s": 1 / 1.1}


def load(path: Path) -> list[list[dict[str, float]]]:
    """Each job's valid runs' figures, in the order they ran."""
    document = json.loads(path.read_text())
    jobs = [[run["metrics"] for run in job["runs"] if run["valid"] and run["status"] == "ok"]
            for job in document["jobs"]]
    return [job for job in jobs if job]


def judge(job: list[dict[str, float]], baseline: list[list[dict[str, float]]], repeat: int, max_repeat: int,
          change: dict[str, float], threshold: float | None = None) -> tuple[set[str], int]:
    """The verdicts of a job (with ``change`` applied to its figures) as `orchestrate ci` reaches them (every
    metric at ``threshold`` when given, else at its default)."""
    runs = repeat
    while True:
        verdicts = set()
        for metric, better in GATED.items():
            values = [run[metric] * change.get(metric, 1.0) for run in job[:runs] if metric in run]
            history = [[run[metric] for run in other[:repeat] if metric in run] for other in baseline]
            verdicts.add(decide(metric, values, history, better, threshold=threshold).verdict)
        if NOT_SURE not in verdicts or REGRESSION in verdicts or runs >= min(max_repeat, len(job)):
            return verdicts, runs
        runs += 1


def judge_before(job: list[dict[str, float]], baseline: list[list[dict[str, float]]], repeat: int,
                 change: dict[str, float]) -> set[str]:
    """The gate of before: runs as the unit, the newest 10 baseline runs, Student's t, p < 0.05, 5 %."""
    verdicts = set()
    for metric, better in GATED.items():
        values = [run[metric] * change.get(metric, 1.0) for run in job[:repeat] if metric in run]
        history = [run[metric] for other in baseline for run in other[:repeat] if metric in run][-10:]
        mean, base = sum(values) / len(values), sum(history) / len(history)
        p_value = stats.ttest_ind(values, history).pvalue if len(values) > 1 else \
            2 * stats.t.sf(abs(mean - base) / (stats.tstd(history) * (1 + 1 / len(history)) ** 0.5), len(history) - 1)
        relative = (mean - base) / base
        if p_value < 0.05 and abs(relative) > 0.05:
            verdicts.add(REGRESSION if (relative > 0) == (better == "lower") else IMPROVEMENT)
    return verdicts


def replay(jobs: list[list[dict[str, float]]], replays: int, baseline_jobs: int, repeat: int, max_repeat: int,
           change: dict[str, float], seed: int, threshold: float | None = None) -> dict[str, float]:
    """Random replays: a job as the new one, ``baseline_jobs`` others (any, in their recorded order) as its
    baseline. The rates are per replay; ``jobs called`` counts the distinct jobs ever called a regression."""
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    called: set[int] = set()
    runs_used = 0
    for _ in range(replays):
        new = rng.randrange(len(jobs))
        others = rng.sample([j for j in range(len(jobs)) if j != new], baseline_jobs)
        baseline = [jobs[j] for j in sorted(others)]
        verdicts, runs = judge(jobs[new], baseline, repeat, max_repeat, change, threshold)
        runs_used += runs
        counts["regression"] += REGRESSION in verdicts
        counts["improvement"] += IMPROVEMENT in verdicts and REGRESSION not in verdicts
        counts["unsure"] += NOT_SURE in verdicts and REGRESSION not in verdicts
        if REGRESSION in verdicts:
            called.add(new)
        before = judge_before(jobs[new], baseline, repeat, change)
        counts["before regression"] += REGRESSION in before
        counts["before improvement"] += IMPROVEMENT in before and REGRESSION not in before
    return {key: counts[key] / replays for key in ("regression", "improvement", "unsure", "before regression",
                                                   "before improvement")} | {"runs": runs_used / replays,
                                                                              "jobs called": len(called)}


def in_turn(jobs: list[list[dict[str, float]]], baseline_jobs: int, repeat: int, max_repeat: int,
            change: dict[str, float]) -> Counter[str]:
    """As a CI history meets them: each job after the first ``baseline_jobs``, against the jobs just before it."""
    found: Counter[str] = Counter()
    for index in range(baseline_jobs, len(jobs)):
        verdicts, _ = judge(jobs[index], jobs[index - baseline_jobs:index], repeat, max_repeat, change)
        found["jobs"] += 1
        found["regression"] += REGRESSION in verdicts
        found["improvement"] += IMPROVEMENT in verdicts and REGRESSION not in verdicts
        found["before regression"] += REGRESSION in judge_before(jobs[index], jobs[index - baseline_jobs:index],
                                                                repeat, change)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--history", type=Path, action="append",
                        help="a recorded history (default: every file in tests/data/gate-history/)")
    parser.add_argument("--replays", type=int, default=4000)
    parser.add_argument("--baseline-jobs", type=int, default=BASELINE_JOBS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-repeat", type=int, default=6)
    parser.add_argument("--seed", type=int, default=22)
    args = parser.parse_args()
    met = True
    for path in args.history or sorted(HISTORIES.glob("*.json")):
        met = report(path, args) and met
    print(f"targets (false alarms at most 1 in 200 each way, power at least 90 %): {'met' if met else 'MISSED'} "
          "on every history" if met else "targets MISSED on some history (above)")
    return 0 if met else 1


def report(path: Path, args: argparse.Namespace) -> bool:
    jobs = load(path)
    print(f"{path.name}: {len(jobs)} real jobs of an unchanged app ({sum(len(j) for j in jobs)} runs); "
          f"{args.replays} replays each way, {args.baseline_jobs} baseline jobs, {args.repeat} runs a job, up to "
          f"{args.max_repeat} when not sure")
    print("  gated: " + ", ".join(f"{m} {default_threshold(m):.0%}" for m in GATED))
    for metric in GATED:
        spread = spreads(jobs, metric, args.repeat)
        print(f"  {metric}: job medians spread {spread[0]:.2%} (sd), runs inside a job {spread[1]:.2%}, "
              f"largest job median {spread[2]:+.1%} from the median of all")
    same = replay(jobs, args.replays, args.baseline_jobs, args.repeat, args.max_repeat, {}, args.seed)
    slower = replay(jobs, args.replays, args.baseline_jobs, args.repeat, args.max_repeat, SLOWER, args.seed + 1)
    print(f"  A/A, unchanged: false regressions {same['regression']:.2%} (1 in "
          f"{_one_in(same['regression'])}), false improvements {same['improvement']:.2%}; not sure at the end "
          f"{same['unsure']:.1%}; {same['runs']:.2f} runs a job")
    ratio = _ratio(same["before regression"], same["regression"])
    print(f"    the gate of before (runs as the unit): false regressions {same['before regression']:.2%}, false "
          f"improvements {same['before improvement']:.2%}: {ratio}")
    bound = f" (none of {len(jobs)}: the rate per job is below {3 / len(jobs):.1%} at 95 %, the rule of three)" \
        if not same["jobs called"] else ""
    print(f"    distinct jobs ever called a regression: {same['jobs called']:.0f} of {len(jobs)}{bound}")
    turn = in_turn(jobs, args.baseline_jobs, args.repeat, args.max_repeat, {})
    print(f"    in turn, each job against the {args.baseline_jobs} before it: {turn['regression']} of {turn['jobs']} "
          f"called a regression, {turn['improvement']} an improvement; the gate of before: "
          f"{turn['before regression']} of {turn['jobs']}")
    bare = replay(jobs, args.replays, args.baseline_jobs, args.repeat, args.max_repeat, {}, args.seed, 0.01)
    print(f"    every threshold at 1 % (the noise model nearly alone): false regressions {bare['regression']:.2%}, "
          f"false improvements {bare['improvement']:.2%}, not sure at the end {bare['unsure']:.1%}")
    print(f"  +10 % steady frames: caught {slower['regression']:.1%}; not sure at the end {slower['unsure']:.1%}; "
          f"{slower['runs']:.2f} runs a job; the gate of before caught {slower['before regression']:.1%}")
    turn = in_turn(jobs, args.baseline_jobs, args.repeat, args.max_repeat, SLOWER)
    print(f"    in turn: {turn['regression']} of {turn['jobs']} caught")
    met = same["regression"] <= 1 / 200 and same["improvement"] <= 1 / 200 and slower["regression"] >= 0.9
    print(f"  targets {'met' if met else 'MISSED'} on {path.name}")
    return met


def spreads(jobs: list[list[dict[str, float]]], metric: str, repeat: int) -> tuple[float, float, float]:
    """Relative to the metric's typical value: the job medians' standard deviation, the runs' inside a job
    (pooled), and the job median farthest from the median of all."""
    medians = [statistics.median(r[metric] for r in job[:repeat]) for job in jobs if metric in job[0]]
    center = statistics.median(medians)
    within = statistics.fmean(statistics.variance([r[metric] for r in job[:repeat]]) for job in jobs
                              if metric in job[0] and len(job) > 1) ** 0.5
    farthest = max(medians, key=lambda m: abs(m - center))
    return statistics.stdev(medians) / center, within / center, farthest / center - 1


def _one_in(rate: float) -> str:
    return f"{1 / rate:.0f}" if rate else "none seen"


def _ratio(before: float, now: float) -> str:
    return f"{before / now:.0f}x fewer now" if now else "none now"


if __name__ == "__main__":
    sys.exit(main())
