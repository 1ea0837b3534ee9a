"""App specs: how to launch an app under nsys. Built-in YAML files ship in ``orchestrator/inventory/apps/``;
a user folder (``$ORCHESTRATE_APPS_DIR`` or ``~/.config/orchestrate/apps``) adds or overrides them."""
from __future__ import annotations

import math
import os
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import AppSpecError, UsageError
from ..yaml_files import read_yaml

BUILTIN_DIR = Path(__file__).parent / "apps"
KNOWN_TRACES = frozenset({
    "cuda", "nvtx", "osrt", "opengl", "opengl-annotations", "cublas", "cublas-verbose", "cudnn",
    "cusparse", "cusparse-verbose", "vulkan", "vulkan-annotations", "mpi", "oshmem", "ucx", "openacc",
    "openmp", "nvvideo", "none",
})
SAMPLE_MODES = ("cpu", "none", "process-tree", "system-wide")
CPUCTXSW_MODES = ("process-tree", "system-wide", "none")
XVFB_POLICIES = ("auto", "always", "never")


@dataclass(frozen=True)
class AppSpec:
    name: str
    command: tuple[str, ...]
    description: str = ""
    workdir: str | None = None
    env: tuple[tuple[str, str], ...] = field(default=())
    trace: tuple[str, ...] = ("osrt", "nvtx")
    sample: str = "cpu"
    cpuctxsw: str | None = None
    duration_s: float = 5.0
    delay_s: float = 0.0
    needs_display: bool = False
    xvfb: str | None = None
    frame_delimiter: str | None = None
    nsys_args: tuple[str, ...] = field(default=())
    gpu_metrics: str | None = None  # sample the GPU's hardware metrics with this nsys metric set ('default': nsys's)
    parser: str | None = None
    files: tuple[str, ...] = field(default=())  # host paths uploaded beside the app on the board
    nsys: bool = True  # False: the app runs as a benchmark, without nsys (--no-nsys)
    source: str = "<built-in>"

    @property
    def capture_s(self) -> float:
        """The seconds the capture records the app: its delay, then its duration."""
        return self.delay_s + self.duration_s


# the command line's capture options and the app spec's fields they set (profile, study, fleet, ci; a next step's
# command line says them again)
CAPTURE_OPTION_FIELDS = {"--duration": "duration_s", "--delay": "delay_s", "--trace": "trace", "--sample": "sample",
                         "--cpuctxsw": "cpuctxsw", "--gpu-metrics": "gpu_metrics"}

_FIELDS = {"name", "description", "command", "workdir", "env", "trace", "sample", "cpuctxsw", "duration_s",
           "delay_s", "needs_display", "xvfb", "frame_delimiter", "nsys_args", "gpu_metrics", "parser", "files",
           "nsys"}


def _fail(source: str, key: str, expected: str, value: Any) -> AppSpecError:
    return AppSpecError(f"{source}: '{key}' must be {expected}, not {value!r}", f"fix '{key}' in {source}")


COMMAND_LINE = "the command line"
APP_CMD_SOURCE = "--app-cmd"  # the source of an app spec made from --app-cmd


def _split(text: str, key: str, source: str) -> tuple[str, ...]:
    """A command line's words as a POSIX shell splits them; an unclosed quote is said, with where."""
    try:
        return tuple(shlex.split(text))
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        problem = f"cannot be split into words ({str(exc).lower()}): {text!r}"
        if source == COMMAND_LINE:
            raise UsageError(f"{key} {problem}", f"close the quote in {key}, or quote the character with \\") from None
        raise AppSpecError(f"{source}: '{key}' {problem}",
                           f"close the quote in '{key}', or quote the character with \\") from None


