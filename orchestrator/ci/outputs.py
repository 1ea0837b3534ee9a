"""What CI systems read of a job: JUnit XML (one test case per board x app x metric), github-action-benchmark's
``customSmallerIsBetter`` JSON, and a Markdown summary for $GITHUB_STEP_SUMMARY or a merge-request note.
Pure: a job's outcome in, text out."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from ..stats.gate import IMPROVEMENT, NO_BASELINE, NOT_SURE, REGRESSION
from .job import FAILED, UNSURE, Check, CiOutcome

HEADLINES = {
    "pass": "passed: no metric is clearly worse than its baseline",
    UNSURE: "passed: no metric is clearly worse, but the gate is not sure about some yet (below)",
    "no-baseline": "passed: no baseline yet for this board kind; these runs start it",
    REGRESSION: "failed: a metric regressed",
    FAILED: "failed: a run did not measure",
}


def _figures(check: Check) -> str:
    decision = check.decision
    if decision is None:
        return check.reason or check.status
    lines = [decision.note,
             f"this job ({len(decision.values)} runs, median {decision.figure:.4g}): "
             + ", ".join(f"{v:.4g}" for v in decision.values)]
    if decision.baseline:
        lines.append(f"baseline ({len(decision.baseline)} jobs, {decision.baseline_runs} runs), each job's median: "
                     + ", ".join(f"{v:.4g}" for v in decision.baseline))
    if decision.noise:
        lines.append(f"noise (standard deviations): between jobs {decision.noise.between:.3g}, within a job "
                     f"{decision.noise.within:.3g} {decision.unit}".rstrip())
    if decision.band:
        lines.append(f"band of this job's median: {decision.band[0]:.4g} to {decision.band[1]:.4g} "
                     f"{decision.unit}".rstrip())
    if check.reason:
        lines.append(check.reason)
    return "\n".join(lines)


def junit_xml(outcome: CiOutcome) -> str:
    suite = ET.Element("testsuite", name="orchestrate ci", tests=str(len(outcome.checks) + len(outcome.skipped)))
    failures = errors = skipped = 0
    for target, why in outcome.skipped.items():  # a quarantined board: nothing ran on it
        skipped += 1
        case = ET.SubElement(suite, "testcase", classname=f"quarantined.{target}", name=f"{target} quarantined")
        ET.SubElement(case, "skipped", message=why)
    for check in outcome.checks:
        case = ET.SubElement(suite, "testcase", classname=f"{check.board_kind}.{check.target}",
                             name=f"{check.name} {check.metric}")
        if check.decision is not None and check.decision.verdict == REGRESSION:
            failures += 1
            ET.SubElement(case, "failure", message=f"{check.metric} regressed: {check.decision.note}",
                          type="regression").text = _figures(check)
        elif check.status == "failed":
            errors += 1
            ET.SubElement(case, "error", message=check.reason or "the run failed", type="run-failed")
        elif check.status in ("invalid", "missing") or (check.decision and check.decision.verdict == NO_BASELINE):
            skipped += 1
            ET.SubElement(case, "skipped", message=check.reason or (check.decision.note if check.decision else ""))
        elif check.decision is not None and check.decision.verdict == NOT_SURE:
            skipped += 1  # not a failure, and not a pass either: shown, for a person to look at
            ET.SubElement(case, "skipped", message=f"{check.metric} not sure after {len(check.decision.values)} "
                                                   f"runs: {check.decision.note}").text = _figures(check)
        else:
            ET.SubElement(case, "system-out").text = _figures(check)
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def benchmark_json(outcome: CiOutcome) -> str:
    """github-action-benchmark's customSmallerIsBetter: the job's median per board x app x metric, for every
    metric where lower is better (a rate such as frames_per_s belongs in a customBiggerIsBetter file)."""
    entries = []
    for check in outcome.checks:
        decision = check.decision
        if decision is None or decision.better != "lower":
            continue
        spread = (max(decision.values) - min(decision.values)) / 2 if len(decision.values) > 1 else 0.0
        entries.append({"name": f"{check.name} {check.metric} ({check.board_kind})", "unit": decision.unit,
                        "value": round(decision.figure, 6), "range": f"± {spread:.4g}",
                        "extra": f"{decision.verdict}; {decision.note}; target {check.target}"})
    return json.dumps(entries, indent=2) + "\n"


def markdown_summary(outcome: CiOutcome) -> str:
    provenance = outcome.provenance
    commit = (provenance.commit or "unknown commit")[:12]
    lines = [f"### orchestrate ci {HEADLINES.get(outcome.outcome, outcome.outcome)}", "",
             f"Commit `{commit}` on `{provenance.branch or 'unknown branch'}`, compared with `{outcome.base}`.", "",
             "| board | app | metric | baseline (jobs) | this job (runs) | change | p | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for check in outcome.checks:
        decision = check.decision
        if decision is None:
            lines.append(f"| {check.target} ({check.board_kind}) | {_cell(check.name)} | {check.metric} | | | | | "
                         f"{check.status}: {_cell(check.reason or '')} |")
            continue
        base = f"{decision.baseline_figure:.4g} (n={len(decision.baseline)})" if decision.baseline_figure is not None \
            else f"n={len(decision.baseline)}"  # n: jobs, each its median
        change = f"{decision.change:+.1%}" if decision.change is not None else ""
        p_value = f"{decision.p_value:.2g}" if decision.p_value is not None else ""
        mark = {REGRESSION: "**regression**", IMPROVEMENT: "improvement",
                NOT_SURE: f"not sure after {len(decision.values)} runs"}.get(decision.verdict, decision.verdict)
        lines.append(f"| {check.target} ({check.board_kind}) | {_cell(check.name)} | {check.metric} | {base} | "
                     f"{decision.figure:.4g} {decision.unit} (n={len(decision.values)}) | {change} | {p_value} | "
                     f"{mark} |")
    notes = [f"- {c.name} {c.metric}: {c.reason}" for c in outcome.checks if c.reason and c.decision is not None]
    if notes:
        lines += ["", *notes]
    if outcome.skipped:
        lines += ["", *(f"- {target} skipped, quarantined: {_cell(why)}" for target, why in outcome.skipped.items())]
    if outcome.error is not None:
        lines += ["", f"The job stopped: {outcome.error.one_line()}"]
    lines += ["", "Each job counts by its median; a regression is both beyond the noise between jobs (p < 0.01) and "
                  "larger than the metric's threshold; flagged runs (throttled, clocks dropped) are never a baseline "
                  "nor a failure."]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
