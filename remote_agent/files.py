"""File chores on the target: removal confined to the agent's work dir, the import, free space."""
import os
import subprocess

from .messages import RemoveAnswer


def inside(path, root):
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def remove_answer(request):
    """The remove command's answer to a RemoveRequest."""
    return RemoveAnswer(removed=remove(request.paths, request.root))


def remove(paths, root):
    """Remove files (and then empty folders) but only under root: a wrong path must not cost data."""
    removed = []
    for path in paths:
        if not inside(path, root):
            raise ValueError("refusing to remove {}: outside {}".format(path, root))
        if os.path.isfile(path) or os.path.islink(path):
            os.remove(path)
            removed.append(path)
        elif os.path.isdir(path):
            for dirpath, dirnames, filenames in os.walk(path, topdown=False):
                for name in filenames:
                    os.remove(os.path.join(dirpath, name))
                for name in dirnames:
                    os.rmdir(os.path.join(dirpath, name))
            os.rmdir(path)
            removed.append(path)
    return removed


def import_qdstrm(importer, qdstrm, timeout_s=1800):
    """Run QdstrmImporter; it writes X.nsys-rep (X.qdrep before 2021.x) beside X.qdstrm."""
    proc = subprocess.Popen([importer, "-i", qdstrm], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True)
    out, _ = proc.communicate(timeout=timeout_s)
    base = qdstrm[: -len(".qdstrm")]
    for suffix in (".nsys-rep", ".qdrep"):
        if os.path.isfile(base + suffix):
            return {"exit": proc.returncode, "report": base + suffix, "output": out[-2000:]}
    return {"exit": proc.returncode, "report": None, "output": out[-2000:]}


RESERVE = "reserve"


def sizes(folder):
    """name -> size of each file in folder (not below it): what the host pulls needs no look of its own."""
    found = {}
    for entry in os.scandir(folder):
        if entry.is_file(follow_symlinks=False):
            found[entry.name] = entry.stat(follow_symlinks=False).st_size
    return found


def release_reserve(run_dir):
    try:
        os.remove(os.path.join(run_dir, RESERVE))
    except OSError:
        pass


def free_bytes(path):
    """Free bytes on the file system holding path (or its nearest existing parent)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe) and probe != "/":
        probe = os.path.dirname(probe)
    stat = os.statvfs(probe)
    return stat.f_bavail * stat.f_frsize
