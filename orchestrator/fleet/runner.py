"""Run one app, or one study, on many boards at once: at most ``forks`` at a time, each board with its
own connection, agent and run folder inside the fleet folder, and a result per board, a value or its
error, so that one dead board never stops or hides the others (Fabric's group semantics).

Each board's result is written to ``boards.jsonl`` (and ``fleet.json`` rewritten) the moment it ends:
the host keeps no run's figures in memory, and a fleet that dies keeps what it measured. A Ctrl-C
reaches only the main thread; it asks every board to end its capture early (``HostStop``), and a second
one stops waiting. A board past ``board_timeout_s`` has its capture ended the same way.
"""
from __future__ import annotations

import json
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from .. import __version__
from ..boards.lease import LeaseOptions
from ..documents.fleet import FleetBoard, FleetDocument, write_fleet
from ..documents.run_sections import RunFleet
from ..errors import OrchestratorError
from ..inventory.catalog import AppSpec, chosen_app, load_catalog
from ..inventory.hosts import Inventory, VaultOptions, load_inventory
from ..runs.folder import safe_name_part
from ..runs.profile import ProfileRequest
from ..runs.remote_capture import HostStop
from ..runs.run_settings import RunSettings
from ..study.runner import StudyProgress, StudyRequest
from ..study.spec import StudySpec, load_study, with_values, without_nsys
from ..targets.settings import ConnectOptions
from .board import board_failure, profile_board, study_board
from .patterns import select_hosts


class FleetView(Protocol):
    """Where the fleet shows each board's phase; rendering lives in the CLI."""

    def board(self, target: str) -> StudyProgress: ...

    def ended(self, result: FleetBoard) -> None: ...


@dataclass(frozen=True)
class FleetPlan:
    """What a fleet runs, and where: the inventory's boards a pattern matched, and an app or a study."""
    inventory: Inventory
    targets: tuple[str, ...]
    inventory_path: str | None = None
    limit: str | None = None
    app: AppSpec | None = None
    study: StudySpec | None = None
    catalog: dict[str, AppSpec] = field(default_factory=dict)


def plan_fleet(inventory_path: str | None, limit: str | None, apps_dir: Path | None, *, study: Path | None = None,
               study_values: Sequence[str] = (), app: str | None = None, app_cmd: str | None = None,
               needs_display: bool = False, vault: VaultOptions | None = None, **overrides: Any) -> FleetPlan:
    """The inventory's boards ``limit`` matches (Ansible's patterns), and the study file (with --set's values) or
    the app (from the catalog, or a command line) with the command line's capture values."""
    inventory = load_inventory(inventory_path, vault)
    targets = tuple(select_hosts(inventory, limit))
    catalog = load_catalog(apps_dir)
    if study is not None:
        spec = with_values(load_study(study), list(study_values))
        if overrides.get("nsys") is False:
            spec = without_nsys(spec)
        return FleetPlan(inventory, targets, inventory_path, limit, None, spec, catalog)
    return FleetPlan(inventory, targets, inventory_path, limit,
                     chosen_app(catalog, app, app_cmd, needs_display, **overrides), None, catalog)


@dataclass(frozen=True)
class FleetRequest:
    plan: FleetPlan
    out_dir: Path
    repeat: int | None = None
    forks: int = 5
    connect: ConnectOptions = field(default_factory=ConnectOptions)
    settings: RunSettings = field(default_factory=RunSettings)
    board_timeout_s: float | None = None
    leases: LeaseOptions = field(default_factory=LeaseOptions)


@dataclass(frozen=True)
class FleetOutcome:
    folder: Path
    results: list[FleetBoard]
    interrupted: bool = False

    @property
    def failed(self) -> list[FleetBoard]:
        """The boards that failed or were unreachable (a quarantined board skipped is in the recap, not here)."""
        return [r for r in self.results if r.status not in ("ok", "skipped")]


