"""The orchestrate.jetson collection for real: ansible-playbook and ansible-runner (the Python API AWX and Automation
Platform run playbooks with) over boards that are machines of their own (each sshd in its own namespaces), one
reached only through a bastion (ProxyJump), one dead; es2gears under nsys on each; every run folder as
`orchestrate profile` makes it for that board."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_cli
from sshd_server import make_sshd

pytestmark = [pytest.mark.integration, pytest.mark.machine]

BIN = Path(sys.executable).parent
PLAYBOOK = REPO / "examples" / "playbooks" / "profile.yml"
# es2gears under nsys, one board at a time: nsys 2022.4 stalls when two captures overlap on one kernel, which boards
# of their own never share (bench/fleet_scaling.py runs the boards side by side, without nsys)
CAPTURE = {"duration": 3, "sample": "none", "cpuctxsw": "none", "retries": 2}
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    """good1 and good2 reached directly; behind on a lab's loopback, reached through the lab's bastion (-J); dead's
    sshd never started."""
    import shutil
    if os.geteuid() != 0 or not shutil.which("nsys") or not shutil.which("es2gears_x11"):
        pytest.skip("needs root, nsys and es2gears (the README's test command installs them)")
    from netns import make_board_link
    root = tmp_path_factory.mktemp("collection")
    link = make_board_link(rate="1gbit", kind="lab")
    bastion = make_sshd(root / "bastion", address=link.board_address, netns=link.name)
    behind = make_sshd(root / "behind", address="127.0.0.1", netns=link.name, own_machine=True,
                      log_level="VERBOSE")  # its log says when it listens on the lab's loopback
    servers = {name: make_sshd(root / name, own_machine=True) for name in ("good1", "good2", "dead")}
    jump = root / "jump_config"
    jump.write_text(f"Host jumpbox\n  HostName {bastion.address}\n  Port {bastion.port}\n  User root\n"
                    f"  IdentityFile {bastion.client_key}\n  UserKnownHostsFile {bastion.known_hosts}\n"
                    "  StrictHostKeyChecking yes\n  BatchMode yes\n")

    def board(server, name: str, through: str = "-F /dev/null") -> dict:
        return {**server.inventory_host(), "orchestrate_work_dir": str(root / "work" / name),
                "ansible_ssh_common_args": f"{through} -o UserKnownHostsFile={server.known_hosts}"}
    hosts = {"good1": board(servers["good1"], "good1"), "behind": board(behind, "behind", f"-F {jump} -J jumpbox"),
             "good2": board(servers["good2"], "good2"), "dead": board(servers["dead"], "dead")}
    inventory = root / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"jetson": {"hosts": hosts}}}}, sort_keys=False))
    started = [bastion, behind, servers["good1"], servers["good2"]]
    try:
        for server in started:
            server.start()
        yield {"root": root, "inventory": inventory}
    finally:
        for server in reversed(started):
            server.stop()
        link.remove()


def ansible_env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, ANSIBLE_HOME=str(tmp_path / "ansible-home"), PYTHONWARNINGS="ignore",
                ANSIBLE_NOCOLOR="1", PATH=f"{BIN}:{os.environ['PATH']}")


def extra_vars(out: Path) -> list[str]:
    return ["-e", json.dumps({**CAPTURE, "out": str(out)})]


def run_folders(out: Path) -> dict[str, Path]:
    """target -> its run folder (<stamp>-<target>-es2gears)."""
    return {re.match(r"\d{8}T\d{6}Z-(.+)-es2gears$", p.name).group(1): p  # type: ignore[union-attr]
            for p in out.iterdir() if p.is_dir()}


def assert_made_as_profile_makes_it(played: Path, direct: Path) -> None:
    """The same files, the same run.json sections (but for times, paths and the run's own figures), a verdict."""
    def names(folder: Path) -> set[str]:
        return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
    assert names(played) == names(direct)
    ours, theirs = (json.loads((f / "run.json").read_text()) for f in (played, direct))
    assert set(ours) == set(theirs)
    for section in ("target", "app", "stage", "status", "orchestrate_version", "keep_remote", "heartbeat_timeout_s"):
        assert ours.get(section) == theirs.get(section), section
    assert ours["stage"] == "pulled" and ours["status"] == "ok" and ours.get("inventory") is None
    summaries = [json.loads((f / "summary.json").read_text()) for f in (played, direct)]
    assert all(s["verdict"]["kind"] for s in summaries)


def test_a_playbook_profiles_every_board_and_recaps_the_dead_one_as_unreachable(rig, tmp_path):
    out = tmp_path / "runs"
    env = ansible_env(tmp_path)
    played = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(rig["inventory"]), str(PLAYBOOK), "--forks", "1",
         *extra_vars(out)], capture_output=True, text=True, env=env, timeout=900, stdin=subprocess.DEVNULL)
    recap = {m.group(1): tuple(int(g) for g in m.groups()[1:]) for m in RECAP.finditer(played.stdout)}
    # ok, changed, unreachable, failed: the profile task and its debug for each board reached; dead unreachable
    assert recap == {"good1": (2, 1, 0, 0), "behind": (2, 1, 0, 0), "good2": (2, 1, 0, 0), "dead": (0, 0, 1, 0)}, \
        played.stdout + played.stderr
    assert played.returncode == 4  # ansible-playbook's code for unreachable hosts
    assert re.search(r"fatal: \[dead\]: UNREACHABLE! => .*refused", played.stdout)
    folders = run_folders(out)
    assert set(folders) == {"good1", "behind", "good2", "dead"}  # a board never reached has its folder saying why
    dead = json.loads((folders["dead"] / "run.json").read_text())
    assert dead["status"] != "ok" and "refused" in dead["error"]["message"]

    direct = run_cli("profile", "--target", "good1", "--inventory", str(rig["inventory"]), "--app", "es2gears",
                     "--duration", "3", "--sample", "none", "--cpuctxsw", "none", "--retries", "2",
                     "--out", str(tmp_path / "direct"),
                     timeout=600)
    assert direct.returncode == 0, direct.stderr
    assert_made_as_profile_makes_it(folders["good1"], Path(direct.stdout.strip().splitlines()[-1]))
    behind = json.loads((folders["behind"] / "run.json").read_text())
    assert behind["status"] == "ok" and behind["target"]["name"] == "behind"

    checked = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(rig["inventory"]), str(PLAYBOOK), "--check", "--limit", "good2",
         *extra_vars(tmp_path / "checked")], capture_output=True, text=True, env=env, timeout=300,
        stdin=subprocess.DEVNULL)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert {m.group(1): m.group(3) for m in RECAP.finditer(checked.stdout)} == {"good2": "1"}  # it would capture
    assert not (tmp_path / "checked").exists()  # and nothing ran


