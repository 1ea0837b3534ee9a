"""Pure builders of nsys command lines: a spec in, an argv list out."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import AppSpecError

if TYPE_CHECKING:  # the catalog (and YAML) load only where an app is profiled
    from ..inventory.catalog import AppSpec

# The app is started through this POSIX shell line: it records the app's PID (the watchdog finds
# the app's session by it: nsys starts the app in a session of its own) and sends the app's output
# to files, then exec's the app so nsys traces the app itself.
LAUNCH_WRAPPER = 'echo $$ >"$1"; out=$2; err=$3; shift 3; exec "$@" >"$out" 2>"$err"'


@dataclass(frozen=True)
class RemoteRunPaths:
    """Where one run's files live on the target."""

    run_dir: str

    @property
    def report_base(self) -> str:
        return f"{self.run_dir}/report"

    @property
    def pid_file(self) -> str:
        return f"{self.run_dir}/app.pid"

    @property
    def app_stdout(self) -> str:
        return f"{self.run_dir}/app.stdout.log"

    @property
    def app_stderr(self) -> str:
        return f"{self.run_dir}/app.stderr.log"

    @property
    def nsys_log(self) -> str:
        return f"{self.run_dir}/nsys.log"


def whole_seconds(value: float) -> int:
    """nsys takes whole seconds; round up so a capture is never shorter than asked."""
    return max(1, math.ceil(value))


# One meaning, two spellings: sampling the app's process tree is 'cpu' up to nsys 2021 and 'process-tree' from
# 2022.1 (which still takes 'cpu' without saying so); each version is given the word its help lists.
SAME_MEANING = {"cpu": "process-tree", "process-tree": "cpu"}
Accepted = Mapping[str, Sequence[str]]


def spelled_for(option: str, value: str, accepted: Accepted | None, version: str) -> str:
    """value as this nsys takes it for --option (its help's list), or an AppSpecError naming what it takes."""
    allowed = (accepted or {}).get(option)
    if not allowed or "none" not in allowed or value in allowed:  # every version lists 'none' last: a list
        return value                                               # without it was read cut short, so not trusted
    if SAME_MEANING.get(value) in allowed:
        return SAME_MEANING[value]
    raise AppSpecError(f"nsys {version} on the board takes --{option} {', '.join(allowed)}, not '{value}'",
                       f"set {option} in the app's spec (or --{option}) to one of those, or install a newer nsys")


def profile_argv(nsys: str, spec: AppSpec, paths: RemoteRunPaths, accepted: Accepted | None = None,
                 version: str = "?", gpu_metrics_option: str | None = None) -> list[str]:
    """No --duration: the agent ends the app itself after delay + duration. nsys 2022.4's own timer
    left it stuck in "Generating" in about a third of es2gears runs; an app that ends (however it
    ends) let it finish every time. ``accepted``: the values the board's nsys lists in its help for the
    options that differ between versions (sample, cpuctxsw, trace); ``gpu_metrics_option``: how its help spells
    the option that picks GPUs for hardware metrics (--gpu-metrics-device up to 2024, then -devices)."""
    argv = [
        nsys, "profile",
        "--trace=" + ",".join(spelled_for("trace", name, accepted, version) for name in spec.trace),
        "--sample=" + spelled_for("sample", spec.sample, accepted, version),
        "--output=" + paths.report_base,
        "--force-overwrite=true",
    ]
    if spec.delay_s:
        argv.append(f"--delay={whole_seconds(spec.delay_s)}")
    if spec.cpuctxsw:
        argv.append("--cpuctxsw=" + spelled_for("cpuctxsw", spec.cpuctxsw, accepted, version))
    if spec.gpu_metrics:
        argv.append(f"--{gpu_metrics_option or 'gpu-metrics-device'}=all")
        if spec.gpu_metrics != "default":
            argv.append("--gpu-metrics-set=" + spec.gpu_metrics)
    argv += list(spec.nsys_args)
    return argv + launch_argv(spec, paths)


def launch_argv(spec: AppSpec, paths: RemoteRunPaths) -> list[str]:
    """The app as the launch wrapper starts it: under nsys, or alone for a run without nsys (--no-nsys)."""
    return ["/bin/sh", "-c", LAUNCH_WRAPPER, "orchestrate-launch", paths.pid_file, paths.app_stdout,
            paths.app_stderr, *spec.command]


def export_sqlite_argv(nsys: str, report: str, sqlite: str) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", sqlite, report]


def import_argv(importer: str, qdstrm: str) -> list[str]:
    return [importer, "-i", qdstrm]
