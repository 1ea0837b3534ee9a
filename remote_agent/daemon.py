"""The capture runs detached from the SSH channel that started it.

``launch`` takes the board's lock, forks a supervisor into a session of its own (output to files in the
run folder) and returns once it runs. The supervisor runs the capture, imports the raw capture when the
board has an importer, removes nsys's scratch and records every step in ``state.json``. The host keeps
it company through ``attach``, which renews a heartbeat file while the host sends "beat" lines and
turns a "stop" line into a stop request. Without a heartbeat for ``heartbeat_timeout_s`` the supervisor
ends the capture on its own and keeps the report on the board, so a lost link, a closed laptop or a
killed host process costs nothing but the rest of the capture.
"""
import errno
import json
import os
import select
import shutil
import sys
import time
import traceback

from . import board_lock, clocks, facts, files, sampler, watchdog
from . import capture as capture_mod
from .messages import (
    BoardSamples,
    CaptureProgress,
    CaptureState,
    ClocksRestored,
    ClocksUsed,
    DiskLow,
    HostLine,
    ImportOutcome,
    LaunchAnswer,
    LockHolder,
    StatusAnswer,
)

STATE = "state.json"
HEARTBEAT = "heartbeat"
# how often the follower of the host's channel looks whether the state changed (one stat, and whether the
# supervisor lives): CALM while the app runs, FOLLOW_LOOK_S from a second before its planned end and once the
# supervisor is past the capture, so that the capture's end reaches the host within it (0.1 s throughout cost the
# board 0.2 % of a core, 0.25 s 0.09 %)
FOLLOW_LOOK_S = 0.1
CALM_FOLLOW_LOOK_S = 0.25
STOP = "stop"
LOG = "agent.log"
# Bytes set aside at launch and given back when the disk fills up, so that the state file can still
# be written; and the free space under which the capture is ended early, so that nsys can still
# write the report of what it has.
RESERVE_BYTES = 1024 * 1024
LOW_DISK_BYTES = 48 * 1024 * 1024
DEFAULT_HEARTBEAT_TIMEOUT_S = 30.0
ENDED = "ended"


def write_json_atomic(path, data):
    partial = path + ".part"
    with open(partial, "w") as handle:
        json.dump(data, handle, sort_keys=True)
    os.rename(partial, path)


def state_stamp(run_dir):
    """What tells one written state.json from the next (each is a new file, renamed into place), or None."""
    try:
        found = os.stat(os.path.join(run_dir, STATE))
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size


def read_state(run_dir):
    """The supervisor's state (None while there is none): read as run folders are, since a board keeps the state
    of captures an earlier agent made."""
    try:
        with open(os.path.join(run_dir, STATE)) as handle:
            return CaptureState.from_wire(json.load(handle))
    except (OSError, IOError, ValueError):
        return None


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def launch(request):
    """Start the supervisor of a LaunchRequest; answers with its pid, or with who holds the board's lock."""
    run_dir = request.run_dir
    lock = board_lock.BoardLock(request.work_dir)
    busy = lock.acquire(request.settings.wait_lock_s, {
        "run": os.path.basename(run_dir), "host": request.requested_by, "since": time.time()})
    if busy is not None:
        return LaunchAnswer(busy=LockHolder.from_wire(busy))
    recovered = clocks.recover_stale(request.work_dir, pid_alive)  # a lock whose supervisor was killed
    restored = ClocksRestored.from_wire(recovered, strict=True) if recovered else None
    os.makedirs(run_dir, mode=0o700, exist_ok=True)
    for name in (STATE, STOP):
        try:
            os.remove(os.path.join(run_dir, name))
        except OSError:
            pass
    with open(os.path.join(run_dir, files.RESERVE), "wb") as handle:
        handle.write(b"\0" * RESERVE_BYTES)
    touch(os.path.join(run_dir, HEARTBEAT))
    first = os.fork()
    if first == 0:  # the child starts a session of its own and forks the supervisor, then leaves
        try:
            os.setsid()
            if os.fork() == 0:
                _become_daemon(run_dir)
                code = 0
                try:
                    supervise(request)
                except BaseException:  # noqa: B036 (the supervisor must record any ending)
                    code = 1
                os._exit(code)
        finally:
            os._exit(0)
    os.waitpid(first, 0)
    if lock.fd is not None:
        os.close(lock.fd)  # the supervisor holds its own copy of the lock
    deadline = time.time() + 20
    while time.time() < deadline:
        state = read_state(run_dir)
        if state is not None:
            return LaunchAnswer(pid=state.pid, run_dir=run_dir, state=state, recovered_clocks=restored)
        time.sleep(0.05)
    raise RuntimeError("the capture supervisor did not start (see {})".format(os.path.join(run_dir, LOG)))


