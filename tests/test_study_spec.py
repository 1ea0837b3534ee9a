"""Study files: loading, one-line errors naming file and key, matrix expansion and each cell's app."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from orchestrator.errors import StudySpecError, UsageError
from orchestrator.inventory.catalog import load_catalog
from orchestrator.study.spec import cell_app, cells, fill, load_study, parse_study, with_values

DELEGATE = {
    "study": "posebench-delegate", "command": ["python3", "posebench.py"], "target": "local", "repeat": 3,
    "matrix": {"delegate": ["xnnpack", "none"], "threads": [1, 2]},
    "exclude": [{"delegate": "none", "threads": 2}],
    "args": ["--delegate", "{delegate}", "--threads", "{threads}"],
    "env": {"POSEBENCH_THREADS": "{threads}", "PLAIN": "x{{y}}"},
}


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_issue_shape_expands_into_three_cells_in_file_order(tmp_path):
    spec = load_study(write(tmp_path, DELEGATE))
    assert (spec.name, spec.target, spec.repeat, spec.variables) == ("posebench-delegate", "local", 3,
                                                                      ("delegate", "threads"))
    found = cells(spec)
    assert [c.variables for c in found] == [{"delegate": "xnnpack", "threads": 1},
                                            {"delegate": "xnnpack", "threads": 2}, {"delegate": "none", "threads": 1}]
    assert [c.index for c in found] == [0, 1, 2] and found[2].label == "delegate=none, threads=1"


def test_each_cell_app_takes_its_values_in_args_and_env(tmp_path):
    spec = load_study(write(tmp_path, {**DELEGATE, "duration_s": 4, "trace": ["osrt", "nvtx"], "sample": "none",
                                       "gpu_metrics": "ga10b"}))
    app = cell_app(spec, cells(spec)[1], load_catalog())
    assert app.command == ("python3", "posebench.py", "--delegate", "xnnpack", "--threads", "2")
    assert dict(app.env) == {"POSEBENCH_THREADS": "2", "PLAIN": "x{y}"}
    assert (app.name, app.duration_s, app.trace, app.sample, app.gpu_metrics) == (
        "python3", 4.0, ("osrt", "nvtx"), "none", "ga10b")


def test_a_catalog_app_keeps_its_spec_and_gains_the_args(tmp_path):
    data = {"study": "gears", "app": "es2gears", "matrix": {"size": ["300x300", "600x600"]},
            "args": ["-geometry", "{size}"]}
    spec = load_study(write(tmp_path, data))
    app = cell_app(spec, cells(spec)[1], load_catalog())
    assert app.command == ("es2gears_x11", "-geometry", "600x600")
    assert app.needs_display and app.frame_delimiter == "eglSwapBuffers" and spec.repeat == 3


def test_no_matrix_is_one_cell(tmp_path):
    spec = load_study(write(tmp_path, {"study": "one", "command": ["./bench"], "repeat": 5}))
    assert [c.variables for c in cells(spec)] == [{}]


@pytest.mark.parametrize("change, message", [
    ({"colour": "blue"}, "'colour' is not a study key (known keys: "),
    ({"study": "../up"}, "'study' must name the study"),
    ({"app": "es2gears"}, "'app' or 'command' must be given, not both nor neither"),
    ({"matrix": {}}, "'matrix' must map each variable to a list of values"),
    ({"matrix": {"threads": []}}, "'matrix.threads' must be a non-empty list of values"),
    ({"matrix": {"threads": [1, 1]}}, "'matrix.threads' must list distinct plain values"),
    ({"matrix": {"1x": [1]}}, "'matrix.1x' is not a variable name"),
    ({"matrix": {"python": ["3"]}}, "'matrix.python' is not a variable name"),
    ({"args": ["--nms", "{nms}"]}, "'args' names {nms}, which is not a matrix variable (variables: delegate, threads)"),
    ({"env": {"POSEBENCH_NMS": "{nms}"}}, "'env.POSEBENCH_NMS' names {nms}, which is not a matrix variable"),
    ({"exclude": [{"model": "ssd"}]}, "'exclude[0].model' is not a matrix variable"),
    ({"exclude": [{"threads": 4}]}, "'exclude[0].threads' is 4, not one of the matrix's values"),
    ({"exclude": [{"delegate": "xnnpack"}, {"delegate": "none"}]}, "'exclude' leaves no cell to run"),
    ({"repeat": 0}, "'repeat' must be a whole number from 1 to 1000"),
    ({"repeat": True}, "'repeat' must be a whole number from 1 to 1000"),
    ({"needs_display": "yes"}, "'needs_display' must be true or false"),
    ({"matrix": {f"v{i}": [1, 2, 3] for i in range(6)}}, "'matrix' makes 729 cells, more than 512"),
    ({"duration_s": -1}, "'duration_s' is not valid: "),
    ({"sample": "often"}, "'sample' is not valid: --sample must be one of"),
    ({"trace": ["gl"]}, "'trace' is not valid: unknown trace 'gl'"),
    ({"gpu_metrics": "a set"}, "'gpu_metrics' is not valid: '--gpu-metrics' must be a GPU metric set"),
])
def test_mistakes_are_one_line_naming_file_and_key(tmp_path, change, message):
    path = write(tmp_path, {**DELEGATE, **change})
    with pytest.raises(StudySpecError) as raised:
        load_study(path)
    line = raised.value.one_line()
    assert line.startswith(f"{path}: ") and message in line and "\n" not in line


def test_files_that_are_not_studies(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("study: [unclosed\n")
    with pytest.raises(StudySpecError, match=r"broken.yaml: not valid YAML at line 2"):
        load_study(path)
    with pytest.raises(StudySpecError, match="cannot read the study file"):
        load_study(tmp_path / "missing.yaml")
    with pytest.raises(StudySpecError, match="a study file must be a mapping"):
        parse_study(["a"], "x.yaml")


def test_fill_keeps_escaped_braces_and_the_boards_python():
    assert fill("{a}-{{b}}-{ a }", {"a": 1}) == "1-{b}-1"
    assert fill("{python}", {"a": 1}) == "{python}"


def test_set_gives_a_variable_other_values_for_a_quick_run(tmp_path):
    spec = load_study(write(tmp_path, DELEGATE))
    quick = with_values(spec, ["threads=1", "delegate=xnnpack,none"])
    assert dict(quick.matrix) == {"delegate": ("xnnpack", "none"), "threads": (1,)}
    assert [c.variables for c in cells(quick)] == [{"delegate": "xnnpack", "threads": 1},
                                                    {"delegate": "none", "threads": 1}]
    assert quick.exclude == ()  # threads=2 is gone, and the rule naming it with it
    with pytest.raises(UsageError, match="--set model=a: name a matrix variable"):
        with_values(spec, ["model=a"])
    for bad in ("threads=1,1", "threads=", "threads=1,,2", "threads=[1", "threads={a: 1}"):
        with pytest.raises(UsageError, match=f"--set {re.escape(bad)}: give distinct plain values"):
            with_values(spec, [bad])


@pytest.mark.parametrize("name, count", [("posebench-delegate", 4), ("posebench-matrix", 12), ("seed-tftrt", 36),
                                         ("seed-posenet", 2)])
def test_the_shipped_studies_load_and_expand(name, count):
    spec = load_study(Path(__file__).resolve().parent.parent / "studies" / f"{name}.yaml")
    found = cells(spec)
    assert spec.name == name and len(found) == count
    apps = [cell_app(spec, c, load_catalog()) for c in found]
    assert len({a.command + tuple(a.env) for a in apps}) == count  # every cell runs something else
