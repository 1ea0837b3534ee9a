"""Hostile values (quotes, ;, $(), backticks, newlines, .., non-ASCII, very long strings) reach the
board exactly as given, on the shell side and the file side, and never run as commands."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from board_state import record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.inventory.catalog import parse_app_spec
from orchestrator.nsys.commands import RemoteRunPaths, profile_argv
from orchestrator.runs.folder import run_id
from orchestrator.targets.local import LocalTransport
from orchestrator.targets.shell import MASK, ShellCommand, masked_env, shell_path

CANARY = Path("/tmp/orchestrate-injection-canary")
NASTY = ["; touch /tmp/orchestrate-injection-canary", "$(touch /tmp/orchestrate-injection-canary)",
         "`touch /tmp/orchestrate-injection-canary`", "a'b\"c", "line\nbreak", "../../etc/passwd", "héllo wörld ✓",
         "-rf", "*", "~", "$HOME", "x" * 5000, "\t", "a\\b", "!event", "{a,b}"]
# every string the board's shell can carry: argv and environment entries cannot hold NUL
hostile_text = st.one_of(st.sampled_from(NASTY), st.text(st.characters(blacklist_characters="\0",
                                                                       blacklist_categories=("Cs",)), max_size=300))
PRINT_ARGV = ("import json,os,sys; "
              "print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), 'env': dict(os.environ)}))")


def run_rendered(command: ShellCommand) -> dict:
    done = subprocess.run(["/bin/sh", "-c", command.render()], capture_output=True, check=True)
    return json.loads(done.stdout)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.lists(hostile_text, max_size=6), value=hostile_text)
def test_argv_and_environment_reach_the_program_exactly(args, value):
    CANARY.unlink(missing_ok=True)
    seen = run_rendered(ShellCommand((sys.executable, "-c", PRINT_ARGV, *args), (("ORCH_VALUE", value),)))
    assert seen["argv"] == args
    tried()
    assert seen["env"]["ORCH_VALUE"] == value
    assert not CANARY.exists()


@settings(max_examples=60, deadline=None)
@given(name=st.text(st.characters(blacklist_characters="\0/", blacklist_categories=("Cs",)), min_size=1,
                    max_size=60).filter(lambda n: n not in (".", "..")))
def test_a_working_directory_of_any_name_is_entered_exactly(tmp_path_factory, name):
    CANARY.unlink(missing_ok=True)
    folder = tmp_path_factory.mktemp("cwd") / name
    folder.mkdir()
    seen = run_rendered(ShellCommand((sys.executable, "-c", PRINT_ARGV), (), str(folder)))
    assert seen["cwd"] == str(folder)
    tried()
    assert not CANARY.exists()


@settings(max_examples=60, deadline=None)
@given(name=st.text(st.characters(blacklist_characters="\0/", blacklist_categories=("Cs",)), min_size=1,
                    max_size=60).filter(lambda n: n not in (".", "..")))
def test_files_go_to_exactly_the_named_path_on_both_sides(tmp_path_factory, name):
    """The file side (put) and the shell side (a command naming the path) agree on any name."""
    CANARY.unlink(missing_ok=True)
    folder = tmp_path_factory.mktemp("files")
    local = folder / "source"
    local.write_bytes(b"payload")
    remote = str(folder / name)
    transport = LocalTransport()
    transport.put(local, remote)
    assert Path(remote).read_bytes() == b"payload"
    done = transport.run(ShellCommand(("cat", remote)))
    assert (done.exit_status, done.stdout) == (0, "payload")
    out = folder / "copy"
    transport.download(ShellCommand(("cat", remote)), [(out, None)], b"")
    assert out.read_bytes() == b"payload"
    assert sorted(p.name for p in folder.iterdir()) == sorted({"source", name, "copy"})
    tried()
    assert not CANARY.exists()


@given(target=hostile_text, app=hostile_text)
def test_run_names_are_one_plain_path_component(target, app):
    name = run_id(target, app)
    assert "/" not in name and ".." not in name and name == name.strip()
    assert all(c.isalnum() or c in "._-" for c in name)
    tried()


@settings(max_examples=80, deadline=None)
@given(args=st.lists(hostile_text, max_size=4), work=hostile_text)
def test_the_nsys_command_keeps_app_arguments_as_separate_words(args, work):
    spec = parse_app_spec({"name": "app", "command": ["./app", *args]}, "spec.yaml")
    argv = profile_argv("/usr/bin/nsys", spec, RemoteRunPaths(f"/w/{work}/runs/r1"))
    assert argv[-len(args) - 1:] == ["./app", *args]
    assert f"--output=/w/{work}/runs/r1/report" in argv
    tried()


def test_a_home_relative_work_dir_stays_home_relative_and_quoted():
    assert shell_path("~/my dir/$(x)") == "\"$HOME\"/'my dir/$(x)'"
    done = subprocess.run(["/bin/sh", "-c", f"echo {shell_path('~/a b')}"], capture_output=True, text=True,
                          env={"HOME": "/h"})
    assert done.stdout == "/h/a b\n"


def test_secret_looking_environment_values_are_masked():
    env = (("API_TOKEN", "t0k"), ("AWS_SECRET_ACCESS_KEY", "k3y"), ("DB_PASSWORD", "pw"), ("DISPLAY", ":1"))
    assert masked_env(env) == (("API_TOKEN", MASK), ("AWS_SECRET_ACCESS_KEY", MASK), ("DB_PASSWORD", MASK),
                               ("DISPLAY", ":1"))
    rendered = ShellCommand(("app",), masked_env(env)).render()
    assert "t0k" not in rendered and "k3y" not in rendered and "DISPLAY=:1" in rendered


@pytest.fixture(autouse=True)
def _no_canary():
    CANARY.unlink(missing_ok=True)
    yield
    assert not CANARY.exists(), "a hostile value ran as a command"


def tried(*values: object) -> None:
    record("hostile_input", injected=CANARY.exists(), values=len(values))


@pytest.mark.integration
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(st.characters(blacklist_characters="\0/", blacklist_categories=("Cs",)), min_size=1,
                    max_size=60).filter(lambda n: n not in (".", "..")))
def test_over_ssh_the_sftp_side_and_the_shell_side_agree_on_any_name(sshd, tmp_path_factory, name):
    from orchestrator.inventory.hosts import Host
    from orchestrator.targets.connect import open_transport
    from orchestrator.targets.settings import ConnectOptions
    CANARY.unlink(missing_ok=True)
    folder = tmp_path_factory.mktemp("ssh-files")
    local = folder / "source"
    local.write_bytes(b"over ssh")
    remote = str(folder / name)
    host = Host(name="board", address="127.0.0.1", port=sshd.port, user="root", key_file=str(sshd.client_key))
    transport = open_transport(host, ConnectOptions(sshd.ssh_config, sshd.known_hosts))
    try:
        transport.put(local, remote)                                   # SFTP
        done = transport.run(ShellCommand(("cat", remote)))            # the shell, through sshd
        copy = folder / "copy"
        got = transport.download(ShellCommand(("cat", remote)), [(copy, None)], b"")  # OpenSSH's client
    finally:
        transport.close()
    assert Path(remote).read_bytes() == b"over ssh"
    assert (done.exit_status, done.stdout, got.exit_status, copy.read_bytes()) == (0, "over ssh", 0, b"over ssh")
    assert sorted(p.name for p in folder.iterdir()) == sorted({"source", name, "copy"})
    tried()
    assert not CANARY.exists()