def test_the_same_playbook_under_ansible_runner_with_its_events_and_artifacts(rig, tmp_path, monkeypatch):
    import ansible_runner
    for name, value in ansible_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    out, private = tmp_path / "runs", tmp_path / "runner"
    private.mkdir()
    runner = ansible_runner.run(
        private_data_dir=str(private), playbook=str(PLAYBOOK), inventory=str(rig["inventory"]),
        extravars={**CAPTURE, "out": str(out)}, limit="jetson:!good2", forks=1, quiet=True,
        # ansible-runner (and AWX) turn host key checking off unless the job says otherwise; orchestrate checks them
        envvars={"ANSIBLE_HOST_KEY_CHECKING": "True"})
    assert runner.rc == 4 and runner.status == "failed", (Path(runner.config.artifact_dir) / "stdout").read_text()
    assert runner.stats["dark"] == {"dead": 1} and runner.stats["changed"] == {"good1": 1, "behind": 1}
    results = {e["event_data"]["host"]: e["event_data"]["res"] for e in runner.events
               if e["event"] in ("runner_on_ok", "runner_on_unreachable")
               and e["event_data"].get("task_action") == "orchestrate.jetson.profile"}
    assert set(results) == {"good1", "behind", "dead"}
    folders = run_folders(out)
    for name in ("good1", "behind"):
        result = results[name]
        assert result["status"] == "ok" and result["changed"] is True and Path(result["folder"]) == folders[name]
        summary = json.loads((folders[name] / "summary.json").read_text())
        assert result["verdict"] == summary["verdict"]["kind"]
        assert result["frame_ms"]["median"] > 0 and result["board"]["kind"]
    assert results["dead"]["unreachable"] is True and "refused" in results["dead"]["msg"]
    # the artifacts AWX keeps of a job: its status, rc, stdout with the recap, and one file per event
    artifacts = Path(runner.config.artifact_dir)
    assert (artifacts / "rc").read_text() == "4" and (artifacts / "status").read_text() == "failed"
    assert "dead                       : ok=0    changed=0    unreachable=1" in (artifacts / "stdout").read_text()
    events = [json.loads(p.read_text()) for p in (artifacts / "job_events").glob("*.json")]
    assert sum(1 for e in events if e["event"] == "runner_on_unreachable") == 1


