import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.errors import AppSpecError
from orchestrator.inventory.catalog import AppSpec, load_catalog
from orchestrator.nsys.commands import LAUNCH_WRAPPER, RemoteRunPaths, export_sqlite_argv, profile_argv, whole_seconds
from orchestrator.targets.shell import ShellCommand, command
from remote_agent.nsys_locate import (
    gpu_metrics_option,
    parse_metric_devices,
    parse_metric_sets,
    parse_profile_help,
    read_gpu_metrics,
    read_profile_options,
)

PATHS = RemoteRunPaths("/root/.cache/orchestrate/runs/r1")


def test_profile_argv_for_the_gl2posenet_spec():
    spec = AppSpec(name="gl2posenet", command=("./gl2posenet", "-x"), trace=("opengl", "osrt"), sample="cpu",
                   duration_s=10, delay_s=2.5, cpuctxsw="process-tree", nsys_args=("--wait=primary",))
    assert profile_argv("/opt/nvidia/nsight-systems/2022.2.3/bin/nsys", spec, PATHS) == [
        "/opt/nvidia/nsight-systems/2022.2.3/bin/nsys", "profile", "--trace=opengl,osrt", "--sample=cpu",
        "--output=/root/.cache/orchestrate/runs/r1/report", "--force-overwrite=true", "--delay=3",
        "--cpuctxsw=process-tree", "--wait=primary",
        "/bin/sh", "-c", LAUNCH_WRAPPER, "orchestrate-launch", "/root/.cache/orchestrate/runs/r1/app.pid",
        "/root/.cache/orchestrate/runs/r1/app.stdout.log", "/root/.cache/orchestrate/runs/r1/app.stderr.log",
        "./gl2posenet", "-x",
    ]


def test_whole_seconds_rounds_up_and_never_reaches_zero():
    assert [whole_seconds(v) for v in (0.2, 1.0, 2.01, 5)] == [1, 1, 3, 5]


def test_launch_wrapper_records_pid_splits_output_and_keeps_exit_status(tmp_path):
    pid, out, err = tmp_path / "pid", tmp_path / "out", tmp_path / "err"
    proc = subprocess.run(["/bin/sh", "-c", LAUNCH_WRAPPER, "orchestrate-launch", str(pid), str(out), str(err),
                           "sh", "-c", "echo to-out; echo to-err >&2; echo $$; exit 7"])
    assert proc.returncode == 7
    lines = out.read_text().split()
    assert lines[0] == "to-out"
    assert lines[1] == pid.read_text().strip()  # exec: the app runs under the recorded PID
    assert err.read_text() == "to-err\n"


