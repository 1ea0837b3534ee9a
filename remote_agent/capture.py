"""Run ``nsys profile`` under a watchdog, with a private Xvfb when asked.

The agent, not nsys, ends the capture: delay + duration after the app started it sends SIGTERM to the
app's session, and nsys finishes its report once the app is gone. (nsys 2022.4's own --duration left it
stuck in "Generating" in about a third of the es2gears runs on Mesa.) nsys was also seen to hang after
writing its report, and apps that ignore SIGTERM outlive it (nsys starts the app in a session of its
own). So the agent owns the deadline too: past delay + duration + grace it interrupts nsys (which then
writes what it has), then terminates, then kills nsys's process group and the app's session.
"""
import collections
import glob
import os
import select
import signal
import subprocess
import time

from . import boardfs
from .capture_machine import CaptureMachine, Emit, NsysEnded, SignalApp, Tick
from .messages import CaptureResult
from .watchdog import (
    Watchdog,
    folder_bytes,
    nsys_daemons,
    process_started_at,
    session_alive,
    signal_session,
)

REPORT_SUFFIXES = (".nsys-rep", ".qdrep", ".qdstrm")
# Files a killed nsys 2022.4 leaves in /tmp whatever TMPDIR says (a normal exit removes them).
NSYS_TMP_LEFTOVERS = "/tmp/injection_config_*"
# The environment variable that marks every process a run starts (nsys, its daemon, the app, Xvfb).
RUN_MARK = "ORCHESTRATE_RUN"
# Seconds between two checks of whether nsys has exited, between the capture's looks.
EXIT_POLL_S = 0.1


