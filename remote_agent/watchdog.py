"""What ends a capture's processes when they do not end by themselves: sessions and nsys's daemons found in
/proc, the escalations that capture_machine decides carried out and recorded, the size of nsys's scratch folder.
"""
import os
import signal
import subprocess
import time

from .capture_machine import Escalation, Wait
from .capture_machine import stop_nsys as nsys_stop
from .capture_machine import stop_session as session_stop
from .messages import WatchdogStep

# Seconds between two looks at a session that is given time to end.
SESSION_POLL_S = 0.2


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


def session_alive(sid):
    """Whether the session has a live process. Its leader (the app: its PID is the session id) living says so in
    one read of /proc/<sid>/stat; only once it is gone (or a zombie) are all the processes looked through."""
    try:
        with open("/proc/{}/stat".format(sid)) as handle:
            fields = handle.read().rsplit(")", 1)[-1].split()
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == sid:
            return True
    except (OSError, IOError, ValueError):
        pass
    return bool(session_members(sid))


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

    def record(self, stop, sig):
        self.actions.append(WatchdogStep(kind=stop.kind, reason=stop.reason, signal=signal.Signals(sig).name,
                                         target=stop.target, at=time.time()))

    def stop_nsys(self, kind, first_signal=signal.SIGINT):
        """SIGINT lets nsys stop collecting and write the report; TERM and KILL follow if it lingers."""
        return self.stop(nsys_stop(kind, first_signal))

    def stop_session(self, label, sid, deadline):
        """A session still there at the deadline is terminated, then killed; returns the PIDs left."""
        return self.stop(session_stop(label, sid, deadline))

    def stop(self, stop):
        """Carries out a capture_machine.Stop: its waits, and its signals, each recorded. Returns the PIDs of
        the target still alive at the end."""
        steps = Escalation(stop)
        while True:
            step = steps.decide(time.time(), self._alive(stop))
            if step is None:
                return steps.left
            if isinstance(step, Wait):
                self._wait(stop, step.until)
            else:
                self.record(stop, step.sig)
                self._send(stop, step.sig)

    def _alive(self, stop):
        if stop.sid is None:  # nsys itself
            return [self.proc.pid] if self.proc.poll() is None else []
        return session_members(stop.sid)

    def _wait(self, stop, until):
        if stop.sid is not None:
            time.sleep(SESSION_POLL_S)
            return
        try:  # nsys is the agent's child: its end is seen at once
            self.proc.wait(timeout=max(until - time.time(), 0.0))
        except subprocess.TimeoutExpired:
            pass

    def _send(self, stop, sig):
        if stop.sid is not None:
            signal_session(stop.sid, sig)
            return
        try:
            os.killpg(self.proc.pid, sig)
        except OSError:
            pass
        if sig == signal.SIGKILL:
            app = self.app_session()
            if app:
                signal_session(app, signal.SIGKILL)
