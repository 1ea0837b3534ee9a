"""What the database keeps of a run folder, and where a commit and branch come from. Pure over the
folder's files and the environment handed in.

A run inside a study folder carries its study's name and its cell (label and variables); the figures are
the study's own (``study.metrics.run_metrics``, the app parser's included) plus the steady median and the
energy per frame when the board measured it.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..runs.folder import read_json_object


@dataclass(frozen=True)
class Metric:
    value: float
    unit: str
    better: str | None   # "lower", "higher" or None


@dataclass(frozen=True)
class Provenance:
    """The commit and branch a run measured, and the CI job's page when there is one."""

    commit: str | None = None
    branch: str | None = None
    default_branch: str | None = None
    url: str | None = None


@dataclass(frozen=True)
class RunRecord:
    uid: str
    run_id: str
    started_at: datetime
    target: str
    board_kind: str
    kind_fingerprint: str
    software_fingerprint: str
    app: str
    status: str
    valid: bool
    flags: list[dict[str, str]]
    folder: str
    study: str | None = None
    cell: str = ""
    variables: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Metric] = field(default_factory=dict)

    @property
    def variables_key(self) -> str:
        return variables_key(self.variables)


def variables_key(variables: Mapping[str, Any]) -> str:
    return json.dumps(dict(variables), sort_keys=True, separators=(",", ":"))


def run_record(run_dir: Path, study: dict[str, Any] | None = None) -> RunRecord | None:
    """The record of one run folder, or None when it holds no run.json with a start time, or its run never
    reached its board (unreachable: no board, no figures, nothing to keep of it). ``study`` is the study.json
    of the folder it sits in, for the cell's label and the app's output parser."""
    from ..fleet.results import run_flags  # imported here: `results list|history` never reads a folder
    from ..runs.outcome import measured_despite_nsys
    from ..study.metrics import run_metrics
    from ..targets.facts import board_fingerprint, board_kind
    record = read_json_object(run_dir / "run.json")
    facts = record.get("facts")
    if not record.get("run_id") or not record.get("started_at") or not facts:
        return None
    fingerprint = record.get("board_fingerprint") or board_fingerprint(facts)
    mine = record.get("study") or {}
    cell = _cell_of(study, run_dir.name, mine.get("variables"))
    parser = (cell or {}).get("parser") or (record.get("app") or {}).get("parser")
    measured = run_metrics(run_dir, parser)
    figures = {name: Metric(float(value), *measured.units[name]) for name, value in measured.values.items()}
    figures.update(_extra_metrics(read_json_object(run_dir / "summary.json")))
    flags = run_flags(record)
    measured_well = (run_dir / "summary.json").is_file() and (record.get("status") == "ok"
                                                               or measured_despite_nsys(record))
    target = (record.get("target") or {}).get("name") or "unknown"
    started = _utc(record["started_at"])
    return RunRecord(
        uid=_uid(record["run_id"], record["started_at"], target), run_id=record["run_id"], started_at=started,
        target=target, board_kind=board_kind(facts), kind_fingerprint=fingerprint["kind"],
        software_fingerprint=fingerprint["software"], app=(record.get("app") or {}).get("name") or "app",
        status="ok" if measured_well else str(record.get("status") or "unknown"), valid=measured_well and not flags,
        flags=flags, folder=str(run_dir.resolve()), study=mine.get("name"),
        cell=(cell or {}).get("label") or "", variables=dict(mine.get("variables") or {}), metrics=figures)


def _cell_of(study: dict[str, Any] | None, run_name: str, variables: Any) -> dict[str, Any] | None:
    """The study cell the run belongs to; before study.json lists it, its label from the run's variables."""
    for cell in (study or {}).get("cells") or []:
        if run_name in (cell.get("runs") or []) or (variables is not None and cell.get("variables") == variables):
            return cell
    if isinstance(variables, dict):
        from ..study.spec import Cell
        return {"label": Cell(0, variables).label}
    return None


