"""Study files: an app, a matrix of variables, repeats. Loading, checking and expanding into cells.

A cell is one combination of the matrix's values (minus the excluded ones). ``{name}`` in the study's
``args``, ``env`` values and ``command`` takes the cell's value of variable ``name``; ``{{`` and ``}}``
are literal braces. Every mistake is one line naming the file and the key.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import AppSpecError, StudySpecError, UsageError
from ..inventory.catalog import AppSpec, adhoc_app, find_app, with_overrides
from ..yaml_files import parse_yaml, read_yaml

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,59}$")
PLACEHOLDER_RE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
KEYS = {"study", "description", "app", "command", "workdir", "needs_display", "target", "repeat", "matrix", "exclude",
        "args", "env", "duration_s", "trace", "sample", "cpuctxsw", "gpu_metrics", "parser", "nsys"}
CAPTURE_KEYS = ("duration_s", "trace", "sample", "cpuctxsw", "gpu_metrics", "nsys")  # as an app spec means them
MAX_CELLS = 512
RESERVED = {"python"}  # {python} is the board's Python, filled in by the run
Scalar = str | int | float | bool


@dataclass(frozen=True)
class StudySpec:
    name: str
    source: str
    matrix: tuple[tuple[str, tuple[Scalar, ...]], ...]
    app: str | None = None
    command: tuple[str, ...] = ()
    workdir: str | None = None
    needs_display: bool = False
    target: str | None = None
    repeat: int = 3
    exclude: tuple[dict[str, Scalar], ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    description: str = ""
    overrides: dict[str, Any] = field(default_factory=dict)
    parser: str | None = None

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.matrix)


@dataclass(frozen=True)
class Cell:
    index: int
    variables: dict[str, Scalar]

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.variables.items())


def load_study(path: Path) -> StudySpec:
    return parse_study(read_yaml(path, StudySpecError, "study file"), str(path))


def _fail(source: str, key: str, problem: str, hint: str = "") -> StudySpecError:
    return StudySpecError(f"{source}: '{key}' {problem}", hint or f"fix '{key}' in {source}")


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def parse_study(data: Any, source: str) -> StudySpec:
    if not isinstance(data, dict):
        raise StudySpecError(f"{source}: a study file must be a mapping", "see 'Studies' in the README")
    unknown = sorted(str(k) for k in set(data) - KEYS)
    if unknown:
        raise _fail(source, unknown[0], "is not a study key", "known keys: " + ", ".join(sorted(KEYS)))
    name = data.get("study")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise _fail(source, "study", "must name the study: letters, digits, '.', '_' or '-' (60 at most)")
    if bool(data.get("app")) == bool(data.get("command")):
        raise _fail(source, "app", "or 'command' must be given, not both nor neither",
                    "name a catalog app ('orchestrate apps') or give command: [...]")
    matrix = _matrix(data.get("matrix"), source)
    variables = [n for n, _ in matrix]
    repeat = data.get("repeat", 3)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= 1000:
        raise _fail(source, "repeat", "must be a whole number from 1 to 1000")
    spec = StudySpec(
        name=name, source=source, matrix=matrix,
        app=_optional_str(data, "app", source), command=_str_list(data, "command", source),
        workdir=_optional_str(data, "workdir", source),
        needs_display=_bool(data, "needs_display", source), target=_optional_str(data, "target", source),
        repeat=repeat, exclude=_exclude(data.get("exclude"), dict(matrix), source),
        args=_str_list(data, "args", source), env=_env(data.get("env"), source),
        description=str(data.get("description") or "").strip(),
        overrides={k: data[k] for k in CAPTURE_KEYS if data.get(k) is not None},
        parser=_optional_str(data, "parser", source))
    for key, text in [("command", t) for t in spec.command] + [("args", t) for t in spec.args] + \
            [(f"env.{k}", v) for k, v in spec.env]:
        for placeholder in placeholders(text):
            if placeholder not in variables and placeholder not in RESERVED:
                raise _fail(source, key, f"names {{{placeholder}}}, which is not a matrix variable",
                            "variables: " + (", ".join(variables) or "none"))
    if not cells(spec):
        raise _fail(source, "exclude", "leaves no cell to run", "exclude fewer combinations")
    _check_overrides(spec.overrides, source)
    return spec


def _check_overrides(overrides: dict[str, Any], source: str) -> None:
    """duration_s, trace, sample, cpuctxsw, gpu_metrics and nsys mean what they mean in an app spec."""
    for key, value in overrides.items():
        try:
            _apply_overrides(adhoc_app("true", False), {key: value})
        except (AppSpecError, UsageError) as exc:
            raise _fail(source, key, f"is not valid: {exc.message}") from None


def _matrix(value: Any, source: str) -> tuple[tuple[str, tuple[Scalar, ...]], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not value:
        raise _fail(source, "matrix", "must map each variable to a list of values (or be left out)")
    matrix, count = [], 1
    for name, values in value.items():
        if not isinstance(name, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,39}$", name) or name in RESERVED:
            raise _fail(source, f"matrix.{name}", "is not a variable name (letters, digits, '_')")
        if not isinstance(values, list) or not values:
            raise _fail(source, f"matrix.{name}", "must be a non-empty list of values")
        if not all(_scalar(v) for v in values) or len({str(v) for v in values}) != len(values):
            raise _fail(source, f"matrix.{name}", "must list distinct plain values (text, numbers, true/false)")
        matrix.append((name, tuple(values)))
        count *= len(values)
    if count > MAX_CELLS:
        raise _fail(source, "matrix", f"makes {count} cells, more than {MAX_CELLS}", "split the study")
    return tuple(matrix)


def _exclude(value: Any, matrix: dict[str, tuple[Scalar, ...]], source: str) -> tuple[dict[str, Scalar], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(source, "exclude", "must be a list of {variable: value} mappings")
    rules = []
    for i, rule in enumerate(value):
        if not isinstance(rule, dict) or not rule:
            raise _fail(source, f"exclude[{i}]", "must be a non-empty {variable: value} mapping")
        for name, wanted in rule.items():
            if name not in matrix:
                raise _fail(source, f"exclude[{i}].{name}", "is not a matrix variable",
                            "variables: " + ", ".join(matrix))
            if str(wanted) not in {str(v) for v in matrix[name]}:
                raise _fail(source, f"exclude[{i}].{name}", f"is {wanted!r}, not one of the matrix's values")
        rules.append(dict(rule))
    return tuple(rules)


def _optional_str(data: dict[str, Any], key: str, source: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(source, key, "must be a non-empty text")
    return value


def _bool(data: dict[str, Any], key: str, source: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise _fail(source, key, "must be true or false")
    return value


def _str_list(data: dict[str, Any], key: str, source: str) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(_scalar(v) for v in value):
        raise _fail(source, key, "must be a list of texts")
    return tuple(str(v) for v in value)


def _env(value: Any, source: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(isinstance(k, str) and _scalar(v) for k, v in value.items()):
        raise _fail(source, "env", "must map variable names to texts")
    return tuple((k, str(v)) for k, v in value.items())


def placeholders(text: str) -> list[str]:
    return [m.group(1).strip() for m in PLACEHOLDER_RE.finditer(text) if m.group(1) is not None]


def fill(text: str, variables: dict[str, Scalar]) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(0) in ("{{", "}}"):
            return match.group(0)[0]
        name = match.group(1).strip()
        return match.group(0) if name in RESERVED else str(variables[name])
    return PLACEHOLDER_RE.sub(one, text)


def cells(spec: StudySpec) -> list[Cell]:
    """Every combination of the matrix, in the file's order, minus the excluded ones (one cell without
    a matrix)."""
    names = spec.variables
    found: list[Cell] = []
    for values in itertools.product(*(v for _, v in spec.matrix)):
        variables = dict(zip(names, values))
        if any(all(str(variables[k]) == str(v) for k, v in rule.items()) for rule in spec.exclude):
            continue
        found.append(Cell(index=len(found), variables=variables))
    return found


def cell_app(spec: StudySpec, cell: Cell, catalog: dict[str, AppSpec]) -> AppSpec:
    """The app one cell runs: the catalog app (or the study's command) with the cell's args and env."""
    if spec.app:  # the study's workdir and needs_display over the app spec's
        found = find_app(spec.app, catalog)
        base = replace(found, workdir=spec.workdir or found.workdir,
                       needs_display=spec.needs_display or found.needs_display)
    else:
        base = replace(adhoc_app("true", spec.needs_display),
                       command=tuple(fill(t, cell.variables) for t in spec.command), source=spec.source,
                       workdir=spec.workdir)
        base = replace(base, name=Path(base.command[0]).name)
    env = dict(base.env)
    env.update({k: fill(v, cell.variables) for k, v in spec.env})
    app = replace(base, command=base.command + tuple(fill(t, cell.variables) for t in spec.args),
                  env=tuple(sorted(env.items())), parser=spec.parser or base.parser)
    return _apply_overrides(app, spec.overrides)


def _apply_overrides(app: AppSpec, overrides: dict[str, Any]) -> AppSpec:
    trace = overrides.get("trace")
    if isinstance(trace, list):
        trace = ",".join(str(t) for t in trace)
    return with_overrides(app, overrides.get("duration_s"), None, trace, overrides.get("sample"),
                          overrides.get("cpuctxsw"), overrides.get("gpu_metrics"), overrides.get("nsys"))


def without_nsys(spec: StudySpec) -> StudySpec:
    """The study with every cell run without nsys (--no-nsys)."""
    return replace(spec, overrides={**spec.overrides, "nsys": False})


def _set_value(text: str) -> Any:
    """One value of --set, read like a YAML scalar ('2' is a number, 'none' a string)."""
    if not text.strip():
        return ""
    try:
        return parse_yaml(text, "--set", UsageError)
    except UsageError:
        return None  # not a scalar: refused by the caller


def with_values(spec: StudySpec, settings: list[str]) -> StudySpec:
    """'--set frames=10' or '--set threads=1,2': other values for a matrix variable (read like YAML
    scalars), e.g. a quick run of a long study; excluded combinations stay excluded."""
    matrix = dict(spec.matrix)
    for setting in settings:
        name, sep, text = setting.partition("=")
        name = name.strip()
        if not sep or name not in matrix:
            raise UsageError(f"--set {setting}: name a matrix variable and its values, e.g. --set "
                             f"{next(iter(matrix), 'frames')}=10", "variables: " + (", ".join(matrix) or "none"))
        values = tuple(_set_value(v) for v in text.split(","))
        if not all(_scalar(v) and v != "" for v in values) or len({str(v) for v in values}) != len(values):
            raise UsageError(f"--set {setting}: give distinct plain values, comma-separated", "e.g. --set "
                             f"{name}=1,2")
        matrix[name] = values
    changed = replace(spec, matrix=tuple(matrix.items()),
                      exclude=tuple(r for r in spec.exclude if all(str(v) in {str(x) for x in matrix[k]}
                                                                  for k, v in r.items())))
    if not cells(changed):
        raise StudySpecError("--set leaves no cell to run", "exclude fewer combinations or set other values")
    return changed
