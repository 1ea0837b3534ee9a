"""A stock board's logins: the user logs in by key and the work runs as root through real sudo (Ansible's
become), with and without sudo's password; the password is found in no file, log or process argument."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REPO, nsys_stall_only, profiled_run, run_cli, write_inventory
from scenarios import ssh_args
from sshd_server import LoginUser, Sshd, kept_under_tmp, keygen

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not shutil.which("nsys"), reason="needs nsys (the README's test command installs it)")]

# Writes who ran it and where, then waits for the end of the capture.
APP = ("name: whoami\n"
       "command: [sh, -c, 'id -un > who.txt; pwd > where.txt; exec sleep 60']\n"
       "workdir: ~/apps\ntrace: [osrt]\nsample: none\ncpuctxsw: none\nduration_s: 2\n")


def app_dir(tmp_path: Path, user: LoginUser) -> tuple[Path, Path]:
    """The catalog on the host, and the app's folder in the login user's home on the board."""
    catalog = tmp_path / "apps"
    catalog.mkdir()
    (catalog / "whoami.yaml").write_text(APP)
    folder = user.home / "apps"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    shutil.chown(folder, user.name)
    return catalog, folder


def profile(tmp_path: Path, sshd: Sshd, user: LoginUser, env: dict[str, str] | None = None,
            **extra: object) -> subprocess.CompletedProcess:
    catalog = tmp_path / "apps"
    host = user.inventory_host(sshd, **{"ansible_become": True, "orchestrate_work_dir": str(tmp_path / "work"),
                                        **extra})
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": host})
    return run_cli("profile", "--target", "board", "--app", "whoami", "--apps-dir", str(catalog), "--inventory",
                   str(inventory), "--out", str(tmp_path / "runs"), "--retries", "3", *ssh_args(sshd), env=env)


def the_run(tmp_path: Path, done: subprocess.CompletedProcess) -> tuple[Path, dict]:
    """The run folder and run.json of a profile that worked (or whose nsys stalled after the app, report back)."""
    run_dir = profiled_run(done, tmp_path / "runs")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" or nsys_stall_only(record)
    return run_dir, record


def test_sudo_without_password_runs_the_capture_as_root_in_the_login_users_home(tmp_path, sshd, login_users):
    user = login_users["nopasswd"]
    _, folder = app_dir(tmp_path, user)
    done = profile(tmp_path, sshd, user)
    run_dir, record = the_run(tmp_path, done)
    assert record["target"]["address"] == f"{user.name}@127.0.0.1:{sshd.port}"
    # the app ran as the become user, in '~/apps' read as the login user's home (not root's)
    assert (folder / "who.txt").read_text().strip() == "root"
    assert (folder / "where.txt").read_text().strip() == str(folder)
    assert (run_dir / "report.nsys-rep").stat().st_size > 0
    # the board's work dir and the agent in it are root's, as the bootstrap's check requires
    work = tmp_path / "work"
    assert work.stat().st_uid == 0 and (work.stat().st_mode & 0o777) == 0o700
    assert [p.stat().st_uid for p in (work / "agent").glob("orchestrate-agent-*.pyz")] == [0]


class ProcessWatch(threading.Thread):
    """Reads every process's arguments and environment while a run goes, for a secret."""

    def __init__(self, secret: bytes) -> None:
        super().__init__(daemon=True)
        self.secret, self.seen, self.reads = secret, set(), 0
        self.done = threading.Event()

    @staticmethod
    def arguments(pid: str) -> str:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return "?"

    def run(self) -> None:
        while not self.done.wait(0.05):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                for part in ("cmdline", "environ"):
                    try:
                        data = Path(f"/proc/{pid}/{part}").read_bytes()
                    except OSError:
                        continue
                    if self.secret in data:
                        self.seen.add((pid, part, self.arguments(pid)))
            self.reads += 1


def files_holding(secret: bytes, *folders: Path, skip: tuple[str, ...] = ()) -> list[str]:
    """Files under folders (not under the names in skip) holding secret; files that go while read are passed."""
    found = []
    for folder in folders:
        for path in folder.rglob("*"):
            if any(part in skip for part in path.relative_to(folder).parts[:1]):
                continue
            try:
                if path.is_file() and not path.is_symlink() and secret in path.read_bytes():
                    found.append(str(path))
            except OSError:
                continue
    return found