def _become_daemon(run_dir):
    devnull = os.open(os.devnull, os.O_RDWR)
    log = os.open(os.path.join(run_dir, LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(devnull)
    os.close(log)
    sys.stdout = os.fdopen(1, "w", 1)
    sys.stderr = os.fdopen(2, "w", 1)
    # The working directory stays the launcher's (the login's home over SSH), as for the app before: with
    # "/" as its working directory nsys 2022.4 stalled in "Generating" in 5 of 10 short captures (0 of 8
    # without).
    # No signal is ignored here: nsys and the app would inherit the ignoring (the watchdog's SIGINT to nsys
    # must work). In a session of its own, without a terminal, nothing sends the supervisor SIGHUP or SIGINT.


def _json_or_none(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def touch(path):
    with open(path, "a"):
        os.utime(path, None)


class Supervisor(object):
    def __init__(self, request):
        self.request = request
        self.run_dir = request.run_dir
        self.started = time.time()
        self.state = CaptureState(stage="starting", pid=os.getpid(), started_at=self.started,
                                  heartbeat_timeout_s=self.heartbeat_timeout)

    # above this much free space, the scratch folder is not even measured
    roomy = 8 * 2**30

    @property
    def heartbeat_timeout(self):
        return self.request.settings.heartbeat_timeout_s or DEFAULT_HEARTBEAT_TIMEOUT_S

    def save(self, **changes):
        """The state with changes (CaptureState's fields) written whole to the state file."""
        self.state.set(updated_at=time.time(), elapsed_s=round(time.time() - self.started, 3), **changes)
        path = os.path.join(self.run_dir, STATE)
        try:
            write_json_atomic(path, self.state.to_wire())
        except (OSError, IOError) as exc:
            if exc.errno != errno.ENOSPC:
                raise
            files.release_reserve(self.run_dir)  # the disk is full: give back the reserve to record this
            self.state.disk_full = True
            try:
                write_json_atomic(path, self.state.to_wire())
            except (OSError, IOError) as again:
                # what filled the disk took the reserve too: a progress note waits for the next save (the
                # capture is ended for the full disk meanwhile), but the capture's end is never lost unsaid
                if again.errno != errno.ENOSPC or self.state.stage == ENDED:
                    raise

    def on_event(self, event, **fields):
        if event == "heartbeat":
            self.save(capture_elapsed_s=fields.get("elapsed_s"), app_s=fields.get("app_s"))

    def should_stop(self):
        """(an EarlyEnd's kind, its words) when the capture should end now, else None."""
        stop_file = os.path.join(self.run_dir, STOP)
        if os.path.exists(stop_file):
            with open(stop_file) as handle:
                asked = HostLine.from_wire(_json_or_none(handle.read()))
            return asked.stop or "interrupted", asked.reason or "the host asked to end the capture"
        try:
            silent = time.time() - os.path.getmtime(os.path.join(self.run_dir, HEARTBEAT))
        except OSError:
            silent = 0
        if silent > self.heartbeat_timeout:
            self.state.host_gone = True
            return "host_gone", "no heartbeat from the host for {:.0f} s".format(silent)
        free = files.free_bytes(self.run_dir)
        # nsys turns its scratch into the report when the capture ends, and needs about as much room again
        scratch = watchdog.folder_bytes(os.path.join(self.run_dir, "scratch")) if free < self.roomy else 0
        if free < LOW_DISK_BYTES + scratch:
            self.state.disk_low = DiskLow(free=free, scratch=scratch)
            return "disk_low", ("the disk is nearly full ({} MB free in {}, nsys needs about {} MB to write its "
                                "report)").format(free // 2**20, self.run_dir, (scratch + LOW_DISK_BYTES) // 2**20)
        return None


def capture_with_retries(request, sup):
    """nsys 2022.4 now and then stalls for good while writing its report, fails at once before starting the
    app, or ends otherwise (a signal no one here sent), leaving no report; a second capture usually works. The retries
    happen here, under the board's lock, so that no other run slips in between; never after an early end (the
    user, the host or the disk asked for an end, not for more), nor when there is no nsys to run."""
    attempts = []  # type: list
    while True:
        sup.save(stage="capturing", attempt=len(attempts) + 1)
        result = capture_mod.capture(request, sup.on_event, sup.should_stop)
        # an end asked for after nsys ended (a stop file, a lost host, a full disk) is no reason for more
        if not worth_again(result) or sup.should_stop() or len(attempts) >= request.settings.retries:
            result.previous_attempts = attempts
            return result
        attempts.append(result)
        time.sleep(2)  # let the failed attempt's nsys processes go


def worth_again(result):
    """Whether a capture is made again: nsys ran and left no report by itself (not for an app nsys could not find,
    not after an early end)."""
    return result.with_nsys and not result.reports and not result.program_not_found and result.ended_early is None


def supervise(request):
    sup = Supervisor(request)
    result = None
    sampling = sampler.BoardSampler(sup.run_dir, env=dict(os.environ, **{capture_mod.RUN_MARK: sup.run_dir}))
    locked = None
    try:
        lock_clocks = request.settings.lock_clocks
        if lock_clocks:  # restored below on every way out of the capture
            sup.save(stage="locking clocks")
            locked = clocks.lock(request.work_dir, lock_clocks.nvpmodel, os.getpid())
        sampling.start()
        try:
            result = capture_with_retries(request, sup)
        finally:
            samples = sampling.stop()
            restored = clocks.restore(request.work_dir) if locked else None
            if locked:
                sup.save(clocks=ClocksUsed.from_wire({"locked": locked, "restore": restored}, strict=True))
        result.settings = request.settings  # what the board ran with, as it read it
        result.board_samples = BoardSamples.from_wire(samples, strict=True) if samples else None
        result.board_state_after = facts.board_state_now()  # the board after the run: one round trip less
        result.clocks = sup.state.clocks
        importer = request.importer
        if ".qdstrm" in result.reports and not (set(result.reports) & {".nsys-rep", ".qdrep"}) and importer:
            sup.save(stage="importing")
            result.import_ = ImportOutcome.from_wire(files.import_qdstrm(importer, result.reports[".qdstrm"]),
                                                     strict=True)
            result.reports = capture_mod.find_reports(request.report_base)
        shutil.rmtree(os.path.join(sup.run_dir, "scratch"), ignore_errors=True)  # nsys's, not needed now
        files.release_reserve(sup.run_dir)
        result.sizes = files.sizes(sup.run_dir)  # the run's files as they stay: the pull asks no more
        sup.save(stage=ENDED, result=result, free_bytes=files.free_bytes(sup.run_dir))
    except BaseException as exc:  # noqa: B036 (recorded for the host, then re-raised)
        shutil.rmtree(os.path.join(sup.run_dir, "scratch"), ignore_errors=True)
        files.release_reserve(sup.run_dir)
        sup.save(stage=ENDED, result=result,
                 error="{}: {}".format(type(exc).__name__, exc),
                 trace=traceback.format_exc()[-4000:])
        raise


CALM_STAGES = (None, "starting", "locking clocks", "capturing")


def follow_look_s(state, planned_s, now):
    """The follower's next look: CALM_FOLLOW_LOOK_S while the app runs (by the state's app_s, carried on to now)
    and is more than a second from its planned end (planned_s, None: not known), FOLLOW_LOOK_S from then on and
    once the supervisor is past the capture."""
    if state is None:
        return CALM_FOLLOW_LOOK_S
    if state.stage not in CALM_STAGES:
        return FOLLOW_LOOK_S
    app_s = state.app_s
    if planned_s is None or app_s is None:
        return CALM_FOLLOW_LOOK_S
    app_now = float(app_s) + max(0.0, now - float(state.updated_at or now))
    return FOLLOW_LOOK_S if app_now >= float(planned_s) - 1.0 else CALM_FOLLOW_LOOK_S


def attach(request, emit, stdin_fd=0):
    """Keep the host company: renew the heartbeat on every 'beat' line, turn 'stop' into a stop
    request, report progress every second, answer with the final state once the capture ended.
    Returns None when the host went away (end of input, or silence past the heartbeat timeout)."""
    run_dir = request.run_dir
    heartbeat = os.path.join(run_dir, HEARTBEAT)
    timeout_s = request.heartbeat_timeout_s or DEFAULT_HEARTBEAT_TIMEOUT_S
    last_input, last_report = time.time(), 0.0
    pending = b""
    stamp = state = None  # the state is read again only once the supervisor wrote a new one
    planned_s = request.planned_s
    while True:
        ready, _, _ = select.select([stdin_fd], [], [], follow_look_s(state, planned_s, time.time()))
        now = time.time()
        if ready:
            data = os.read(stdin_fd, 4096)
            if not data:
                return None
            last_input = now
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                said = HostLine.from_wire(_json_or_none(line.decode("utf-8", "replace")))
                if said.beat:
                    touch(heartbeat)
                elif said.stop:  # whole or not at all: the supervisor may read it at any moment
                    write_json_atomic(os.path.join(run_dir, STOP), said.to_wire())
        seen = state_stamp(run_dir)
        if seen is None or seen != stamp:
            stamp, state = seen, read_state(run_dir)
        if state is None:
            raise RuntimeError("no capture in {}".format(run_dir))
        if state.stage == ENDED:
            return state
        if not pid_alive(state.pid or 0):
            state = read_state(run_dir) or state
            if state.stage != ENDED:
                raise RuntimeError("the capture supervisor (pid {}) died; see {}".format(
                    state.pid, os.path.join(run_dir, LOG)))
            return state
        if now - last_report >= 1.0:
            progress = CaptureProgress(stage=state.stage, elapsed_s=state.capture_elapsed_s or 0.0, app_s=state.app_s,
                                       attempt=state.attempt or 1)
            emit("progress", **progress.to_wire(version=False))
            last_report = now
        if now - last_input > timeout_s:
            return None


def status(request):
    """Where a run stands on the board: its state (None when unknown) and whether its supervisor lives; with a work
    dir, whether the board's capture lock is held (whoever's run, and read by any login)."""
    run_dir = request.run_dir
    state = read_state(run_dir)
    alive = state is not None and state.stage != ENDED and pid_alive(state.pid or 0)
    lock = board_lock.lock_state(request.work_dir) if request.work_dir else None
    return StatusAnswer(present=os.path.isdir(run_dir), state=state, supervisor_alive=alive, capture_lock=lock)
