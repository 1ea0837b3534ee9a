"""The board's own files and tools, read under a root that is '/' on a board and a folder laid out like
one in the tests (``ORCHESTRATE_BOARD_ROOT``: real files copied from boards, and stand-ins for their
tools), so that everything the agent reads of a Jetson runs for real on a machine that is not one.

Python 3.6+, stdlib only. Every read tolerates a missing file: a PC has no Jetson files.
"""
import os
import shutil
import subprocess

ROOT_VARIABLE = "ORCHESTRATE_BOARD_ROOT"
TOOL_FOLDERS = ("usr/bin", "usr/sbin", "bin", "sbin")


def root():
    return os.environ.get(ROOT_VARIABLE) or "/"


def path(board_path):
    """'/sys/devices/...' on this board (under the root)."""
    base = root()
    return board_path if base == "/" else os.path.join(base, board_path.lstrip("/"))


def read(board_path, binary=False):
    try:
        with open(path(board_path), "rb" if binary else "r") as handle:
            return handle.read()
    except (OSError, IOError, UnicodeDecodeError):
        return None


def read_int(board_path):
    text = (read(board_path) or "").strip()
    return int(text) if text.lstrip("-").isdigit() else None


def listdir(board_path):
    try:
        return os.listdir(path(board_path))
    except OSError:
        return []


def tool(name):
    """A board tool's path: on PATH on a board, only under the root's bin folders elsewhere."""
    if root() == "/":
        return shutil.which(name)
    for folder in TOOL_FOLDERS:
        candidate = path(os.path.join("/", folder, name))
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def output(argv, timeout=20):
    """A tool's stdout ('' when it cannot run or hangs)."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    except OSError:
        return ""
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return ""


def login_home():
    """The home of the user who logged in: under sudo (ansible_become) that of SUDO_USER, not the become
    user's. Apps live in the desktop user's home, and '~' in their working folders means it."""
    import pwd
    user = os.environ.get("SUDO_USER")
    if user:
        try:
            return pwd.getpwnam(user).pw_dir
        except KeyError:
            pass
    return os.path.expanduser("~")


def expand_login_home(folder):
    """'~' and '~/x' as the login user's home (see login_home); other paths as they are."""
    if folder == "~" or folder.startswith("~/"):
        return login_home() + folder[1:]
    return folder