def test_under_ansible_runner_s_own_host_key_setting_the_task_says_what_to_change(rig, tmp_path, monkeypatch):
    """ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False unless told otherwise: the task refuses it in one line
    naming the setting, before it connects."""
    import ansible_runner
    for name, value in ansible_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    private = tmp_path / "runner"
    private.mkdir()
    runner = ansible_runner.run(private_data_dir=str(private), playbook=str(PLAYBOOK), inventory=str(rig["inventory"]),
                                extravars={"out": str(tmp_path / "runs")}, limit="good1", quiet=True)
    assert runner.rc == 2 and runner.stats["failures"] == {"good1": 1}
    [failed] = [e["event_data"]["res"] for e in runner.events if e["event"] == "runner_on_failed"]
    assert failed["msg"].startswith(f"{rig['inventory']}: host 'good1': orchestrate cannot honour host_key_checking "
                                    "false (the environment's ANSIBLE_HOST_KEY_CHECKING)")
    assert failed["changed"] is False and not (tmp_path / "runs").exists()


def test_each_task_of_the_collection_in_one_play(rig, tmp_path):
    """doctor's facts, a run without nsys with the app's own figures, fetch of that run (nothing left to pull), a study
    and a CI job, for one board, read from ansible-runner's events."""
    apps, out = tmp_path / "apps", tmp_path / "runs"
    apps.mkdir()
    (apps / "infer.yaml").write_text(yaml.safe_dump({
        "name": "infer", "parser": "tftrt-bench", "duration_s": 60,
        "command": [sys.executable, str(REPO / "tests" / "apps" / "inference_lines.py"), "--frames", "20",
                    "--work", "2000", "--sleep-ms", "5"]}))
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump({"study": "sleeps", "app": "infer", "repeat": 2,
                                     "matrix": {"frames": [10, 20]}, "args": ["--frames", "{frames}"]}))
    common = {"apps_dir": str(apps), "no_nsys": True, "out": str(out)}
    ci_task = {"app": "infer", "repeat": 2, "db": str(tmp_path / "results.db"), "commit": "c0ffee", "branch": "main",
               "junit": str(tmp_path / "junit-{{ inventory_hostname }}.xml"), **common}
    book = tmp_path / "tasks.yml"
    book.write_text(yaml.safe_dump([{"hosts": "good1", "gather_facts": False, "tasks": [
        {"orchestrate.jetson.doctor": {}},
        {"orchestrate.jetson.profile": {"app": "infer", **common}, "register": "run"},
        {"orchestrate.jetson.fetch": {"run_dir": "{{ run.folder }}"}},
        {"orchestrate.jetson.study": {"file": str(study), "set": "frames=5,10", **common}},
        {"orchestrate.jetson.ci": ci_task},
    ]}, {"hosts": "dead", "gather_facts": False, "tasks": [{"orchestrate.jetson.ci": ci_task}]}]))
    import ansible_runner
    private = tmp_path / "runner"
    private.mkdir()
    job = ansible_runner.run(private_data_dir=str(private), playbook=str(book), inventory=str(rig["inventory"]),
                             quiet=True, envvars={**ansible_env(tmp_path), "ANSIBLE_HOST_KEY_CHECKING": "True"})
    assert job.rc == 4, (Path(job.config.artifact_dir) / "stdout").read_text()[-3000:]
    doctor, run, fetched, studied, ci = (e["event_data"]["res"] for e in job.events if e["event"] == "runner_on_ok")
    assert job.stats["changed"] == {"good1": 3} and not job.stats["failures"] and job.stats["dark"] == {"dead": 1}
    [dead] = [e["event_data"]["res"] for e in job.events if e["event"] == "runner_on_unreachable"]
    assert dead["status"] == "unreachable" and "refused" in dead["msg"] and dead["changed"] is False

    facts = doctor["ansible_facts"]["orchestrate_doctor"]
    assert facts["status"] == "ok" and facts["board"]["kind"].startswith("not a Jetson") and not doctor["changed"]

    assert run["status"] == "ok" and run["changed"] is True and run["verdict"] is None  # no trace, no verdict
    app_log = (Path(run["folder"]) / "app.stdout.log").read_text()
    said = float(re.search(r"^Inference : ([\d.]+) ms", app_log, re.M).group(1))  # type: ignore[union-attr]
    assert run["metrics"]["app.inference_mean_ms"] == pytest.approx(said, abs=1e-3)
    assert Path(run["report"]).is_file() and run["board"]["fingerprint"]

    assert fetched["status"] == "ok" and fetched["changed"] is False and fetched["folder"] == run["folder"]
    assert fetched["metrics"] == run["metrics"]  # the report was already here, verified

    assert studied["status"] == "ok" and studied["changed"] is True
    # one text for a list option is one value, as orchestrate's --set takes it
    assert [cell["label"] for cell in studied["cells"]] == ["frames=5", "frames=10"]
    assert Path(studied["folder"]).parent == tmp_path / "runs" / "good1"  # each host's studies apart
    assert json.loads((Path(studied["folder"]) / "study.json").read_text())["file"] == str(study)

    assert ci["status"] == "ok" and ci["changed"] is True and ci["regressions"] == []
    assert ci["outcome"] and "c0ffee" in ci["summary"] and (tmp_path / "junit-good1.xml").is_file()
