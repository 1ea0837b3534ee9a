"""Shared fixtures. Integration fixtures start real services: sshd on loopback, Xvfb via the agent.

The suite runs on three workers (pytest-xdist). Each worker's ``sshd`` is a board of its own (namespaces with
their own /run, /tmp and /dev/shm), so the workers capture at once, each on its own board and under its own
capture lock. Two markers say what a test needs of this machine beyond its board (``workers.py``):
``machine`` (it captures with this machine's own nsys and lock: one such test at a time, all on one
worker) and ``alone`` (its figures need the machine to itself: nothing else runs beside it).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

# hypothesis's property tests hold figures, never time: no deadline per example (a busy machine, CI beside a
# capture, makes a slow example, not a wrong one)
settings.register_profile("orchestrate", deadline=None)
settings.load_profile("orchestrate")

sys.path.insert(0, str(Path(__file__).parent))

import scenarios  # noqa: E402
from postgres_server import Postgres, make_postgres  # noqa: E402
from sshd_server import MACHINES, LoginUser, Sshd, add_login_user, make_sshd, remove_login_user  # noqa: E402
from workers import MachineShare, machine_share, once, shared_folder  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
SHARE = pytest.StashKey[MachineShare]()


@pytest.fixture(autouse=True)
def _no_developer_config(monkeypatch, tmp_path):
    """Keep the developer's own inventory, app folder and ssh files out of every test."""
    monkeypatch.delenv("ORCHESTRATE_INVENTORY", raising=False)
    monkeypatch.delenv("ORCHESTRATE_DB", raising=False)
    monkeypatch.setenv("ORCHESTRATE_APPS_DIR", str(tmp_path / "no-user-apps"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "user-data"))  # the default results database


@pytest.fixture(autouse=True)
def _no_command_left_running():
    """A test that fails before it waits for a command it started in the background does not leave it running."""
    yield
    scenarios.end_started()


NSYS_TMP_FILES = "injection_config_*"  # in /tmp: nsys removes them when it ends well; a stopped one leaves them


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that capture with this machine's own nsys, and those that need it to themselves, run on one worker,
    one after the other; the ``alone`` ones first, so that the other worker waits for them once."""
    for item in items:
        if item.get_closest_marker("machine") or item.get_closest_marker("alone"):
            item.add_marker(pytest.mark.xdist_group("machine"))
    items.sort(key=lambda item: item.get_closest_marker("alone") is None)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SHARE] = machine_share(config)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Between workers: an ``alone`` test runs (set-up, call, tear-down) with nothing beside it, a ``machine``
    test with no other beside it."""
    share = item.config.stash[SHARE]
    share.before(alone=item.get_closest_marker("alone") is not None,
                 machine=item.get_closest_marker("machine") is not None)
    try:
        yield
    finally:
        share.after(next_alone=nextitem is not None and nextitem.get_closest_marker("alone") is not None)


def nsys_files(host_too: bool) -> set[str]:
    """nsys's files in the /tmp of every board of its own this worker started (or left there when it stopped),
    and in this machine's /tmp."""
    found = {path for board in MACHINES for path in board.nsys_files(NSYS_TMP_FILES)}
    return found | (set(glob.glob(f"/tmp/{NSYS_TMP_FILES}")) if host_too else set())


@pytest.fixture(autouse=True)
def _no_nsys_files_left_in_tmp(request):
    """Nothing a test's runs start outlives them, nsys's own files in /tmp included: on its boards, and on this
    machine when the test captures here (the other worker's local captures are the other worker's)."""
    host_too = not os.environ.get("PYTEST_XDIST_WORKER") or request.node.get_closest_marker("machine") is not None
    before = nsys_files(host_too)
    yield
    left = sorted(nsys_files(host_too) - before)
    for path in left:
        Path(path).unlink(missing_ok=True)
    assert not left, f"nsys files left in /tmp: {left}"