def fleet_folder(out_dir: Path, what: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = out_dir / f"{stamp}-fleet-{safe_name_part(what)}"
    folder, n = base, 1
    while True:
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            n += 1
            folder = base.with_name(f"{base.name}-{n}")


def run_fleet(request: FleetRequest, view: FleetView) -> FleetOutcome:
    if (request.plan.app is None) == (request.plan.study is None):
        raise ValueError("a fleet runs an app or a study")
    what = request.plan.app.name if request.plan.app else request.plan.study.name  # type: ignore[union-attr]
    folder = fleet_folder(request.out_dir, what)
    document = FleetDocument(
        orchestrate_version=__version__, folder=folder.name, kind="app" if request.plan.app else "study", what=what,
        limit=request.plan.limit or "all", inventory=request.plan.inventory_path or request.plan.inventory.source,
        forks=request.forks, targets=list(request.plan.targets), started=datetime.now(timezone.utc).isoformat())
    results: dict[str, FleetBoard] = {}
    lock = threading.Lock()
    stop = HostStop()

    def ended(result: FleetBoard) -> None:
        with lock:
            results[result.target] = result
            with open(folder / "boards.jsonl", "a", encoding="utf-8") as stream:
                stream.write(json.dumps(result.as_json(), default=str) + "\n")
            document.boards = [results[t] for t in request.plan.targets if t in results]
            write_fleet(folder, document)
        view.ended(result)

    write_fleet(folder, document)
    with ThreadPoolExecutor(max_workers=max(1, request.forks), thread_name_prefix="board") as pool:
        futures: dict[Future[FleetBoard], str] = {
            pool.submit(_one_board, request, target, folder, view, stop): target for target in request.plan.targets}
        _wait_for_boards(futures, stop, ended)
    document.status = "interrupted" if stop.interrupt.is_set() else "complete"
    document.finished = datetime.now(timezone.utc).isoformat()
    ordered = [results[t] for t in request.plan.targets if t in results]
    document.boards = ordered
    document.recap = recap_counts(ordered)
    write_fleet(folder, document)
    from .page import write_fleet_page
    write_fleet_page(document, folder)
    return FleetOutcome(folder, ordered, stop.interrupt.is_set())


def recap_counts(results: list[FleetBoard]) -> dict[str, int]:
    counts = {"ok": 0, "failed": 0, "unreachable": 0, "skipped": 0}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    return counts


def _wait_for_boards(futures: dict[Future[FleetBoard], str], stop: HostStop,
                     ended: Callable[[FleetBoard], None]) -> None:
    """Collect each board's result as it ends. Ctrl-C (only this thread hears it): the first asks every
    board to end its capture and keeps the boards not yet started from starting, the second stops
    waiting for the boards' captures (each board keeps its report for 'orchestrate fetch')."""
    reported: set[Future[FleetBoard]] = set()
    while len(reported) < len(futures):
        try:
            wait([f for f in futures if f not in reported], timeout=0.25, return_when=FIRST_COMPLETED)
            for future in [f for f in futures if f.done() and f not in reported]:
                if future.cancelled():
                    ended(FleetBoard(futures[future], "failed", "interrupted before it started", 16))
                else:
                    ended(future.result())
                reported.add(future)
        except KeyboardInterrupt:
            if stop.interrupt.is_set():
                stop.abandon.set()
            stop.request()
            for future in futures:
                future.cancel()  # those not started yet; the others run on and end their captures early


def _one_board(request: FleetRequest, target: str, folder: Path, view: FleetView, fleet_stop: HostStop) -> FleetBoard:
    """Never raises for the board's own failures: they become its result."""
    started = time.monotonic()
    progress = view.board(target)
    stop = HostStop()
    watcher = _BoardWatch(fleet_stop, stop, request.board_timeout_s)
    try:
        host = request.plan.inventory.host(target)
        if request.plan.app is not None:
            profile_request = ProfileRequest(
                host=host, app=request.plan.app, out_dir=folder, connect=request.connect, settings=request.settings,
                inventory=request.plan.inventory_path, fleet=RunFleet(folder=folder.name, target=target), stop=stop)
            result = profile_board(profile_request, progress, folder, request.leases, watcher.begin)
        else:
            assert request.plan.study is not None
            study_request = StudyRequest(
                spec=request.plan.study, host=host, catalog=request.plan.catalog,
                out_dir=folder / safe_name_part(target),
                repeat=request.repeat or request.plan.study.repeat, connect=request.connect,
                inventory=request.plan.inventory_path, settings=request.settings, stop=stop,
                fleet=RunFleet(folder=folder.name, target=target))
            result = study_board(study_request, progress, folder, request.leases, watcher.begin)
    except OrchestratorError as exc:  # the host's own values refused
        result = board_failure(target, exc, folder)
    except Exception as exc:  # a bug on one board must not hide the others: its result says so
        log = folder / "internal-errors.log"
        with open(log, "a", encoding="utf-8") as stream:
            stream.write(f"{target}:\n{traceback.format_exc()}\n")
        result = FleetBoard(target, "failed", f"internal error: {exc!r} (traceback in {log}; please report it)", 1)
    finally:
        watcher.close()
    if watcher.timed_out and result.status == "ok":
        result = result.replace(status="failed", exit_code=11, reason=f"took longer than --board-timeout "
                                f"{request.board_timeout_s:g} s: its capture was ended early (report kept)")
    result.seconds = round(time.monotonic() - started, 3)
    return result


class _BoardWatch:
    """Relays the fleet's stop to one board, and ends that board's capture once its deadline passes (counted from
    when its lease was granted: the wait for a board another job holds is not the board's time)."""

    def __init__(self, fleet_stop: HostStop, stop: HostStop, timeout_s: float | None) -> None:
        self.fleet_stop, self.stop, self.timed_out = fleet_stop, stop, False
        self.timeout_s = timeout_s
        self.deadline: float | None = None
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True, name="board-watch")
        self.thread.start()

    def _watch(self) -> None:
        while not self.closed.wait(0.2):
            if self.fleet_stop.abandon.is_set():
                self.stop.request(self.fleet_stop.reason, self.fleet_stop.kind)
                self.stop.abandon.set()
            elif self.fleet_stop.interrupt.is_set():
                self.stop.request(self.fleet_stop.reason, self.fleet_stop.kind)
            elif self.deadline is not None and time.monotonic() > self.deadline and not self.stop.interrupt.is_set():
                self.timed_out = True
                self.stop.request("the fleet's --board-timeout passed", "deadline")

    def begin(self) -> None:
        """The board is the fleet's now: its time starts."""
        if self.timeout_s:
            self.deadline = time.monotonic() + self.timeout_s

    def close(self) -> None:
        self.closed.set()
        self.thread.join()