def test_sudo_with_password_from_the_environment_and_the_password_nowhere(tmp_path, sshd, login_users):
    user = login_users["password"]
    _, folder = app_dir(tmp_path, user)
    secret = user.password.encode()
    watch = ProcessWatch(secret)
    watch.start()
    try:
        done = profile(tmp_path, sshd, user, env={"ORCHESTRATE_BECOME_PASSWORD": user.password})
    finally:
        watch.done.set()
        watch.join()
    run_dir, record = the_run(tmp_path, done)
    assert (folder / "who.txt").read_text().strip() == "root"
    assert watch.reads > 20  # the run was watched throughout
    # the only process that may hold it is the one it was given to: the test's child orchestrate, whose
    # environment it came in (it takes it out at once); no argument and no other process ever does
    assert {(part, text) for _, part, text in watch.seen if part == "cmdline"} == set()
    holders = {text for _, part, text in watch.seen if part == "environ"}
    assert holders <= {text for text in holders if text.startswith(f"{sys.executable} -m orchestrator profile ")}
    assert done.stdout.count(user.password) == 0 and done.stderr.count(user.password) == 0
    # here and on the board: the run folder, the board's work dir (both under tmp_path), the login user's home,
    # the board's own /tmp (nsys's files) and sshd's log
    kept = tuple(folder.name for folder in kept_under_tmp(sshd.root, REPO, Path(sys.prefix)))  # this machine's
    assert files_holding(secret, tmp_path, user.home, sshd.root) == []
    assert files_holding(secret, sshd.tmp, skip=kept) == []
    assert json.dumps(record).count(user.password) == 0


@pytest.mark.machine
def test_a_secret_is_never_passed_to_what_orchestrate_starts(tmp_path):
    """Through --target local the agent, nsys and the app are children of orchestrate: the password variable is
    taken out before any of them starts."""
    probe = tmp_path / "env.txt"
    done = subprocess.run([sys.executable, "-m", "orchestrator", "profile", "--target", "local", "--app-cmd",
                           f"sh -c 'env > {probe}; exec sleep 60'", "--trace", "osrt", "--sample", "none",
                           "--duration", "1", "--out", str(tmp_path / "runs")],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO), ORCHESTRATE_BECOME_PASSWORD="never-seen-pw"))
    assert probe.is_file(), done.stderr  # the app ran (nsys 2022.4 may stall after it: that is not the question)
    text = probe.read_text()
    assert "PATH=" in text and "never-seen-pw" not in text and "ORCHESTRATE_BECOME_PASSWORD" not in text


@pytest.mark.parametrize("who, password, code, said, fix", [
    ("password", None, 5, "asks orch-pw-{w} for a password and none was given", "--ask-become-pass"),
    ("password", "not-the-password", 5, "refused the become password for orch-pw-{w}", "ORCHESTRATE_BECOME_PASSWORD"),
    ("nosudo", "{own}", 5, "orch-no-{w} may not use sudo", "usermod -aG sudo orch-no-{w}"),
])
def test_sudo_that_cannot_be_used_is_one_line_at_once(tmp_path, sshd, login_users, who, password, code, said, fix):
    user = login_users[who]
    app_dir(tmp_path, user)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    env = {"ORCHESTRATE_BECOME_PASSWORD": password.format(own=user.password)} if password else None
    done = profile(tmp_path, sshd, user, env=env)
    assert done.returncode == code, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert said.format(w=worker) in line and fix.format(w=worker) in done.stderr
    assert not (tmp_path / "work").exists()  # refused before anything was made on the board
    assert user.password not in done.stderr


def test_a_become_password_in_the_inventory_is_refused_without_echoing_it(tmp_path, sshd, login_users):
    user = login_users["password"]
    app_dir(tmp_path, user)
    done = profile(tmp_path, sshd, user, ansible_become_password="in-a-file-pw")
    assert done.returncode == 3
    assert "ansible_become_password: " in done.stderr
    assert "a password is never kept in a file as plain text; vault it (ansible-vault encrypt_string) or give " \
           "--ask-become-pass" in done.stderr and "in-a-file-pw" not in done.stderr