class NsysLog(object):
    """Follows nsys's combined output in its log file and notes the lines the watchdog cares about.

    nsys writes to a file, never a pipe: with its stdout on a pipe, nsys 2022.4 was seen to hang for
    good when the app exited within a second or two."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.partial = ""
        self.generated_at = None
        self.generated = []
        self.program_not_found = False
        # what nsys said last: why it failed, when it did
        self.last_lines = collections.deque(maxlen=3)  # type: collections.deque
        self._expecting_paths = False

    def poll(self):
        try:
            with open(self.path, "r") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
                self.offset = handle.tell()
        except (OSError, IOError):
            return
        lines = (self.partial + chunk).split("\n")
        self.partial = lines.pop()
        for line in lines:
            self._note(line.strip())

    def _note(self, stripped):
        if stripped:
            self.last_lines.append(stripped)
        if stripped.startswith("Program not found"):
            self.program_not_found = True
        if stripped.startswith("Generated:"):
            self._expecting_paths = True
            self.generated_at = time.time()
        elif self._expecting_paths and stripped.startswith("/"):
            self.generated.append(stripped)
        else:
            self._expecting_paths = False


def start_xvfb(log_path, marks, timeout_s=15.0):
    """Start Xvfb on a free display number (it picks and reports it through -displayfd)."""
    read_fd, write_fd = os.pipe()
    env = os.environ.copy()
    env.update(marks)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x720x24", "-nolisten", "tcp"],
            stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,), start_new_session=True, env=env)
    os.close(write_fd)
    deadline = time.time() + timeout_s
    number = b""
    while time.time() < deadline:
        ready, _, _ = select.select([read_fd], [], [], 0.2)
        if ready:
            chunk = os.read(read_fd, 16)
            if not chunk:
                break
            number += chunk
            if number.endswith(b"\n"):
                break
        if proc.poll() is not None:
            break
    os.close(read_fd)
    if not number.strip().isdigit():
        stop_process_group(proc)
        raise RuntimeError("Xvfb did not start (see {})".format(log_path))
    return proc, ":" + number.strip().decode()


def stop_process_group(proc, term_wait_s=5.0):
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, term_wait_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def remove_nsys_leftovers(before, since, actions):
    """When the watchdog had to step in (nsys, its daemon or its helpers did not end by themselves), the
    files nsys would have removed on a normal exit, and only those that appeared during this capture."""
    if not actions:
        return []
    removed = []
    for path in sorted(set(glob.glob(NSYS_TMP_LEFTOVERS)) - before):
        try:
            if os.path.getmtime(path) >= since - 1:
                os.remove(path)
                removed.append(path)
        except OSError:
            pass
    return removed


def find_reports(report_base):
    return {suffix: report_base + suffix for suffix in REPORT_SUFFIXES if os.path.isfile(report_base + suffix)}


def capture(request, emit, should_stop=None):
    """Run the capture; should_stop() may return a reason to end it early (the host asked, the host is
    gone, the disk is nearly full): the app is then stopped as at the planned end, and nsys writes the
    report of what it has. What to do and when is capture_machine's to decide; this observes and acts."""
    run_dir = request.run_dir
    scratch = os.path.join(run_dir, "scratch")
    os.makedirs(scratch, mode=0o700, exist_ok=True)
    env = os.environ.copy()
    env.update(request.env)
    # nsys writes its raw stream under TMPDIR first; /tmp on a board may be a small tmpfs.
    env["TMPDIR"] = scratch
    # every process the run starts carries this mark, so that a leftover can always be traced to its run
    env[RUN_MARK] = run_dir
    xvfb = None
    display = request.display
    if display.mode == "xvfb":
        xvfb, env["DISPLAY"] = start_xvfb(os.path.join(run_dir, "xvfb.log"), {RUN_MARK: run_dir})
    elif display.mode == "use" and display.display:
        env["DISPLAY"] = display.display
        if display.xauthority:
            env["XAUTHORITY"] = display.xauthority
    machine = CaptureMachine.from_request(request, time.time())
    started = machine.started
    emit("capture_started", display=env.get("DISPLAY"), deadline_s=machine.budget)
    cwd = boardfs.expand_login_home(request.cwd) if request.cwd else None
    try:  # a retried capture reuses the run folder: the last try's pid file names an app long gone
        os.remove(request.pid_file)
    except OSError:
        pass
    with_nsys = request.with_nsys
    # without nsys (--no-nsys) the launch wrapper runs alone and exec's the app: the process is the app
    log_path = os.path.join(run_dir, "nsys.log" if with_nsys else "launch.log")
    tmp_before = set(glob.glob(NSYS_TMP_LEFTOVERS))
    with open(log_path, "w") as log:
        proc = subprocess.Popen(request.argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    output = NsysLog(log_path)
    watchdog = Watchdog(proc, request.pid_file)
    try:
        while proc.poll() is None:
            now, seen = observe(machine, watchdog, output, should_stop, scratch)
            for action in machine.decide(now, seen):
                perform(action, watchdog, emit)
            machine.acted(time.time())
            wait_for_exit(proc, machine.next_look_s(time.time()))
        nsys_exit = proc.wait()
        nsys_ended = time.time()
        app = watchdog.app_session()
        app_alive = session_alive(app) if app and machine.app_gone is None else None
        report_written = bool(find_reports(request.report_base))
        now = time.time()
        ended = NsysEnded(nsys_ended, app, app_alive, report_written, proc.pid if with_nsys else None,
                          nsys_daemons(proc.pid) if with_nsys else [], list(watchdog.actions))
        leftovers = []
        for action in machine.decide(now, ended):
            leftovers += perform(action, watchdog, emit)
    finally:
        if proc.poll() is None:
            watchdog.stop_nsys("interrupted", signal.SIGKILL)
        if xvfb is not None:
            stop_process_group(xvfb)
    output.poll()
    removed = remove_nsys_leftovers(tmp_before, started, watchdog.actions)
    result = {
        "with_nsys": with_nsys,
        "removed_leftovers": removed,
        "nsys_exit": nsys_exit,
        "nsys_elapsed_s": round(nsys_ended - started, 3),
        "elapsed_s": round(time.time() - started, 3),
        "watchdog": [action.to_wire() for action in watchdog.actions],
        "leftover_pids": leftovers,
        "program_not_found": output.program_not_found,
        "generated": output.generated,
        "reports": find_reports(request.report_base),
        "display": env.get("DISPLAY"),
        "env_added": dict({k: env[k] for k in ("DISPLAY", "XAUTHORITY") if env.get(k)}, TMPDIR=scratch),
        "app_pid": watchdog.app_session(),
        # nsys 2022.4 now and then fails at once ("End of file", exit 1; once exit 0 after 0.2 s, its helpers
        # left running) when a capture follows another closely: it never started the app, so a capture again
        # costs nothing
        "failed_to_start": nsys_exit is not None and watchdog.app_session() is None
        and not find_reports(request.report_base) and not output.program_not_found
        and nsys_ended - started < 10,
        "started_at": round(started, 3),
    }
    if not with_nsys:
        del result["nsys_elapsed_s"]
        result.update(without_nsys(nsys_exit, nsys_ended - started))
    elif nsys_exit not in (0, None):
        result["nsys_last_lines"] = list(output.last_lines)
    result.update(machine.summary())  # app_stopped_after_s, stalled, stop_signals, app_gone_after_s, ended_early
    result["ended_at"] = round(time.time(), 3)
    return CaptureResult.from_wire(result, strict=True)


def without_nsys(exit_status, elapsed_s):
    """A capture's result without nsys: the process that ended was the app itself (exec'd by the wrapper)."""
    return {"app_exit": exit_status, "app_elapsed_s": round(elapsed_s, 3), "nsys_exit": None, "failed_to_start": False,
            "program_not_found": exit_status == 127}  # the shell's status for a command it could not find


def observe(machine, watchdog, output, should_stop, scratch):
    """What the machine sees at a tick while nsys runs, each costly look taken only while it needs it."""
    output.poll()
    now = time.time()
    app = watchdog.app_session()
    started_at = process_started_at(app, machine.started, now) if app and machine.app_started is None else None
    app_alive = session_alive(app) if app and machine.app_gone is None else None
    reason = should_stop() if should_stop is not None and machine.ended_early is None else None
    written = folder_bytes(scratch) if machine.watches_scratch(app_alive, output.generated_at) else None
    return now, Tick(app, started_at, app_alive, reason, output.generated_at, written)


def wait_for_exit(proc, seconds):
    """Up to seconds, in steps of EXIT_POLL_S, ending as soon as nsys (or, without nsys, the app) has exited:
    asking for one's own child costs a system call, a look at the capture much more."""
    deadline = time.time() + seconds
    while proc.poll() is None:
        left = deadline - time.time()
        if left <= 0:
            return
        time.sleep(min(left, EXIT_POLL_S))


def perform(action, watchdog, emit):
    """Carries out one of the machine's actions; a Stop's (the watchdog's) returns the PIDs it left alive."""
    if isinstance(action, Emit):
        emit(action.event, **action.fields)
    elif isinstance(action, SignalApp):
        signal_session(action.sid, action.sig)
    else:
        return watchdog.stop(action)
    return []