def test_export_argv():
    assert export_sqlite_argv("nsys", "r.nsys-rep", "r.sqlite") == [
        "nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "--output", "r.sqlite", "r.nsys-rep"]


def test_shell_command_renders_quoted_env_cwd_and_args():
    cmd = command("./gl2posenet", "-x", "it's here", env={"DISPLAY": ":0", "A": "b c"}, cwd="~/my app")
    assert isinstance(cmd, ShellCommand)
    assert cmd.render() == "cd '~/my app' && env 'A=b c' DISPLAY=:0 ./gl2posenet -x 'it'\"'\"'s here'"
    assert subprocess.run(["/bin/sh", "-c", command("printf", "%s|", "a b", "$HOME").render()],
                          capture_output=True, text=True).stdout == "a b|$HOME|"


# `nsys profile --help` of four releases, as printed (see tests/data/nsys-help/SOURCES.md): JetPack 4's
# nsight-systems-cli is 2020.5 (the 2020.4 text stands in), JetPack 5.0-5.1 ship 2022.3/2022.5, 5.1.2 2023.2, 6.0
# 2024.2.
HELP = Path(__file__).parent / "data" / "nsys-help"
HELP_TRACES_2020 = ["cuda", "nvtx", "osrt", "cublas", "cudnn", "opengl", "opengl-annotations", "mpi", "openacc",
                    "openmp", "vulkan", "vulkan-annotations", "none"]


def help_of(version: str) -> dict[str, list[str]]:
    return parse_profile_help((HELP / f"profile-help-{version}.txt").read_text())


def test_each_versions_help_says_what_it_takes():
    old, new = help_of("2020.4"), help_of("2022.4")
    assert old["sample"] == ["cpu", "none"] and old["cpuctxsw"] == ["process-tree", "none"]
    assert old["trace"] == HELP_TRACES_2020
    assert old["backtrace"] == ["lbr", "fp", "dwarf", "none"] and old["export"] == ["sqlite", "none"]
    for version in ("2022.4", "2023.4", "2024.2"):
        found = help_of(version)
        assert found["sample"] == ["process-tree", "system-wide", "none"]
        assert found["cpuctxsw"] == ["process-tree", "system-wide", "none"]
    assert set(help_of("2023.4")["trace"]) - set(new["trace"]) == {"python-gil"}
    assert set(help_of("2024.2")["trace"]) - set(help_of("2023.4")["trace"]) == {"cusolver", "cusolver-verbose"}
    assert len(new["trace"]) == 19 and "nvvideo" in new["trace"]


def test_the_nsys_here_reads_as_its_saved_help(host_nsys):
    """The 2022.4 text is the nsys the tests run: what the agent reads from it is what the file says."""
    assert read_profile_options(host_nsys) == {key: help_of("2022.4")[key] for key in ("sample", "cpuctxsw", "trace")}


def test_gpu_metrics_are_spelled_as_the_boards_help_spells_them(host_nsys):
    assert [gpu_metrics_option((HELP / f"profile-help-{v}.txt").read_text())
            for v in ("2020.4", "2022.4", "2023.4", "2024.2")] == [None] + ["gpu-metrics-device"] * 3
    # what this machine's nsys says: no GPU to sample, ten sets; the agent reads the same from it
    devices, said = parse_metric_devices((HELP / "gpu-metrics-device-help-2022.4.txt").read_text())
    assert (devices, said) == ([], "NVIDIA GPUs not found, feature is not available")
    sets = parse_metric_sets((HELP / "gpu-metrics-set-help-2022.4.txt").read_text())
    assert [s["alias"] for s in sets][-1] == "ga10b" and len(sets) == 10
    assert sets[-1] == {"index": 9, "alias": "ga10b", "name": "General Metrics for NVIDIA GA10B (any frequency)"}
    assert read_gpu_metrics(host_nsys, "gpu-metrics-device") == {
        "option": "gpu-metrics-device", "devices": [], "none_because": said, "sets": sets}
    # a listing with GPUs: "<index>: <name>", unsupported ones said so
    listed = "Possible --gpu-metrics-device values are:\n\t0: Orin (nvgpu)\n\t1: Quadro K620 (not supported)\n" \
             "\tall: Select all supported GPUs\n\tnone: Disable GPU Metrics [Default]\n"
    assert parse_metric_devices(listed) == ([{"index": 0, "name": "Orin (nvgpu)"},
                                             {"index": 1, "name": "Quadro K620 (not supported)"}], None)


@pytest.mark.parametrize("gpu_metrics, option, expected", [
    ("ga10b", "gpu-metrics-device", ["--gpu-metrics-device=all", "--gpu-metrics-set=ga10b"]),
    ("default", "gpu-metrics-devices", ["--gpu-metrics-devices=all"]),
    (None, "gpu-metrics-device", []),
])
def test_gpu_metrics_reach_the_command_line(gpu_metrics, option, expected):
    argv = profile_argv("nsys", replace(ES2GEARS, gpu_metrics=gpu_metrics), PATHS, help_of("2022.4"), "2022.4",
                        option)
    assert [a for a in argv if a.startswith("--gpu-metrics")] == expected


ES2GEARS = AppSpec(name="es2gears", command=("es2gears_x11",), trace=("opengl", "osrt"), sample="cpu",
                   cpuctxsw="none")


@pytest.mark.parametrize("version, sample", [("2020.4", "cpu"), ("2022.4", "process-tree"),
                                             ("2023.4", "process-tree"), ("2024.2", "process-tree")])
def test_the_command_line_is_built_for_the_boards_version(version, sample):
    argv = profile_argv("nsys", ES2GEARS, PATHS, help_of(version), version)
    assert argv[:4] == ["nsys", "profile", "--trace=opengl,osrt", f"--sample={sample}"]
    assert "--cpuctxsw=none" in argv
    spelled = profile_argv("nsys", replace(ES2GEARS, sample="process-tree"), PATHS, help_of(version), version)
    assert spelled == argv  # one meaning, the version's own word


@pytest.mark.parametrize("version", ["2020.4", "2022.4", "2023.4", "2024.2"])
def test_every_catalog_app_gets_only_what_the_version_lists_or_a_clear_line(version):
    accepted = help_of(version)
    for spec in load_catalog(None).values():
        try:
            argv = profile_argv("nsys", spec, PATHS, accepted, version)
        except AppSpecError as exc:
            assert exc.message.startswith(f"nsys {version} on the board takes --")
            continue
        options = dict(arg[2:].split("=", 1) for arg in argv[2:argv.index("/bin/sh")] if arg.startswith("--"))
        assert set(options["trace"].split(",")) <= set(accepted["trace"])
        assert options["sample"] in accepted["sample"]
        assert options.get("cpuctxsw", "none") in accepted["cpuctxsw"]


@pytest.mark.parametrize("version, change, said", [
    ("2020.4", {"sample": "system-wide"}, "nsys 2020.4 on the board takes --sample cpu, none, not 'system-wide'"),
    ("2020.4", {"cpuctxsw": "system-wide"},
     "nsys 2020.4 on the board takes --cpuctxsw process-tree, none, not 'system-wide'"),
    ("2022.4", {"trace": ("opengl", "python-gil")}, "takes --trace cuda, nvtx, cublas, cublas-verbose"),
])
def test_what_the_boards_nsys_does_not_take_is_one_line_before_the_run(version, change, said):
    with pytest.raises(AppSpecError) as err:
        profile_argv("nsys", replace(ES2GEARS, **change), PATHS, help_of(version), version)
    assert said in err.value.message
    assert "install a newer nsys" in err.value.hint