@pytest.mark.machine
def test_become_applies_to_the_local_target_too(tmp_path, login_users):
    """A CI runner on the board itself reaches nsys through sudo the same way: here as root, becoming the
    login user (sudo without a password), so that the agent, nsys and the app run as that user."""
    user = login_users["nopasswd"]
    catalog, folder = app_dir(tmp_path, user)
    (catalog / "whoami.yaml").write_text(APP.replace("~/apps", str(folder)))
    inventory = write_inventory(tmp_path / "inventory.yaml", {"here": {
        "ansible_connection": "local", "ansible_become": True, "ansible_become_user": user.name,
        "orchestrate_work_dir": "~/.cache/orchestrate-local-test"}})
    done = run_cli("profile", "--target", "here", "--app", "whoami", "--apps-dir", str(catalog), "--inventory",
                   str(inventory), "--out", str(tmp_path / "runs"), "--retries", "3")
    run_dir, record = the_run(tmp_path, done)
    assert (folder / "who.txt").read_text().strip() == user.name
    work = user.home / ".cache" / "orchestrate-local-test"  # '~' in the work dir: the become user's home
    assert work.stat().st_uid == user.home.stat().st_uid and (work.stat().st_mode & 0o777) == 0o700
    assert run_dir.stat().st_uid == os.geteuid()  # the run folder is the host user's


def test_doctor_says_what_stands_in_the_way_of_each_login_and_its_one_time_fix(tmp_path, sshd, login_users):
    users = login_users
    hosts = {name: users[kind].inventory_host(sshd, ansible_become=True, orchestrate_work_dir=str(tmp_path / name))
             for name, kind in (("stock", "nopasswd"), ("asks", "password"), ("nosudo", "nosudo"))}
    keygen(tmp_path / "other_key")  # a key root's authorized_keys does not hold
    hosts["rootlogin"] = {**sshd.inventory_host(), "ansible_ssh_private_key_file": str(tmp_path / "other_key")}
    hosts["nokey"] = {**sshd.inventory_host(), "ansible_ssh_private_key_file": str(tmp_path / "no_key")}
    inventory = write_inventory(tmp_path / "inventory.yaml", hosts)
    done = run_cli("doctor", "--inventory", str(inventory), "--json", *ssh_args(sshd),
                   env={"SSH_AUTH_SOCK": ""})
    checks = {c["target"]: c for c in map(json.loads, done.stdout.splitlines())}
    assert {t: c["status"] for t, c in checks.items()} == {
        "stock": "ok", "asks": "problems", "nosudo": "problems", "rootlogin": "unreachable", "nokey": "unreachable"
    }, done.stderr
    assert checks["nokey"]["error"] == (f"the SSH key {tmp_path / 'no_key'} for root@127.0.0.1:{sshd.port} does not "
                                        "exist (fix ansible_ssh_private_key_file (or IdentityFile in the ssh config))")
    asks = users["password"].name
    assert checks["asks"]["error"] == (
        f"sudo on {asks}@127.0.0.1:{sshd.port} asks {asks} for a password and none was given (give it with "
        f"--ask-become-pass or ORCHESTRATE_BECOME_PASSWORD; or, once on the board, allow it without one: the "
        f"line '{asks} ALL=(ALL) NOPASSWD: ALL' in /etc/sudoers.d/orchestrate (visudo -f))")
    nosudo = users["nosudo"].name
    assert f"'{nosudo} ALL=(ALL) NOPASSWD: ALL' in /etc/sudoers.d/orchestrate" in checks["nosudo"]["error"]
    assert "set ansible_user to the board's user, ssh-copy-id to it, and ansible_become: true" in \
        checks["rootlogin"]["error"]
    assert checks["stock"]["board"]["nsys"] == "2022.4.2.1"


