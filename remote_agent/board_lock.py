"""The board's capture lock: one capture at a time on a board, an flock held by the capture's supervisor for the
capture and its import. The lock file says who holds it, and any login can tell whether it is held."""
import errno
import fcntl
import json
import os
import time

# nsys 2022.4 stalled in 5 of 10 captures that overlapped another one on the same machine (against 2 of
# 20 alone), whatever their work dirs: the lock is the machine's wherever the agent may write it.
MACHINE_LOCK = "/run/orchestrate-capture.lock"
LOCK = "board.lock"


def lock_path(work_dir):
    """The machine's lock file when its folder is writable (root), else the work dir's."""
    if os.access(os.path.dirname(MACHINE_LOCK), os.W_OK):
        return MACHINE_LOCK
    return os.path.join(work_dir, LOCK)


class BoardLock(object):
    """One capture at a time on a board: an flock on its lock file, held by the supervisor for the
    capture and the import. The file says who holds it."""

    def __init__(self, work_dir):
        self.path = lock_path(work_dir)
        self.fd = None

    def acquire(self, wait_s, holder):
        # readable by anyone: who holds the board is no secret, and another login probes it (``lock_state``)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            os.fchmod(self.fd, 0o644)  # one an older agent made 0600
        except OSError:
            pass
        deadline = time.time() + max(float(wait_s or 0), 0)
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except (OSError, IOError) as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.time() >= deadline:
                    held_by = self.holder()
                    os.close(self.fd)
                    self.fd = None
                    return held_by or {"run": "unknown"}
                time.sleep(0.2)
        os.ftruncate(self.fd, 0)
        os.write(self.fd, json.dumps(holder, sort_keys=True).encode())
        return None

    def holder(self):
        try:
            with open(self.path) as handle:
                return json.load(handle)
        except (OSError, IOError, ValueError):
            return None


def lock_state(work_dir):
    """'held' while a capture holds the board's lock (the machine's, or the work dir's), 'free', or 'unknown' when a
    lock file cannot be opened. Probed with a shared lock let go at once."""
    found = "free"
    for path in (MACHINE_LOCK, os.path.join(work_dir, LOCK)):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                found = "unknown"
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except (OSError, IOError) as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            return "held"
        finally:
            os.close(fd)
    return found