@pytest.fixture(scope="session")
def sshd(tmp_path_factory) -> Sshd:
    """The worker's board: a machine of its own, reached over a real sshd on loopback."""
    if os.geteuid() != 0 or not shutil.which("sshd"):
        pytest.skip("needs root and openssh-server (the README's test command installs it)")
    server = make_sshd(tmp_path_factory.mktemp("sshd"), own_machine=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def login_users(sshd) -> dict[str, LoginUser]:
    """The board's login users as on a stock Jetson, where root does not log in: 'nopasswd' (sudo without a
    password), 'password' (sudo asks for the user's password) and 'nosudo' (not in sudoers)."""
    if not (shutil.which("sudo") and shutil.which("useradd")):
        pytest.skip("needs sudo and useradd (the README's test command installs them)")
    users = {sudo or "nosudo": add_login_user(sshd, role, sudo)
             for role, sudo in (("np", "nopasswd"), ("pw", "password"), ("no", None))}
    yield users
    for user in users.values():
        remove_login_user(user.name)


@pytest.fixture(scope="session")
def sshd_here(tmp_path_factory) -> Sshd:
    """A board that is this machine itself (its mounts, its /run and capture lock): for the faults a test makes
    with a mount of its own (a small disk), which a board of its own would not see. Tests using it are marked
    ``machine``."""
    if os.geteuid() != 0 or not shutil.which("sshd"):
        pytest.skip("needs root and openssh-server (the README's test command installs it)")
    server = make_sshd(tmp_path_factory.mktemp("sshd-here"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def shared(tmp_path_factory) -> Path:
    """A folder every worker of this session shares (the scenarios captured once live there)."""
    return shared_folder(tmp_path_factory)


def made_cleanly(make: Callable[[], dict], host_too: bool) -> dict:
    """make()'s result, once its capture left nothing of nsys's in /tmp (no test's own check sees it)."""
    before = nsys_files(host_too)
    result = make()
    left = sorted(nsys_files(host_too) - before)
    for path in left:
        Path(path).unlink(missing_ok=True)
    assert not left, f"nsys files left in /tmp: {left}"
    return result


@pytest.fixture(scope="session")
def scenario(shared, sshd) -> Callable[[str], dict]:
    """scenario(name) -> what the tests read of that run on a board, captured once (tests/scenarios.py)."""
    def read(name: str) -> dict:
        return once(shared, name, lambda folder: made_cleanly(lambda: scenarios.MAKERS[name](folder, sshd), False))
    return read


@pytest.fixture(scope="session")
def es2gears_here(shared) -> dict:
    """es2gears profiled on this machine (the local target), once (tests/scenarios.py). Its readers are
    marked ``machine`` and ``alone``."""
    return once(shared, "es2gears_here", lambda folder: made_cleanly(lambda: scenarios.es2gears_here(folder), True))


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


@pytest.fixture(scope="session")
def chromium():
    """Headless Chromium (Debian's package), started on the session's first page, once per worker."""
    from browser import LazyChromium, chromium_path
    path = chromium_path()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: scripts/install-system-deps.sh installs it")
        pytest.skip("needs chromium (the README's test command installs it)")
    lazy = LazyChromium(path)
    yield lazy
    lazy.close()


@pytest.fixture
def browser(chromium):
    """The test's pages: a browser context of its own, closed at its end."""
    from browser import TestPages
    pages = TestPages(chromium)
    yield pages
    pages.close()


def nsys_stall(record: dict) -> bool:
    """The run's watchdog touched nsys alone, for one of nsys's stalls, after the app had been stopped as
    planned: the branch 'nsys stalled and had to be stopped' (whether it had written a report or not)."""
    from orchestrator.documents.run import RunDocument
    from orchestrator.figures.measured import nsys_alone_stalled
    return nsys_alone_stalled(RunDocument.from_json(record))


def nsys_stall_only(record: dict) -> bool:
    """nsys stalled and had to be stopped, and its report still came back (what a study counts too)."""
    from orchestrator.documents.run import RunDocument
    from orchestrator.figures.measured import measured_despite_nsys
    return measured_despite_nsys(RunDocument.from_json(record))


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
