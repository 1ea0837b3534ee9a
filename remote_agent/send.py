"""``send``: files' bytes on stdout, each from an offset on, hashed while they go out.

The one pass of the verified pull: the kernel copies each file into the channel (sendfile) while a thread
hashes the whole file, the bytes before the offset included (they are the host's partial copy, hashed there
too), so the two sha256 can be compared at the end. The files go one after the other, each from its offset
to the size the host measured just before, so that the host can tell them apart in the one stream; a pull
is then one call however many files it takes (each call costs a Python start on the board: a pull of a
report and three logs took 1.25-1.35 s as four calls on a loopback board, 0.46-0.51 s as one).

The answer is a JSON line per file on stderr, since stdout carries the data: a ``SentFile`` with its sha256,
size and the bytes sent from its offset, or with ``failed`` and why for a file that could not be sent whole, after
which nothing more is sent.
"""
import hashlib
import json
import os
import sys
import threading

from .messages import SentFile

CHUNK = 1024 * 1024
SENDFILE_CHUNK = 16 * CHUNK


class _Hasher(threading.Thread):
    """sha256 of the first size bytes of a file, read in a thread of its own (hashlib lets go of the
    interpreter lock for large buffers, so this runs beside the copy)."""

    def __init__(self, path, size):
        threading.Thread.__init__(self)
        self.daemon = True
        self.path, self.size = path, size
        self.digest = hashlib.sha256()
        self.error = None

    def run(self):
        try:
            left = self.size
            with open(self.path, "rb") as handle:
                while left > 0:
                    block = handle.read(min(CHUNK, left))
                    if not block:
                        break
                    self.digest.update(block)
                    left -= len(block)
        except Exception as exc:  # reported by the caller
            self.error = exc


def _copy(source_fd, out_fd, offset, size):
    try:
        while offset < size:
            sent = os.sendfile(out_fd, source_fd, offset, min(SENDFILE_CHUNK, size - offset))
            if sent == 0:
                break
            offset += sent
        return offset
    except OSError as exc:
        if exc.errno not in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: this output takes no sendfile
            raise
    os.lseek(source_fd, offset, os.SEEK_SET)
    while offset < size:
        block = os.read(source_fd, min(CHUNK, size - offset))
        if not block:
            break
        view = memoryview(block)
        while view:
            view = view[os.write(out_fd, view):]
        offset += len(block)
    return offset


def send(path, offset, size, out_fd=1):
    """The bytes of path from offset to size on out_fd; its sha256 up to size. A file whose size is no longer
    size is refused: the host could not tell where its bytes end."""
    now = os.path.getsize(path)
    if now != size:
        raise ValueError("{} is {} bytes now, {} when the pull began".format(path, now, size))
    offset = max(0, min(int(offset), size))
    hasher = _Hasher(path, size)
    hasher.start()
    source = os.open(path, os.O_RDONLY)
    try:
        reached = _copy(source, out_fd, offset, size)
    finally:
        os.close(source)
    hasher.join()
    if hasher.error is not None:
        raise hasher.error
    if reached != size:
        raise ValueError("{} ended after {} of {} bytes".format(path, reached, size))
    return SentFile(path=path, sha256=hasher.digest.hexdigest(), size=size, sent=reached - offset, offset=offset)


def send_files(request, out_fd=1, err=None):
    """Each file of a SendRequest in turn; a SentFile line per file. Returns the exit status."""
    err = err or sys.stderr
    for item in request.files:
        try:
            answer = send(item.path, item.offset, item.size, out_fd)
        except Exception as exc:  # said in the file's answer; the files after it are not sent
            answer = SentFile(path=item.path, failed=True, msg="{}: {}".format(type(exc).__name__, exc))
        err.write(json.dumps(answer.to_wire(), sort_keys=True) + "\n")
        err.flush()
        if answer.failed:
            return 1
    return 0