def test_ask_become_pass_prompts_on_the_terminal_without_echo(tmp_path, sshd, login_users):
    """--ask-become-pass as from a terminal (a pseudo-terminal here): the prompt, the password typed, not echoed."""
    import pty
    import select
    import signal
    import time
    user = login_users["password"]
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": user.inventory_host(
        sshd, ansible_become=True, orchestrate_work_dir=str(tmp_path / "work"))})
    argv = [sys.executable, "-m", "orchestrator", "doctor", "--inventory", str(inventory), "--json",
            "--ask-become-pass", *ssh_args(sshd)]
    pid, terminal = pty.fork()
    if pid == 0:  # the child: orchestrate on the pseudo-terminal
        os.execve(sys.executable, argv, dict(os.environ, PYTHONPATH=str(REPO)))
    seen, typed, deadline = b"", False, time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if not select.select([terminal], [], [], max(0.0, deadline - time.monotonic()))[0]:
                os.kill(pid, signal.SIGKILL)  # it stalled: the assertions below say so
                break
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # the child closed the terminal: it ended
                break
            if not chunk:
                break
            seen += chunk
            if not typed and b"BECOME password: " in seen:
                os.write(terminal, user.password.encode() + b"\n")
                typed = True
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(terminal)
    text = seen.decode(errors="replace")
    assert typed and os.waitstatus_to_exitcode(status) == 0, text
    assert user.password not in text  # not echoed
    [check] = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert check["status"] == "ok" and check["board"]["nsys"] == "2022.4.2.1"


def test_a_work_dir_of_the_login_user_under_become_is_one_clear_line(tmp_path, sshd, login_users):
    """The agent works as root: a work dir the login user owns would fail the agent's check (owner) each time."""
    user = login_users["nopasswd"]
    app_dir(tmp_path, user)
    work = user.home / "orchestrate-work"
    work.mkdir(exist_ok=True)
    shutil.chown(work, user.name)
    try:
        done = profile(tmp_path, sshd, user, orchestrate_work_dir=str(work))
    finally:
        shutil.rmtree(work)
    assert done.returncode == 14, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert f"the work dir {work} on {user.name}@127.0.0.1:{sshd.port} belongs to uid {user.home.stat().st_uid}, " \
           "not to the user the agent works as (uid 0)" in line


