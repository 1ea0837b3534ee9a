"""Shared fixtures. Integration fixtures start real services: sshd on loopback, Xvfb via the agent."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from postgres_server import Postgres, make_postgres  # noqa: E402
from sshd_server import Sshd, make_sshd  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _no_developer_config(monkeypatch, tmp_path):
    """Keep the developer's own inventory, app folder and ssh files out of every test."""
    monkeypatch.delenv("ORCHESTRATE_INVENTORY", raising=False)
    monkeypatch.delenv("ORCHESTRATE_DB", raising=False)
    monkeypatch.setenv("ORCHESTRATE_APPS_DIR", str(tmp_path / "no-user-apps"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "user-data"))  # the default results database


NSYS_TMP_FILES = "/tmp/injection_config_*"  # nsys removes them when it ends well; a stopped one leaves them


@pytest.fixture(autouse=True)
def _no_nsys_files_left_in_tmp():
    """Nothing a test's runs start outlives them, nsys's own files in /tmp included."""
    before = set(glob.glob(NSYS_TMP_FILES))
    yield
    left = sorted(set(glob.glob(NSYS_TMP_FILES)) - before)
    for path in left:
        os.remove(path)
    assert not left, f"nsys files left in /tmp: {left}"


@pytest.fixture(scope="session")
def sshd(tmp_path_factory) -> Sshd:
    if os.geteuid() != 0 or not shutil.which("sshd"):
        pytest.skip("needs root and openssh-server (the README's test command installs it)")
    server = make_sshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres(tmp_path_factory) -> Postgres:
    """A real PostgreSQL server of the session's own, on a Unix socket."""
    server = make_postgres(tmp_path_factory.mktemp("postgres"))
    if server is None:
        pytest.skip("needs Debian's postgresql (the README's test command installs it)")
    server.start()
    yield server
    server.stop()


def write_inventory(path: Path, hosts: dict[str, dict]) -> Path:
    import yaml
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return path


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The real command line, in a child process, as a user runs it (``env``: variables to add)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="120", **(env or {}))
    return subprocess.run([sys.executable, "-m", "orchestrator", *args], cwd=cwd or REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


NSYS_DATA = DATA / "nsys"


@pytest.fixture(scope="session")
def export(tmp_path_factory):
    """export("es2gears-opengl") -> path of that real export, unpacked once per session."""
    import gzip
    folder = tmp_path_factory.mktemp("exports")

    def unpack(name: str) -> Path:
        target = folder / f"{name}.sqlite"
        if not target.exists():
            with gzip.open(NSYS_DATA / f"{name}.sqlite.gz", "rb") as packed:
                target.write_bytes(packed.read())
        return target
    return unpack


@pytest.fixture(scope="session")
def host_nsys() -> str:
    path = shutil.which("nsys")
    if not path:
        pytest.skip("needs Nsight Systems (the README's test command installs it)")
    return path


@pytest.fixture
def browser():
    """Headless Chromium (Debian's package), started on the test's first page and closed at its end, so
    that no browser runs while a test captures with nsys."""
    from browser import LazyChromium, chromium_path
    path = chromium_path()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: scripts/install-system-deps.sh installs it")
        pytest.skip("needs chromium (the README's test command installs it)")
    lazy = LazyChromium(path)
    yield lazy
    lazy.close()


def nsys_stall(record: dict) -> bool:
    """The run's watchdog touched nsys alone, for one of nsys's stalls, after the app had been stopped as
    planned: the branch 'nsys stalled and had to be stopped' (whether it had written a report or not)."""
    from orchestrator.runs.outcome import nsys_alone_stalled
    return nsys_alone_stalled(record)


def nsys_stall_only(record: dict) -> bool:
    """nsys stalled and had to be stopped, and its report still came back (what a study counts too)."""
    from orchestrator.runs.outcome import measured_despite_nsys
    return measured_despite_nsys(record)


def profiled_run(done: subprocess.CompletedProcess, out_dir: Path) -> Path:
    """The run folder of a profile (or fetch) that worked. nsys 2022.4 stalls now and then around its report
    however the app behaves; the tool then promises exit 11, one line naming the watchdog and nsys, the
    app stopped as planned and the report back: that branch is accepted, asserted as such, and nothing else."""
    if done.returncode == 0:
        return Path(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 11, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: watchdog: nsys "), done.stderr
    run_dir = max((p for p in out_dir.iterdir() if (p / "run.json").is_file()), key=lambda p: p.stat().st_mtime)
    import json
    assert nsys_stall_only(json.loads((run_dir / "run.json").read_text())), done.stderr
    return run_dir