def _string_list(value: Any, key: str, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return _split(value, key, source)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(str(v) for v in value)
    raise _fail(source, key, "a list of strings", value)


def _number(value: Any, key: str, source: str, minimum: float, maximum: float = 86400.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not minimum <= value <= maximum:
        raise _fail(source, key, f"a number of seconds from {minimum:g} to {maximum:g}", value)
    return float(value)


def parse_app_spec(data: Any, source: str) -> AppSpec:
    if not isinstance(data, dict):
        raise AppSpecError(f"{source}: an app spec must be a mapping", "see the app catalog in the README")
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise AppSpecError(f"{source}: unknown key '{unknown[0]}'", "known keys: " + ", ".join(sorted(_FIELDS)))
    for required in ("name", "command"):
        if not data.get(required):
            raise AppSpecError(f"{source}: '{required}' is missing", f"add '{required}' to {source}")
    env = data.get("env") or {}
    if not isinstance(env, dict):
        raise _fail(source, "env", "a mapping of names to strings", env)
    trace = _string_list(data.get("trace", ["osrt", "nvtx"]), "trace", source)
    bad = [t for t in trace if t not in KNOWN_TRACES]
    if bad:
        raise AppSpecError(f"{source}: unknown trace '{bad[0]}'", "known: " + ", ".join(sorted(KNOWN_TRACES)))
    sample = data.get("sample", "cpu")
    if sample not in SAMPLE_MODES:
        raise _fail(source, "sample", "one of " + ", ".join(SAMPLE_MODES), sample)
    xvfb = data.get("xvfb")
    if xvfb is not None and xvfb not in XVFB_POLICIES:
        raise _fail(source, "xvfb", "one of " + ", ".join(XVFB_POLICIES), xvfb)
    for flag in ("needs_display", "nsys"):
        if not isinstance(data.get(flag, flag == "nsys"), bool):
            raise _fail(source, flag, "true or false", data[flag])
    return AppSpec(
        name=str(data["name"]),
        command=_string_list(data["command"], "command", source),
        description=str(data.get("description", "")).strip(),
        workdir=data.get("workdir"),
        env=tuple(sorted((str(k), str(v)) for k, v in env.items())),
        trace=trace,
        sample=sample,
        cpuctxsw=_cpuctxsw(data.get("cpuctxsw"), source),
        duration_s=_number(data.get("duration_s", 5), "duration_s", source, 0.1),
        delay_s=_number(data.get("delay_s", 0), "delay_s", source, 0),
        needs_display=bool(data.get("needs_display", False)),
        xvfb=xvfb,
        frame_delimiter=data.get("frame_delimiter"),
        nsys_args=_string_list(data.get("nsys_args", []), "nsys_args", source),
        gpu_metrics=_gpu_metrics(data.get("gpu_metrics"), "gpu_metrics", source),
        parser=_parser(data.get("parser"), source),
        files=_files(data.get("files"), source),
        nsys=data.get("nsys", True),
        source=source,
    )


def user_apps_dir() -> Path:
    configured = os.environ.get("ORCHESTRATE_APPS_DIR")
    return Path(configured) if configured else Path.home() / ".config" / "orchestrate" / "apps"


def load_catalog(extra_dir: Path | None = None) -> dict[str, AppSpec]:
    catalog: dict[str, AppSpec] = {}
    for folder in (BUILTIN_DIR, extra_dir or user_apps_dir()):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml")):
            # by its full path: what run.json records of it, and a next step's --apps-dir, hold from any folder
            spec = parse_app_spec(read_yaml(path, AppSpecError, "app spec"), str(path.absolute()))
            catalog[spec.name] = spec
    return catalog


def find_app(name: str, catalog: dict[str, AppSpec]) -> AppSpec:
    if name not in catalog:
        raise AppSpecError(f"no app '{name}' in the catalog (known: {', '.join(sorted(catalog))})",
                           f"add {user_apps_dir()}/{name}.yaml or use --app-cmd")
    return catalog[name]


def adhoc_app(command_line: str, needs_display: bool) -> AppSpec:
    argv = _split(command_line, "--app-cmd", COMMAND_LINE)
    if not argv:
        raise UsageError("--app-cmd is empty", "give the command line to profile, e.g. --app-cmd './app -x'")
    return AppSpec(name=Path(argv[0]).name, command=argv, needs_display=needs_display, source=APP_CMD_SOURCE)


def _files(value: Any, source: str) -> tuple[str, ...]:
    """Paths relative to the spec's folder ('~' is the user's home), made absolute; whether they exist is
    checked when a run needs them."""
    names = _string_list(value or [], "files", source)
    base = Path(source).parent if source not in ("<built-in>", APP_CMD_SOURCE) else Path.cwd()
    found = []
    for name in names:
        path = Path(name).expanduser()
        found.append(str(path if path.is_absolute() else (base / path).resolve()))
    if len({Path(f).name for f in found}) != len(found):
        raise _fail(source, "files", "files with distinct names (they land in one folder)", list(names))
    return tuple(found)


def _parser(value: Any, source: str) -> str | None:
    from ..parsers import PARSERS
    if value is not None and value not in PARSERS:
        raise _fail(source, "parser", "one of " + ", ".join(PARSERS), value)
    return value


def _cpuctxsw(value: Any, source: str) -> str | None:
    if value is not None and value not in CPUCTXSW_MODES:
        raise _fail(source, "cpuctxsw", "one of " + ", ".join(CPUCTXSW_MODES), value)
    return value


# a metric set as nsys names it (its alias, e.g. ga10b, or its index), or 'default': the first set for the GPU
METRIC_SET = re.compile(r"^[A-Za-z0-9][\w.-]*$")


def _gpu_metrics(value: Any, key: str, source: str) -> str | None:
    if value is not None and not (isinstance(value, str) and METRIC_SET.match(value)):
        raise _fail(source, key, "a GPU metric set nsys lists (e.g. ga10b; 'default' for nsys's choice)", value)
    return value


def with_overrides(spec: AppSpec, duration_s: float | None = None, delay_s: float | None = None,
                   trace: str | None = None, sample: str | None = None, cpuctxsw: str | None = None,
                   gpu_metrics: str | None = None, nsys: bool | None = None) -> AppSpec:
    """The spec with the command line's values; a bad one is a usage error (exit 2), as the option's.
    ``nsys`` False runs the app without nsys (--no-nsys)."""
    try:
        return _overridden(spec, duration_s, delay_s, trace, sample, cpuctxsw, gpu_metrics, nsys)
    except AppSpecError as exc:
        raise UsageError(exc.message.removeprefix(f"{COMMAND_LINE}: "), exc.hint) from None


def chosen_app(catalog: dict[str, AppSpec], name: str | None, command_line: str | None, needs_display: bool = False,
               **overrides: Any) -> AppSpec:
    """The catalog's app ``name``, else one made of ``command_line``, with the command line's capture values
    (``needs_display`` gives either a display)."""
    spec = find_app(name, catalog) if name else adhoc_app(command_line or "", needs_display)
    if needs_display and not spec.needs_display:
        spec = replace(spec, needs_display=True)
    return with_overrides(spec, **overrides)


def _overridden(spec: AppSpec, duration_s: float | None, delay_s: float | None, trace: str | None,
                sample: str | None, cpuctxsw: str | None, gpu_metrics: str | None = None,
                nsys: bool | None = None) -> AppSpec:
    changes: dict[str, Any] = {}
    if nsys is not None:
        if not isinstance(nsys, bool):
            raise AppSpecError(f"nsys must be true or false, not {nsys!r}", "write nsys: false to run without nsys")
        changes["nsys"] = nsys
    if gpu_metrics is not None:
        changes["gpu_metrics"] = _gpu_metrics(gpu_metrics, "--gpu-metrics", COMMAND_LINE)
    if duration_s is not None:
        changes["duration_s"] = _number(duration_s, "--duration", COMMAND_LINE, 0.1)
    if delay_s is not None:
        changes["delay_s"] = _number(delay_s, "--delay", COMMAND_LINE, 0)
    if trace is not None:
        changes["trace"] = _string_list(trace.replace(",", " "), "--trace", COMMAND_LINE)
        bad = [t for t in changes["trace"] if t not in KNOWN_TRACES]
        if bad:
            raise AppSpecError(f"unknown trace '{bad[0]}' in --trace", "known: " + ", ".join(sorted(KNOWN_TRACES)))
    if sample is not None:
        if sample not in SAMPLE_MODES:
            raise AppSpecError(f"--sample must be one of {', '.join(SAMPLE_MODES)}", "fix --sample")
        changes["sample"] = sample
    if cpuctxsw is not None:
        if cpuctxsw not in CPUCTXSW_MODES:
            raise AppSpecError(f"--cpuctxsw must be one of {', '.join(CPUCTXSW_MODES)}", "fix --cpuctxsw")
        changes["cpuctxsw"] = cpuctxsw
    return replace(spec, **changes)
