"""Run a study: every cell ``repeat`` times over one connection and one agent deployment, each run a
normal run folder (``runs.profile``), then the statistics into study.json.

The cells take turns: round 1 runs each cell once, round 2 again, ... (A B A B, not A A B B), so that the
machine's drift during a study (heat, clocks, other load) touches every cell alike and does not read as a
difference between them; each round's order is recorded (``order`` in study.json). A caller may ask for
more rounds of some cells (``more_runs``: a CI job the gate is not sure about), up to ``max_repeat``.

A run that already exists for the same target fingerprint, app and variables (in an earlier folder of
the same study) is reused unless ``fresh``: an interrupted study goes on where it stopped. A failed cell
does not stop the study; an interrupt or a lost link does, after study.json says how far it got.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from remote_agent.commands import FACTS
from remote_agent.messages import Facts, FactsRequest

from .. import __version__
from ..documents.run import read_run_or_none
from ..documents.run_sections import RunFleet, RunStudy
from ..documents.study import (
    RoundRun,
    StoppedIn,
    StudyCell,
    StudyComparison,
    StudyDocument,
    study_file,
    write_study,
)
from ..errors import ConnectionLostError, InterruptedRunError, OrchestratorError
from ..figures.measured import measured_despite_nsys, measured_run
from ..figures.run_metrics import REPORT_METRICS, SHARE_PREFIX, metric_figures, run_metrics
from ..inventory.catalog import AppSpec
from ..inventory.hosts import Host
from ..runs.profile import Board, LeaseWatch, ProfileRequest, agent_section, profile
from ..runs.progress import Progress
from ..runs.remote_capture import HostStop
from ..runs.run_settings import RunSettings
from ..stats.estimates import INTERVAL_METHOD, compare_rounds
from ..targets.agent import deploy_agent
from ..targets.connect import open_transport
from ..targets.facts import picked
from ..targets.settings import ConnectOptions
from .spec import Cell, StudySpec, cell_app, cells

STABLE_FACTS = {"system": ("hostname", "kernel", "arch", "os", "cpu_count"),
                "board": ("model", "chip", "l4t", "jetpack"), "nsys": ("version", "path")}


class StudyProgress(Progress, Protocol):
    def begin_run(self, cell: Cell, cells: int, run: int, repeat: int, eta_s: float | None) -> None: ...

    def end_run(self, outcome: str) -> None: ...


@dataclass(frozen=True)
class StudyRequest:
    spec: StudySpec
    host: Host
    catalog: dict[str, AppSpec]
    out_dir: Path
    repeat: int
    fresh: bool = False
    connect: ConnectOptions = field(default_factory=ConnectOptions)
    inventory: str | None = None
    settings: RunSettings = field(default_factory=RunSettings)
    stop: HostStop | None = None  # another thread's wish to end the study's capture early (a fleet's)
    fleet: RunFleet | None = None  # the fleet run it belongs to, kept in each run's run.json
    # after the planned rounds: which cells (their indices) to run once more, from the study folder and the
    # document so far; asked again after each extra round, until it names none or a cell has max_repeat runs
    more_runs: Callable[[Path, StudyDocument], list[int]] | None = None
    max_repeat: int | None = None
    lease: LeaseWatch | None = None  # the board's lease, held for all the study's runs: told of each run


@dataclass(frozen=True)
class StudyOutcome:
    folder: Path
    document: StudyDocument

    @property
    def failed_cells(self) -> list[StudyCell]:
        return self.document.failed_cells


def study_folder(out_dir: Path, name: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = out_dir / f"{stamp}-{name}"
    suffix = 1
    while folder.exists():
        suffix += 1
        folder = out_dir / f"{stamp}-{name}-{suffix}"
    folder.mkdir(parents=True)
    return folder


def fingerprint(host: Host, address: str, facts: Facts) -> str:
    """The target as far as results depend on it: name, address, board, OS, kernel, nsys (not clocks)."""
    stable = picked(facts, STABLE_FACTS)
    return _digest({"target": host.name, "address": address, "facts": stable})


def app_key(app: AppSpec) -> str:
    spec = asdict(app)
    spec.pop("source", None)
    if spec.get("nsys") is True:  # as before apps could run without nsys: earlier folders' runs stay reusable
        del spec["nsys"]
    return _digest(spec)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def reusable_runs(out_dir: Path, name: str, tag: RunStudy) -> list[Path]:
    """Runs of earlier folders of this study with the same fingerprint, app and variables that came back
    with their analysis, oldest first."""
    found = []
    for run_dir in sorted(out_dir.glob(f"*-{name}*/*/")):
        run = None if run_dir.is_symlink() else read_run_or_none(run_dir)
        if run is None:
            continue
        mine = run.study
        if mine is not None and (mine.name, mine.fingerprint, mine.app_key, mine.variables) == (
                tag.name, tag.fingerprint, tag.app_key, tag.variables) and measured_run(run_dir, run):
            found.append(run_dir)
    return found


def run_study(request: StudyRequest, progress: StudyProgress) -> StudyOutcome:
    spec, host = request.spec, request.host
    study_cells = cells(spec)
    document = StudyDocument(
        name=spec.name, orchestrate_version=__version__, file=spec.source, description=spec.description,
        target=host.name, repeat=request.repeat, variables=list(spec.variables),
        started=datetime.now(timezone.utc).isoformat(), interval=INTERVAL_METHOD)
    progress.start("connect")
    transport = open_transport(host, request.connect)  # a target out of reach leaves no empty study folder
    progress.finish("connect", transport.description)
    try:
        folder = study_folder(request.out_dir, spec.name)
    except BaseException:
        transport.close()
        raise
    try:
        progress.start("deploy")
        agent = deploy_agent(transport, host)
        progress.finish("deploy", f"agent {agent.version} {'already there, checked' if agent.reused else 'uploaded'}")
        # nsys is looked for (and run for its version) only when a cell captures with it
        facts = agent.call(FACTS, FactsRequest(nsys=host.nsys, with_nsys=any(
            cell_app(spec, cell, request.catalog).nsys for cell in study_cells)))
        document.target_fingerprint = fingerprint(host, transport.description, facts)
        document.agent = agent_section(agent)
        board = Board(transport, agent)
        _run_cells(request, board, study_cells, document, folder, progress)
        document.status = "complete"
    except KeyboardInterrupt:  # outside a run's capture (deploy, between runs): no run of its own to keep
        document.status, document.stopped = "interrupted", "interrupted outside a run's capture"
        raise InterruptedRunError(f"interrupted; the study's finished runs are in {folder}",
                                  f"see {study_file(folder)}") from None
    except (InterruptedRunError, ConnectionLostError) as stopped:
        document.status, document.stopped = "interrupted", stopped.one_line()
        raise
    except OrchestratorError as failed:  # the agent or the board failed the study as a whole
        document.status, document.stopped = "failed", failed.one_line()
        raise
    finally:
        transport.close()
        document.finished = datetime.now(timezone.utc).isoformat()
        for lacking in finish_document(document, folder):
            progress.note("warning", lacking)
        write_study(folder, document)
        _write_page(document, folder, progress)
    return StudyOutcome(folder, document)


def _write_page(document: StudyDocument, folder: Path, progress: StudyProgress) -> None:
    from .page import write_study_page
    try:
        write_study_page(document, folder)
    except (OrchestratorError, OSError) as exc:
        message = exc.one_line() if isinstance(exc, OrchestratorError) else str(exc)
        progress.note("warning", f"study.html could not be written ({message}); study.json holds every figure")


def _run_cells(request: StudyRequest, board: Board, study_cells: list[Cell], document: StudyDocument,
               folder: Path, progress: StudyProgress) -> None:
    spec = request.spec
    entries = document.cells
    for cell in study_cells:
        app = cell_app(spec, cell, request.catalog)
        tag = RunStudy(name=spec.name, fingerprint=document.target_fingerprint, app_key=app_key(app),
                       variables=cell.variables)
        entry = StudyCell(index=cell.index, label=cell.label, variables=cell.variables, parser=app.parser)
        entries.append(entry)
        previous = [] if request.fresh else reusable_runs(request.out_dir, spec.name, tag)[:request.repeat]
        for old in previous:
            link = folder / old.name
            link.symlink_to(os.path.relpath(old, folder))
            entry.runs.append(old.name)
            entry.reused.append(old.name)
    turns = _Turns(request, board, study_cells, document, folder, progress)
    for round_ in range(request.repeat):
        turns.play(round_, [i for i, entry in enumerate(entries) if len(entry.runs) <= round_])
    ceiling = max(request.max_repeat or request.repeat, request.repeat)
    round_ = request.repeat
    while request.more_runs is not None and round_ < ceiling:
        chosen = extra_round(entries, request.more_runs(folder, document), round_)
        if not chosen:
            break
        turns.extra += len(chosen)
        turns.play(round_, chosen)
        round_ += 1


def extra_round(entries: list[StudyCell], wanted: list[int], round_: int) -> list[int]:
    """The positions of the cells an extra round runs: those asked for (by index) that are still ok and have
    no run of that round yet."""
    return [i for i, entry in enumerate(entries)
            if entry.index in wanted and entry.status == "ok" and len(entry.runs) <= round_]


class _Turns:
    """The study's runs, one round at a time: each chosen cell once, in the cells' order."""

    def __init__(self, request: StudyRequest, board: Board, study_cells: list[Cell], document: StudyDocument,
                 folder: Path, progress: StudyProgress) -> None:
        self.request, self.board, self.cells = request, board, study_cells
        self.document, self.folder, self.progress = document, folder, progress
        self.durations: list[float] = []
        self.extra = 0
        # one stop for every run: an interrupt during one run's capture ends the study, whatever that run's nsys
        # did afterwards, instead of being forgotten when the run returns
        self.stop = request.stop or HostStop()

    def play(self, round_: int, chosen: list[int]) -> None:
        for position in chosen:
            entry = self.document.cells[position]
            if entry.status != "ok":
                continue  # a failed cell's other repeats would fail the same way
            before = len(entry.runs)
            try:
                self._run(self.cells[position], entry, round_ + 1)
            finally:
                self.document.order.append(RoundRun(round=round_ + 1, cell=entry.index,
                                                    run=entry.runs[-1] if len(entry.runs) > before else None))
            write_study(self.folder, self.document)

    def _run(self, cell: Cell, entry: StudyCell, repeat: int) -> None:
        request, folder, progress = self.request, self.folder, self.progress
        app = cell_app(request.spec, cell, request.catalog)
        tag = RunStudy(name=request.spec.name, fingerprint=self.document.target_fingerprint, app_key=app_key(app),
                       variables=cell.variables)
        planned = len(self.cells) * request.repeat + self.extra
        left = planned - len(self.document.run_names)
        eta = (sum(self.durations) / len(self.durations)) * left if self.durations else None
        progress.begin_run(cell, len(self.cells), repeat, max(request.repeat, repeat), eta)
        started = time.monotonic()
        profile_request = ProfileRequest(
            host=request.host, app=app, out_dir=folder, connect=request.connect, settings=request.settings,
            inventory=request.inventory, study=tag.set(repeat=repeat), fleet=request.fleet, stop=self.stop,
            lease=request.lease)
        try:
            outcome = profile(profile_request, progress, self.board)
            entry.runs.append(outcome.run_dir.name)
            progress.end_run("ok")
        except (InterruptedRunError, ConnectionLostError) as stopped:
            _stopped_in(self.document, entry, repeat, stopped)
            progress.end_run("interrupted")
            raise
        except OrchestratorError as failed:
            if self.stop.interrupt.is_set():  # asked to stop: whatever went wrong after, the study ends here
                _stopped_in(self.document, entry, repeat, failed)
                progress.end_run("interrupted")
                why = "interrupted" if self.stop.kind == "interrupted" else f"stopped ({self.stop.reason})"
                ended = InterruptedRunError(f"{why} in run {repeat} of {entry.label or 'the study'}; then "
                                            f"{failed.message}", f"see {study_file(folder)}")
                ended.run_dir = failed.run_dir
                raise ended from None
            run_dir = failed.run_dir
            if run_dir is not None:
                entry.runs.append(run_dir.name)
            if run_dir is not None and _measured_despite_nsys(run_dir):
                entry.notes.append(f"{run_dir.name}: {failed.one_line()}; its report came back")
                progress.end_run("ok")
                return
            entry.status, entry.reason = "failed", failed.one_line()
            progress.end_run("failed")
        finally:
            self.durations.append(time.monotonic() - started)


def _stopped_in(document: StudyDocument, entry: StudyCell, repeat: int, stopped: OrchestratorError) -> None:
    """study.json says where the study stopped: the cell, the repeat, the run folder (if the run had one)."""
    run = stopped.run_dir.name if stopped.run_dir is not None else None
    if run is not None:
        entry.runs.append(run)
    entry.status = "interrupted"
    document.stopped_in = StoppedIn(cell=entry.index, label=entry.label, repeat=repeat, run=run)


def finish_document(document: StudyDocument, folder: Path) -> list[str]:
    """Each cell's metrics (values, median, interval) and the comparisons against the first cell. Returns what
    a measured run lacks (its app's figures, and why), each also in its cell's notes."""
    said: list[str] = []
    for entry in document.cells:
        values: dict[str, list[float]] = {}
        rounds: dict[str, list[float | None]] = {}  # per metric, each run's value in the runs' (the rounds') order
        units: dict[str, tuple[str, str | None]] = {}
        tops: list[str | None] = []
        verdicts: list[str | None] = []
        failures: list[str] = []
        for position, run_dir in enumerate(folder / name for name in entry.runs):
            measured = run_metrics(run_dir, entry.parser)
            if measured.app_failure:
                failures.append(measured.app_failure)
            if not measured_run(run_dir):
                continue
            for metric, value in measured.values.items():
                rounds.setdefault(metric, [None] * len(entry.runs))
                if run_dir.name not in entry.reused:  # a reused run shared no round with this folder's
                    rounds[metric][position] = value
            for note in measured.notes:
                entry.notes.append(f"{run_dir.name}: {note}")
                said.append(f"{entry.label or 'the study'}, {run_dir.name}: {note}")
            for metric, value in measured.values.items():
                values.setdefault(metric, []).append(value)
            units.update(measured.units)
            tops.append(measured.top_function)
            verdicts.append(measured.verdict)
        if failures and entry.status == "ok":
            entry.status, entry.reason = "failed", failures[0]
        elif failures and entry.reason:
            entry.reason = f"{entry.reason}; the app's output says: {failures[0]}"
        entry.metrics = {}
        for metric, found in values.items():
            try:
                entry.metrics[metric] = metric_figures(found, rounds.get(metric, []), *units[metric])
            except ValueError:
                continue
        entry.top_function = _most_common(tops)
        entry.verdict = _most_common(verdicts)
    document.comparisons = comparisons(document.cells)
    return said


def _measured_despite_nsys(run_dir: Path) -> bool:
    run = read_run_or_none(run_dir)
    return run is not None and measured_despite_nsys(run)


def comparisons(study_cells: list[StudyCell]) -> list[StudyComparison]:
    ok = [c for c in study_cells if c.status == "ok" and c.metrics]
    if len(ok) < 2:
        return []
    base, found = ok[0], []
    for other in ok[1:]:
        for metric in REPORT_METRICS.keys() | {m for m in base.metrics or {} if m.startswith("app.")}:
            if metric.startswith(SHARE_PREFIX):  # the parts of a frame's time: the study's page shows them whole
                continue
            a, b = base.metric(metric), other.metric(metric)
            if a is None or b is None:
                continue
            diff = compare_rounds(*a.paired_with(b), a.faster_when)
            found.append(StudyComparison(metric, base.index, other.index, diff.verdict, diff.relative, diff.p_value,
                                         diff.rounds, diff.reason))
    return sorted(found, key=lambda d: (d.other, d.metric))


def _most_common(items: list[str | None]) -> str | None:
    present = [i for i in items if i]
    return max(set(present), key=present.count) if present else None