# what the database keeps of a run beyond a study's metrics (name: unit, which way is better)
EXTRA_METRICS: dict[str, tuple[str, str]] = {"steady_p50_ms": ("ms", "lower"), "energy_per_frame_mj": ("mJ", "lower")}


def _extra_metrics(summary: dict[str, Any]) -> dict[str, Metric]:
    extra: dict[str, Metric] = {}
    steady = (summary.get("frames") or {}).get("steady") or {}
    if steady.get("p50_ns") is not None:
        extra["steady_p50_ms"] = Metric(steady["p50_ns"] / 1e6, *EXTRA_METRICS["steady_p50_ms"])
    energy = (summary.get("energy") or {}).get("median_mj")
    if energy is not None:
        extra["energy_per_frame_mj"] = Metric(float(energy), *EXTRA_METRICS["energy_per_frame_mj"])
    return extra


def _uid(run_id: str, started_at: str, target: str) -> str:
    """The same run gives the same uid wherever its folder is imported from."""
    return hashlib.sha256(f"{run_id}\0{started_at}\0{target}".encode()).hexdigest()[:32]


def _utc(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp)
    return moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def folder_records(folder: Path) -> list[RunRecord]:
    """A run folder's record, or every run of a study folder (study.json beside them), oldest first."""
    if (folder / "run.json").is_file():
        found = run_record(folder)
        return [found] if found else []
    study = read_json_object(folder / "study.json")
    names = [name for cell in study.get("cells") or [] for name in cell.get("runs") or []]
    if not names:  # a folder of run folders: every one that holds a run.json
        names = sorted(p.parent.name for p in folder.glob("*/run.json"))
    records = [run_record(folder / name, study or None) for name in names]
    return sorted((r for r in records if r is not None), key=lambda r: r.started_at)


# CI systems' variables, first match wins: (commit, branch, default branch, job page)
CI_VARIABLES = (
    ("GITHUB_SHA", ("GITHUB_HEAD_REF", "GITHUB_REF_NAME"), "GITHUB_BASE_REF", None),
    ("CI_COMMIT_SHA", ("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_REF_NAME"), "CI_DEFAULT_BRANCH", "CI_JOB_URL"),
    ("BUILDKITE_COMMIT", ("BUILDKITE_BRANCH",), "BUILDKITE_PIPELINE_DEFAULT_BRANCH", "BUILDKITE_BUILD_URL"),
    ("GIT_COMMIT", ("GIT_BRANCH", "BRANCH_NAME"), None, "BUILD_URL"),  # Jenkins
)


def provenance_from(env: Mapping[str, str], git: Mapping[str, str] | None = None) -> Provenance:
    """The commit and branch from a CI system's variables (GitHub Actions, GitLab, Buildkite, Jenkins), else
    from ``git`` (what the working tree's repository says: 'commit', 'branch')."""
    for commit_var, branch_vars, default_var, url_var in CI_VARIABLES:
        if env.get(commit_var):
            branch = next((env[v] for v in branch_vars if env.get(v)), None)
            url = env.get(url_var) if url_var else None
            if commit_var == "GITHUB_SHA" and env.get("GITHUB_RUN_ID"):
                url = f"{env.get('GITHUB_SERVER_URL', 'https://github.com')}/{env.get('GITHUB_REPOSITORY', '')}" \
                      f"/actions/runs/{env['GITHUB_RUN_ID']}"
            return Provenance(env[commit_var], branch, (env.get(default_var) if default_var else None) or None, url)
    git = git or {}
    return Provenance(git.get("commit"), git.get("branch"))


def git_head(folder: Path) -> dict[str, str]:
    """The commit and branch of the repository ``folder`` is in ({} outside one, or without git)."""
    found: dict[str, str] = {}
    for key, args in (("commit", ["rev-parse", "HEAD"]), ("branch", ["rev-parse", "--abbrev-ref", "HEAD"])):
        try:
            done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return found
        if done.returncode == 0 and done.stdout.strip() not in ("", "HEAD"):
            found[key] = done.stdout.strip()
    return found
