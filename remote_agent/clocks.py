"""The board's clocks locked for a capture with jetson_clocks, and a restore that happens on every way out
(what ``jetson_clocks --show`` prints is read in board_text.py).

Python 3.6+, stdlib only.
"""
import json
import os
import subprocess
import time

from . import boardfs, facts, power_modes

# Locking the clocks for a capture, and putting them back whatever happens. NVIDIA's benchmark scripts run
# jetson_clocks and leave the board that way; here the board's own state is stored first, and a marker in
# the work dir names it until it is restored, so that even a supervisor that died (power cut aside) has its
# board restored by the next agent that launches a capture there.
PENDING = "clocks.pending.json"
STORED = "clocks.stored"  # each lock's store file is this plus the lock's own suffix


def _run(argv):
    """(exit status, output) of a board tool; (None, why) when it cannot run."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True)
        out, _ = proc.communicate(timeout=60)
        return proc.returncode, out[-2000:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)


def lock(work_dir, nvpmodel_mode=None, owner_pid=None):
    """Store the board's clocks (and power mode), then run jetson_clocks (after 'nvpmodel -m MODE' when asked).
    Returns what restore() needs; raises RuntimeError when the board cannot be locked (nothing changed then,
    or what changed is put back first)."""
    jetson_clocks = boardfs.tool("jetson_clocks")
    if not jetson_clocks:
        raise RuntimeError("jetson_clocks is not on this board (--lock-clocks needs a Jetson)")
    earlier = _read_json(os.path.join(work_dir, PENDING))
    if earlier is not None:
        raise RuntimeError("the clocks an earlier run locked could not be put back (stored in {}): run 'sudo "
                           "jetson_clocks --restore {}'{}, then remove {}".format(
                               earlier.get("stored"), earlier.get("stored"),
                               " and 'sudo nvpmodel -m {}'".format((earlier.get("mode_before") or {}).get("id"))
                               if earlier.get("nvpmodel_mode") is not None else "", os.path.join(work_dir, PENDING)))
    mode_before = facts.current_power_mode()
    _remove_leftover_stores(work_dir)
    # a file of its own: jetson_clocks --store onto an existing file asks "Can I overwrite it? Y/N:" and,
    # with no terminal to answer, exits 1
    stored = os.path.join(work_dir, "{}.{}.{}".format(STORED, os.getpid(), int(time.time() * 1000)))
    status, out = _run([jetson_clocks, "--store", stored])
    if status != 0:
        raise RuntimeError("'jetson_clocks --store' failed: {}".format(out.strip()[-300:]))
    state = {"pid": owner_pid or os.getpid(), "stored": stored, "mode_before": mode_before,
             "nvpmodel_mode": nvpmodel_mode, "locked_at": time.time()}
    _write_json(os.path.join(work_dir, PENDING), state)
    steps = []
    if nvpmodel_mode is not None:
        steps.append([boardfs.tool("nvpmodel") or "nvpmodel", "-m", str(nvpmodel_mode)])
    steps.append([jetson_clocks])
    for argv in steps:
        status, out = _run(argv)
        said = power_modes.refused_switch(out) if "-m" in argv else None
        if status != 0 or said:
            restore(work_dir)
            raise RuntimeError("'{}' failed: {}".format(" ".join([os.path.basename(argv[0])] + argv[1:]),
                                                         said or out.strip()[-300:]))
    state["locked"] = True
    state["mode_locked"] = facts.current_power_mode()
    return state


def restore(work_dir):
    """Put back what lock() stored, if a lock is pending; returns what was done (None when nothing was)."""
    pending = _read_json(os.path.join(work_dir, PENDING))
    if pending is None:
        return None
    done = {"restored": True, "steps": []}  # type: dict
    jetson_clocks = boardfs.tool("jetson_clocks")
    mode_before = pending.get("mode_before") or {}
    if pending.get("nvpmodel_mode") is not None and mode_before.get("id") is not None:
        status, out = _run([boardfs.tool("nvpmodel") or "nvpmodel", "-m", str(mode_before["id"])])
        said = power_modes.refused_switch(out)
        done["steps"].append({"nvpmodel": mode_before["id"], "status": status, "output": out.strip()[-300:],
                              "refused": said})
        done["restored"] = done["restored"] and status == 0 and not said
    status, out = _run([jetson_clocks, "--restore", pending["stored"]]) if jetson_clocks else (None, "no jetson_clocks")
    done["steps"].append({"jetson_clocks_restore": pending["stored"], "status": status, "output": out.strip()[-300:]})
    done["restored"] = done["restored"] and status == 0
    if done["restored"]:
        for path in (os.path.join(work_dir, PENDING), pending["stored"]):
            try:
                os.remove(path)
            except OSError:
                pass
    done["mode_now"] = facts.current_power_mode()
    return done


def _remove_leftover_stores(work_dir):
    """Store files no pending lock names (there is none when this runs): a run that crashed between storing and
    noting it left them."""
    for name in os.listdir(work_dir):
        path = os.path.join(work_dir, name)
        if name.startswith(STORED):
            try:
                os.remove(path)
            except OSError:
                pass


def recover_stale(work_dir, alive):
    """A lock whose owner died without restoring (its supervisor killed): restore it now."""
    pending = _read_json(os.path.join(work_dir, PENDING))
    if pending is None or alive(pending.get("pid") or 0):
        return None
    return restore(work_dir)


def _write_json(path, value):
    partial = path + ".part"
    with open(partial, "w") as handle:
        json.dump(value, handle)
    os.replace(partial, path)


def _read_json(path):
    try:
        with open(path) as handle:
            value = json.load(handle)
        return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None
