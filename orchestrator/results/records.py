"""What the database keeps of a run folder, and where a commit and branch come from. Pure over the
folder's files and the environment handed in.

A run inside a study folder carries its study's name and its cell (label and variables); the figures are
the study's own (``figures.run_metrics``, the app parser's included) plus the steady median and the
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

from ..documents.run import RunDocument, is_run_folder, read_run_or_none
from ..documents.run_sections import Flag
from ..documents.study import StudyCell, StudyDocument, read_study_or_none, study_folders
from ..documents.summary import Summary, read_summary
from ..errors import UsageError


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
    flags: list[Flag]
    folder: str
    study: str | None = None
    cell: str = ""
    variables: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Metric] = field(default_factory=dict)
    jetpack: str | None = None      # the board's JetPack and L4T releases (None: not a Jetson, or not known)
    l4t: str | None = None
    parser: str | None = None       # the app's output parser (its figures are the app.* metrics)

    @property
    def variables_key(self) -> str:
        return variables_key(self.variables)


def variables_key(variables: Mapping[str, Any]) -> str:
    return json.dumps(dict(variables), sort_keys=True, separators=(",", ":"))


def run_record(run_dir: Path, study: StudyDocument | None = None) -> RunRecord | None:
    """The record of one run folder, or None when it holds no run.json with a start time, or its run never
    reached its board (unreachable: no board, no figures, nothing to keep of it). ``study`` is the study.json
    of the folder it sits in, for the cell's label and the app's output parser."""
    from ..figures.measured import measured_run, run_flags  # imported here: `results list|history` reads no folder
    from ..figures.run_metrics import run_metrics
    from ..targets.facts import board_fingerprint, board_kind
    run = read_run_or_none(run_dir)
    if run is None or not run.run_id or not run.started_at or not run.facts or not run.facts.to_wire(version=False):
        return None
    fingerprint = run.board_fingerprint or board_fingerprint(run.facts)
    variables = run.study_variables
    cell = _cell_of(study, run_dir.name, variables)
    parser = (cell.parser if cell else None) or run.parser
    measured = run_metrics(run_dir, parser)
    figures = {name: Metric(float(value), *measured.units[name]) for name, value in measured.values.items()}
    figures.update(_extra_metrics(_summary_of(run_dir)))
    flags = run_flags(run)
    measured_well = measured_run(run_dir, run)
    target = run.target.name
    return RunRecord(
        uid=_uid(run.run_id, run.started_at, target), run_id=run.run_id, started_at=_utc(run.started_at),
        target=target, board_kind=board_kind(run.facts), kind_fingerprint=fingerprint["kind"],
        software_fingerprint=fingerprint["software"], app=run.app_name,
        status="ok" if measured_well else run.status, valid=measured_well and not flags,
        flags=flags, folder=str(run_dir.resolve()), study=run.study_name,
        cell=cell.label if cell else "", variables=variables or {}, metrics=figures,
        jetpack=run.facts.board.jetpack, l4t=run.facts.board.l4t, parser=parser)


def _cell_of(study: StudyDocument | None, run_name: str, variables: dict[str, Any] | None) -> StudyCell | None:
    """The study cell the run belongs to; before study.json lists it, its label from the run's variables."""
    cell = study.cell_of(run_name, variables) if study is not None else None
    if cell is None and variables is not None:
        from ..study.spec import Cell
        return StudyCell(label=Cell(0, variables).label)
    return cell


def _summary_of(run_dir: Path) -> Summary:
    try:
        return read_summary(run_dir) or Summary()
    except UsageError:  # a damaged summary.json: the run keeps no figures of it (run_metrics says the same)
        return Summary()


# what the database keeps of a run beyond a study's metrics (name: unit, which way is better)
EXTRA_METRICS: dict[str, tuple[str, str]] = {"steady_p50_ms": ("ms", "lower"), "energy_per_frame_mj": ("mJ", "lower")}


def _extra_metrics(summary: Summary) -> dict[str, Metric]:
    extra: dict[str, Metric] = {}
    p50 = summary.steady.p50_ns if summary.steady is not None else None
    if p50 is not None:
        extra["steady_p50_ms"] = Metric(p50 / 1e6, *EXTRA_METRICS["steady_p50_ms"])
    energy = summary.energy_median_mj
    if energy is not None:
        extra["energy_per_frame_mj"] = Metric(energy, *EXTRA_METRICS["energy_per_frame_mj"])
    return extra


def _uid(run_id: str, started_at: str, target: str) -> str:
    """The same run gives the same uid wherever its folder is imported from."""
    return hashlib.sha256(f"{run_id}\0{started_at}\0{target}".encode()).hexdigest()[:32]


def _utc(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp)
    return moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def folder_runs(folder: Path) -> list[tuple[Path, StudyDocument | None]]:
    """A run folder, or every run folder of a study folder (with its study.json) or of a folder of runs."""
    if is_run_folder(folder):
        return [(folder, None)]
    try:
        study = read_study_or_none(folder)
    except UsageError:  # a damaged study.json: its run folders still count
        study = None
    names = study.run_names if study is not None else []
    if not names:  # a folder of run folders: every one that holds a run.json
        names = sorted(p.name for p in folder.iterdir() if is_run_folder(p)) if folder.is_dir() else []
    return [(folder / name, study) for name in names]


def runs_in(folder: Path) -> list[tuple[Path, StudyDocument | None]]:
    """The run folders ``folder`` holds as records_in reads them: its own, or those of the study folders inside."""
    return folder_runs(folder) or [found for study in study_folders(folder) for found in folder_runs(study)]


def folder_records(folder: Path) -> list[RunRecord]:
    """A run folder's record, or every run of a study folder (study.json beside them), oldest first."""
    records = [run_record(run_dir, study) for run_dir, study in folder_runs(folder)]
    return sorted((r for r in records if r is not None), key=lambda r: r.started_at)


def records_in(folder: Path) -> list[RunRecord]:
    """A run folder's record, a study folder's, or those of the study folders inside ``folder`` (a CI job's)."""
    return folder_records(folder) or [r for study in study_folders(folder) for r in folder_records(study)]


def run_uid(run_dir: Path) -> str | None:
    """The uid run_record would give the folder's run, from run.json alone (None: no run to keep)."""
    return uid_of(read_run_or_none(run_dir))


def uid_of(run: RunDocument | None) -> str | None:
    """The uid run_record gives the run (None: no run to keep)."""
    if run is None or not run.run_id or not run.started_at:
        return None
    return _uid(run.run_id, run.started_at, run.target.name)


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