def test_a_vaulted_become_password_opens_with_the_vault_password_typed_and_neither_is_anywhere(tmp_path, sshd,
                                                                                               login_users):
    """The team's inventory keeps sudo's password vaulted; --ask-vault-pass takes the vault password at a prompt
    (a pseudo-terminal here). sudo gets the opened password; neither password is in a file, a log, an argument
    or another process's environment."""
    import pty
    import secrets
    import select
    import signal
    import time
    user = login_users["password"]
    vault_password = secrets.token_urlsafe(15)
    with __import__("tempfile").TemporaryDirectory() as scratch:  # the team's own copy, gone before the run
        password_file = Path(scratch) / "vault-password"
        password_file.write_text(vault_password)
        vaulted = subprocess.run([str(Path(sys.executable).parent / "ansible-vault"), "encrypt_string",
                                  "--vault-password-file", str(password_file), "--stdin-name",
                                  "ansible_become_password"], input=user.password, capture_output=True, text=True,
                                 env=dict(os.environ, PYTHONWARNINGS="ignore"), check=True).stdout
    host = user.inventory_host(sshd, ansible_become=True, orchestrate_work_dir=str(tmp_path / "work"))
    lines = ["all:", "  hosts:", "    board:", *(f"      {k}: {json.dumps(v)}" for k, v in host.items()),
             *("      " + line for line in vaulted.splitlines())]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("\n".join(lines) + "\n")
    watch = ProcessWatch(user.password.encode())
    vault_watch = ProcessWatch(vault_password.encode())
    watch.start()
    vault_watch.start()
    argv = [sys.executable, "-m", "orchestrator", "doctor", "--inventory", str(inventory), "--json",
            "--ask-vault-pass", *ssh_args(sshd)]
    pid, terminal = pty.fork()
    if pid == 0:
        os.execve(sys.executable, argv, dict(os.environ, PYTHONPATH=str(REPO)))
    seen, typed, deadline = b"", False, time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if not select.select([terminal], [], [], max(0.0, deadline - time.monotonic()))[0]:
                os.kill(pid, signal.SIGKILL)
                break
            try:
                chunk = os.read(terminal, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if not typed and b"Vault password: " in seen:
                os.write(terminal, vault_password.encode() + b"\n")
                typed = True
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(terminal)
        for watcher in (watch, vault_watch):
            watcher.done.set()
            watcher.join()
    text = seen.decode(errors="replace")
    assert typed and os.waitstatus_to_exitcode(status) == 0, text
    [check] = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert check["status"] == "ok" and check["error"] is None  # sudo took the opened password
    assert vault_password not in text and user.password not in text
    assert watch.reads > 5 and vault_watch.reads > 5
    for watcher in (watch, vault_watch):
        # in no process's arguments; in no environment but orchestrate's own, which never had it there either
        assert {(part, words) for _, part, words in watcher.seen} == set()
    for secret in (vault_password.encode(), user.password.encode()):
        assert files_holding(secret, tmp_path, user.home, sshd.root) == []


def test_a_play_gives_sudo_its_password_from_a_vaulted_file_or_its_prompt_and_it_is_nowhere(tmp_path, sshd,
                                                                                            login_users):
    """The orchestrate.jetson collection under ansible-runner, doctor for a board whose sudo asks for the user's
    password: kept in a host_vars file vaulted whole (--vault-password-file), then typed at ansible-playbook's -K
    prompt (ansible-runner answers it, as AWX does with a credential). sudo takes it (doctor reaches root); no
    artifact of the job holds it (ansible-runner's own env/ keeps the answers it was given)."""
    import secrets

    import ansible_runner
    user = login_users["password"]
    bin_dir = Path(sys.executable).parent
    vault_password = tmp_path / "vault-password"
    vault_password.write_text(secrets.token_urlsafe(15))
    book = tmp_path / "doctor.yml"
    book.write_text("- hosts: board\n  gather_facts: false\n  tasks:\n    - orchestrate.jetson.doctor:\n")
    host = user.inventory_host(sshd, ansible_become=True, orchestrate_work_dir=str(tmp_path / "work"),
                               ansible_ssh_common_args=f"-F /dev/null -o UserKnownHostsFile={sshd.known_hosts}")
    env = {"ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_HOST_KEY_CHECKING": "True",
           "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONWARNINGS": "ignore", "SSH_AUTH_SOCK": ""}
    for way, cmdline, passwords in (
            ("vaulted", f"--vault-password-file {vault_password}", {}),
            ("prompt", "--ask-become-pass", {r"^BECOME password.*:\s*?$": user.password})):
        folder = tmp_path / way
        (folder / "inventory" / "host_vars").mkdir(parents=True)
        write_inventory(folder / "inventory" / "hosts.yml", {"board": host})
        if way == "vaulted":
            secret_file = folder / "inventory" / "host_vars" / "board.yml"
            secret_file.write_text(f"ansible_become_password: {json.dumps(user.password)}\n")
            subprocess.run([str(bin_dir / "ansible-vault"), "encrypt", "--vault-password-file", str(vault_password),
                            str(secret_file)], check=True, capture_output=True, env=dict(os.environ, **env))
            assert user.password.encode() not in secret_file.read_bytes()
        private = folder / "job"
        private.mkdir()
        job = ansible_runner.run(private_data_dir=str(private), playbook=str(book),
                                 inventory=str(folder / "inventory"), cmdline=cmdline, passwords=passwords,
                                 envvars=env, quiet=True)
        stdout = (Path(job.config.artifact_dir) / "stdout").read_text()
        assert job.rc == 0, stdout[-2000:]
        [result] = [e["event_data"]["res"] for e in job.events if e["event"] == "runner_on_ok"]
        facts = result["ansible_facts"]["orchestrate_doctor"]
        assert facts["status"] == "ok" and facts["error"] is None, way
        assert files_holding(user.password.encode(), private, skip=("env",)) == [], way
        assert user.password not in stdout
