import pytest

from orchestrator.errors import AppSpecError, UsageError
from orchestrator.inventory.catalog import adhoc_app, find_app, load_catalog, parse_app_spec, with_overrides


def test_builtin_catalog_ships_the_three_apps():
    catalog = load_catalog()
    assert {"gl2posenet", "es2gears", "glmark2"} <= set(catalog)
    posenet = catalog["gl2posenet"]
    assert posenet.command == ("./gl2posenet", "-x")
    assert posenet.workdir == "~/tflite_gles_app/gl2posenet"
    assert dict(posenet.env) == {"__GL_SYNC_TO_VBLANK": "0"}
    assert (posenet.trace, posenet.sample, posenet.needs_display, posenet.xvfb) == (("opengl", "osrt"), "cpu", True,
                                                                                    "never")
    assert catalog["es2gears"].frame_delimiter == "eglSwapBuffers"


def test_user_folder_adds_and_overrides(tmp_path):
    (tmp_path / "es2gears.yaml").write_text("name: es2gears\ncommand: es2gears_x11 -info\nduration_s: 2\n")
    (tmp_path / "mine.yml").write_text("name: mine\ncommand: [./bench, --count, 100]\nsample: none\n")
    catalog = load_catalog(tmp_path)
    assert catalog["es2gears"].command == ("es2gears_x11", "-info")
    assert catalog["es2gears"].duration_s == 2.0
    assert catalog["mine"].command == ("./bench", "--count", "100")
    assert catalog["gl2posenet"].source.endswith("gl2posenet.yaml")


@pytest.mark.parametrize("body, message", [
    ("name: x\ncommand: [a]\ncolour: red\n", "unknown key 'colour'"),
    ("name: x\n", "'command' is missing"),
    ("name: x\ncommand: a\ntrace: [opengl, cudaa]\n", "unknown trace 'cudaa'"),
    ("name: x\ncommand: a\nsample: sometimes\n", "'sample' must be one of cpu, none, process-tree, system-wide"),
    ("name: x\ncommand: a\nduration_s: -1\n", "'duration_s' must be a number of seconds from 0.1 to 86400, not -1"),
    ("name: x\ncommand: a\nneeds_display: maybe\n", "'needs_display' must be true or false"),
    ("name: x\ncommand: a\nduration_s: .nan\n", "'duration_s' must be a number of seconds from 0.1 to 86400, not nan"),
    ("name: x\ncommand: a\ndelay_s: 1.0e+400\n", "'delay_s' must be a number of seconds from 0 to 86400, not inf"),
    ("name: x\ncommand: a\nname: y\n", "not valid YAML at line 3: key 'name' is given twice (lines 1 and 3)"),
    ("name: x\ncommand: './app \"unclosed'\n", "'command' cannot be split into words (no closing quotation)"),
])
def test_bad_specs_name_the_file_and_key(tmp_path, body, message):
    (tmp_path / "x.yaml").write_text(body)
    with pytest.raises(AppSpecError) as err:
        load_catalog(tmp_path)
    assert err.value.message.startswith(str(tmp_path / "x.yaml") + ": ")
    assert message in err.value.message


def test_unknown_app_points_at_the_user_folder_and_app_cmd():
    with pytest.raises(AppSpecError, match=r"no app 'posenet' in the catalog \(known: es2gears, gl2posenet, glmark2"):
        find_app("posenet", load_catalog())


def test_adhoc_app_and_overrides():
    spec = adhoc_app("./detect --model 'ssd v2.pb'", needs_display=False)
    assert (spec.name, spec.command) == ("detect", ("./detect", "--model", "ssd v2.pb"))
    changed = with_overrides(spec, duration_s=7, delay_s=1, trace="nvtx,osrt", sample="none")
    assert (changed.duration_s, changed.delay_s, changed.trace, changed.sample) == (7.0, 1.0, ("nvtx", "osrt"), "none")
    with pytest.raises(UsageError, match="--app-cmd is empty"):
        adhoc_app("  ", needs_display=False)
    with pytest.raises(UsageError, match="unknown trace 'gl' in --trace"):
        with_overrides(spec, trace="gl")
    assert with_overrides(spec, cpuctxsw="none").cpuctxsw == "none" and spec.cpuctxsw is None
    with pytest.raises(UsageError, match="--cpuctxsw must be one of process-tree, system-wide, none"):
        with_overrides(spec, cpuctxsw="off")
    with pytest.raises(AppSpecError, match=r"x.yaml: 'cpuctxsw' must be one of process-tree, system-wide, none, "
                                           r"not 'off'"):
        parse_app_spec({"name": "x", "command": ["./x"], "cpuctxsw": "off"}, "x.yaml")
    assert parse_app_spec({"name": "x", "command": ["./x"], "parser": "trtexec"}, "x.yaml").parser == "trtexec"
    # GPU metrics: a set nsys names, from the spec or the command line
    assert parse_app_spec({"name": "x", "command": ["./x"], "gpu_metrics": "ga10b"}, "x.yaml").gpu_metrics == "ga10b"
    assert with_overrides(spec, gpu_metrics="default").gpu_metrics == "default" and spec.gpu_metrics is None
    with pytest.raises(UsageError, match=r"'--gpu-metrics' must be a GPU metric set nsys lists \(e.g. ga10b; "
                                         r"'default' for nsys's choice\), not 'ga10b; rm'"):
        with_overrides(spec, gpu_metrics="ga10b; rm")
    with pytest.raises(AppSpecError, match="x.yaml: 'gpu_metrics' must be a GPU metric set"):
        parse_app_spec({"name": "x", "command": ["./x"], "gpu_metrics": True}, "x.yaml")
    with pytest.raises(AppSpecError, match="x.yaml: 'parser' must be one of trtexec, tftrt-bench, glmark2, "
                                           "jetson-inference, benchmark_model, not 'nvprof'"):
        parse_app_spec({"name": "x", "command": ["./x"], "parser": "nvprof"}, "x.yaml")


def test_parse_spec_rejects_non_mapping():
    with pytest.raises(AppSpecError, match="an app spec must be a mapping"):
        parse_app_spec(["a"], "x.yaml")
