"""``send``: a file's bytes on stdout from an offset on, hashed while they go out.

The one pass of the verified pull: the kernel copies the file into the channel (sendfile) while a
thread hashes the whole file, the bytes before the offset included (they are the host's partial copy,
hashed there too), so the two sha256 can be compared at the end. The answer is one JSON line on
stderr, since stdout carries the data: ``{"sha256", "size", "sent"}`` or ``{"failed": true, "msg"}``.
"""
import hashlib
import json
import os
import sys
import threading

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


def send(path, offset, out_fd=1, err=None):
    err = err or sys.stderr
    size = os.path.getsize(path)
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
    answer = {"sha256": hasher.digest.hexdigest(), "size": size, "sent": reached - offset, "offset": offset}
    err.write(json.dumps(answer, sort_keys=True) + "\n")
    err.flush()
    return answer
