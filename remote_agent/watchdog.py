"""What ends a capture's processes when they do not end by themselves, and tells that nsys stalled: sessions
and nsys's daemons found in /proc, signals escalated and recorded, the growth of nsys's scratch folder.
"""
import os
import signal
import subprocess
import time

# Seconds nsys may linger after printing "Generated:" before it counts as hung; and that nsys's daemon and
# helpers get after nsys ended, in case they are still finishing its report.
AFTER_REPORT_GRACE_S = 20.0
# Seconds they get when the watchdog had to stop nsys and no report was written: nothing is left for them to
# finish (a stopped nsys's daemon spins for good), and a capture made again should not wait on them. (In the
# suite, every stall that left no report waited 20 s for such a daemon before it was made again.)
ORPHAN_GRACE_S = 2.0
# Seconds between escalation steps (SIGINT -> SIGTERM -> SIGKILL).
SIGNAL_STEP_S = 10.0
# Seconds in which the scratch folder must grow by STALL_GROWTH_BYTES, once the app is gone and before
# "Generated:", for nsys to count as still writing its report. (A stalled nsys 2022.4 sits in "Generating"
# with a 114 kB raw file; a working one writes megabytes within a second, a 2 s capture of a sleep loop
# 6 MB. One stuck on a disk that had filled up appended 4 kB every second or two for over a minute:
# while any change counted as writing, it was waited for until the planned end and 20 s more.)
STALL_S = 15.0
STALL_GROWTH_BYTES = 1024 * 1024


def session_members(sid):
    """PIDs of live processes whose session id is sid (from /proc/<pid>/stat)."""
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/{}/stat".format(name)) as handle:
                stat = handle.read()
        except (OSError, IOError):
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        # fields: state, ppid, pgrp, session, ...; zombies are already gone for our purpose
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == sid:
            members.append(int(name))
    return members


def process_started_at(pid, earliest, latest):
    """When a process started, in time.time() terms, from its start tick in /proc/<pid>/stat and the
    uptime, kept within [earliest, latest]; latest when /proc does not say. Polling alone would see the
    app up to a poll late, and count its run that much short."""
    try:
        with open("/proc/{}/stat".format(pid)) as handle:
            fields = handle.read().rsplit(")", 1)[-1].split()
        with open("/proc/uptime") as handle:
            uptime = float(handle.read().split()[0])
        ticks = int(fields[19])  # field 22 of stat, starttime: clock ticks after boot
        started = time.time() - uptime + ticks / float(os.sysconf("SC_CLK_TCK"))
    except (OSError, IOError, ValueError, IndexError):
        return latest
    return min(max(started, earliest), latest)


def nsys_daemons(nsys_pid):
    """PIDs of the 'nsys --start-agent' daemons a 'nsys profile' started: each runs in a session of
    its own, named '--session-name=profile-<app>-<nsys pid>', and one whose nsys was killed keeps
    running (and spinning a core) for good."""
    suffix = "-{}".format(nsys_pid)
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/{}/cmdline".format(name), "rb") as handle:
                args = handle.read().decode("utf-8", "replace").split("\0")
        except (OSError, IOError):
            continue
        if "--start-agent" in args and any(a.startswith("--session-name=profile-") and a.endswith(suffix)
                                           for a in args):
            found.append(int(name))
    return found


def signal_session(sid, sig):
    for pid in session_members(sid):
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def read_pid_file(path):
    try:
        with open(path) as handle:
            return int(handle.read().strip() or 0) or None
    except (OSError, IOError, ValueError):
        return None


def folder_bytes(path):
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                pass
    return total


class WriteProgress(object):
    """Whether nsys still writes its report, from the size of its scratch folder over time: stalled once it
    has not grown by STALL_GROWTH_BYTES in STALL_S seconds. Files removed lower the mark the growth counts
    from, without counting as progress."""

    def __init__(self, now, written):
        self.since, self.mark = now, written

    def stalled(self, now, written):
        if written >= self.mark + STALL_GROWTH_BYTES:
            self.since, self.mark = now, written
        elif written < self.mark:
            self.mark = written
        return now - self.since > STALL_S


def leftover_grace_s(actions, report_written):
    """How long nsys's daemon and helpers may outlive nsys: they may still be finishing its report when the
    CLI ends, unless the watchdog had to stop nsys and there is no report to finish."""
    stopped_nsys = any(action["target"] == "nsys" for action in actions)
    return ORPHAN_GRACE_S if stopped_nsys and not report_written else AFTER_REPORT_GRACE_S


class Watchdog(object):
    """Escalates signals to nsys's process group and the app's session, recording every step."""

    def __init__(self, proc, pid_file):
        self.proc = proc
        self.pid_file = pid_file
        self.actions = []
        self._app_pid = None

    def app_session(self):
        """The app's PID, which is its session id; read from the launch wrapper's file until it is there."""
        if self._app_pid is None:
            self._app_pid = read_pid_file(self.pid_file)
        return self._app_pid

    def record(self, reason, sig, target):
        self.actions.append({"reason": reason, "signal": signal.Signals(sig).name, "target": target,
                             "at": time.time()})

    def stop_nsys(self, reason, first_signal=signal.SIGINT):
        """SIGINT lets nsys stop collecting and write the report; TERM and KILL follow if it lingers."""
        sequence = [first_signal, signal.SIGTERM, signal.SIGKILL]
        for sig in sequence[sequence.index(first_signal):]:
            if self.proc.poll() is not None:
                return
            self.record(reason, sig, "nsys")
            try:
                os.killpg(self.proc.pid, sig)
            except OSError:
                pass
            if sig == signal.SIGKILL:
                app = self.app_session()
                if app:
                    signal_session(app, signal.SIGKILL)
            try:
                self.proc.wait(timeout=SIGNAL_STEP_S)
                return
            except subprocess.TimeoutExpired:
                continue

    def stop_leftovers(self, deadline, report_written):
        """The app (or its children), nsys's own helpers and its daemon may outlive nsys; past the
        deadline they are terminated, then killed. nsys's helpers and daemon get leftover_grace_s more.
        Returns the PIDs still alive after that."""
        nsys_deadline = max(deadline, time.time() + leftover_grace_s(self.actions, report_written))
        sessions = [("app", self.app_session(), deadline), ("nsys helpers", self.proc.pid, nsys_deadline)]
        sessions += [("nsys daemon", pid, nsys_deadline) for pid in nsys_daemons(self.proc.pid)]
        left = []
        for label, sid, until in sessions:
            if sid:
                left += self.stop_session(label, sid, until)
        return left

    def stop_session(self, label, sid, deadline):
        while session_members(sid) and time.time() < deadline:
            time.sleep(0.2)
        left = session_members(sid)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not left:
                break
            self.record("{} outlived the capture".format(label), sig, label)
            signal_session(sid, sig)
            end = time.time() + (SIGNAL_STEP_S if sig == signal.SIGTERM else 5.0)
            while session_members(sid) and time.time() < end:
                time.sleep(0.2)
            left = session_members(sid)
        return left
