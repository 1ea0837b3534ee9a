import subprocess

from orchestrator.inventory.catalog import AppSpec
from orchestrator.nsys.commands import LAUNCH_WRAPPER, RemoteRunPaths, export_sqlite_argv, profile_argv, whole_seconds
from orchestrator.targets.shell import ShellCommand, command

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
