"""The capture's decisions, apart from the processes they are about: when the app is stopped and when it is
over, when nsys counts as stalled or hung and is stopped, when the heartbeat goes out, what a request to end
early does, and how long what nsys leaves behind may stay.

Nothing here reads the clock, /proc or a file, or sends a signal. The capture (capture.py) observes, hands
what it saw and the time to ``CaptureMachine.decide`` and carries out the actions it gets back, then tells
``acted`` when they are done; the watchdog (watchdog.py) carries out each ``Stop`` through an ``Escalation``
the same way. Times are time.time() seconds; observations and actions are plain values.
"""
import collections
import signal

# Seconds between SIGTERMs while the app has not ended after the planned stop.
RESEND_TERM_S = 5.0
# Seconds nsys may linger after printing "Generated:" before it counts as hung; and that nsys's daemon and
# helpers get after nsys ended, in case they are still finishing its report.
AFTER_REPORT_GRACE_S = 20.0
# Seconds they get when the watchdog had to stop nsys and no report was written: nothing is left for them to
# finish (a stopped nsys's daemon spins for good), and a capture made again should not wait on them. (In the
# suite, every stall that left no report waited 20 s for such a daemon before it was made again.)
ORPHAN_GRACE_S = 2.0
# Seconds between escalation steps (SIGINT -> SIGTERM -> SIGKILL).
SIGNAL_STEP_S = 10.0
# Seconds a session is given to go after its SIGKILL, before what is left of it is reported.
KILL_WAIT_S = 5.0
# Seconds in which the scratch folder must grow by STALL_GROWTH_BYTES, once the app is gone and before
# "Generated:", for nsys to count as still writing its report. (A stalled nsys 2022.4 sits in "Generating"
# with a 114 kB raw file; a working one writes megabytes within a second, a 2 s capture of a sleep loop
# 6 MB. One stuck on a disk that had filled up appended 4 kB every second or two for over a minute:
# while any change counted as writing, it was waited for until the planned end and 20 s more.)
STALL_S = 15.0
STALL_GROWTH_BYTES = 1024 * 1024
# Seconds between the capture's looks (at the log, the app's session, the host's wishes, the disk): CALM_LOOK_S
# while the app runs and nothing is due sooner, LOOK_S around the app's start and end. A look every 0.1 s through
# a whole capture cost the board 2 % of a core.
LOOK_S = 0.1
CALM_LOOK_S = 0.5

# What the capture sees at a tick while nsys runs. app: the app's PID, which is its session id (None until
# the launch wrapper wrote it); app_started_at: when /proc says it started (measured when it first appears);
# app_alive: whether its session has a live process (measured while it is not known to be over, else None);
# stop_reason: (kind, words): why the host, its silence or the disk asks for an early end (an EarlyEnd's kind);
# generated_at: when nsys printed "Generated:" (None before); scratch_bytes: the size of nsys's scratch folder
# (measured when watches_scratch says so, else None).
Tick = collections.namedtuple("Tick", "app app_started_at app_alive stop_reason generated_at scratch_bytes")
# What it sees once nsys has ended: when it ended, the app's PID and whether its session lives (as in Tick),
# whether a report was written, nsys's PID (its helpers' session id), the PIDs of its 'nsys --start-agent'
# daemons, and the watchdog's signals so far (dicts with a "target").
NsysEnded = collections.namedtuple("NsysEnded", "ended_at app app_alive report_written nsys_pid daemons signals")

# Actions. Emit: an event for the supervisor (emit(event, **fields)). SignalApp: one signal to the app's
# session, the planned stop (not a watchdog step, not recorded). Stop: an escalation carried out at once,
# each signal recorded: target is "nsys" (sid None: nsys's process group, waited on as the child it is) or a
# session's label; signals go out in turn, each followed by its wait, not before not_before (None: at once).
Emit = collections.namedtuple("Emit", "event fields")
SignalApp = collections.namedtuple("SignalApp", "sid sig")
Stop = collections.namedtuple("Stop", "target sid reason signals waits not_before kind")
# Why the watchdog stops nsys: a WatchdogStep's kind (messages.py) and its words.
NSYS_STOPS = {
    "stalled": "nsys stalled while generating the report",
    "hung_after_report": "nsys hung after writing the report",
    "unfinished": "nsys did not finish after the app was gone",
    "interrupted": "agent interrupted",
}
# What an Escalation asks for: a signal to its target, or a wait until a time (or until the target is gone).
Send = collections.namedtuple("Send", "sig")
Wait = collections.namedtuple("Wait", "until")


def stop_nsys(kind, first_signal=signal.SIGINT):
    """SIGINT lets nsys stop collecting and write the report; TERM and KILL follow if it lingers. kind: one of
    NSYS_STOPS."""
    sequence = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
    signals = sequence[sequence.index(first_signal):]
    return Stop("nsys", None, NSYS_STOPS[kind], signals, (SIGNAL_STEP_S,) * len(signals), None, kind)


def stop_session(label, sid, not_before):
    """A session still there at not_before is terminated, then killed."""
    return Stop(label, sid, "{} outlived the capture".format(label), (signal.SIGTERM, signal.SIGKILL),
                (SIGNAL_STEP_S, KILL_WAIT_S), not_before, "outlived")


def leftover_grace_s(actions, report_written):
    """How long nsys's daemon and helpers may outlive nsys: they may still be finishing its report when the
    CLI ends, unless the watchdog had to stop nsys and there is no report to finish."""
    stopped_nsys = any(action.target == "nsys" for action in actions)
    return ORPHAN_GRACE_S if stopped_nsys and not report_written else AFTER_REPORT_GRACE_S


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


class Escalation(object):
    """A Stop carried out: while its target lives and not_before is ahead, wait; then each signal in turn,
    each followed by its wait (counted from the first decision after the signal went out), until the target
    is gone or the last wait is over. ``left`` then holds the PIDs still alive (None until then)."""

    def __init__(self, stop):
        self.stop = stop
        self.sent = 0
        self.until = stop.not_before
        self.timing = False
        self.left = None

    def decide(self, now, alive):
        """alive: the target's live PIDs. Returns Send, Wait, or None once it is over."""
        if self.timing:
            self.until = now + self.stop.waits[self.sent - 1]
            self.timing = False
        if alive and self.until is not None and now < self.until:
            return Wait(self.until)
        if not alive or self.sent == len(self.stop.signals):
            self.left = list(alive)
            return None
        self.sent += 1
        self.timing = True
        return Send(self.stop.signals[self.sent - 1])


class CaptureMachine(object):
    """The capture's state and rules. The app is stopped (SIGTERM to its session, again every RESEND_TERM_S)
    delay + duration after it started, or at once when an early end is asked for; past delay + duration +
    grace the watchdog stops the app's session, and nsys AFTER_REPORT_GRACE_S after that; nsys is stopped
    when it stalls writing its report once the app is gone, or lingers after writing it; once nsys has
    ended, what is left of the app, nsys's helpers and its daemons is stopped after their grace."""

    def __init__(self, started, delay_s, duration_s, grace_s, heartbeat_s=1.0):
        self.started = started
        self.budget = delay_s + duration_s + grace_s
        self.deadline = started + self.budget
        self.capture_s = delay_s + duration_s
        self.heartbeat_s = heartbeat_s
        self.app_started = self.app_stopped = self.app_gone = None
        self.ended_early = None
        self.last_term = self.last_beat = None
        self.terms_sent = 0
        self.progress = None
        self.stalled = False
        self.app_stop_asked = False  # past the deadline: the app's session stopped, nsys's own deadline set
        self.nsys_deadline = None

    @classmethod
    def from_request(cls, request, started):
        settings = request.settings
        return cls(started, settings.delay_s, settings.duration_s, settings.grace_s, settings.heartbeat_s)

    def watches_scratch(self, app_alive, generated_at):
        """Whether a tick needs the scratch folder's size: once the app is gone (seen so now or before),
        until nsys printed "Generated:"."""
        return (self.app_gone is not None or app_alive is False) and generated_at is None

    def decide(self, now, seen):
        """The actions for what was seen (a Tick or NsysEnded) at now, in the order to carry them out."""
        if isinstance(seen, NsysEnded):
            return self._leftovers(now, seen)
        return self._tick(now, seen)

    def next_look_s(self, now):
        """Seconds until the next look: CALM_LOOK_S while the app runs and its planned stop is further off, else
        LOOK_S (the app about to start or stop, or gone and nsys writing its report)."""
        running = self.app_started is not None and self.app_gone is None
        if not running or self.app_stopped is not None or self.ended_early is not None:
            return LOOK_S
        return max(LOOK_S, min(CALM_LOOK_S, self.app_started + self.capture_s - now))

    def acted(self, now):
        """The last decision's actions were carried out by now (stopping the app's session may take 15 s)."""
        if self.app_stop_asked and self.nsys_deadline is None:
            self.nsys_deadline = now + AFTER_REPORT_GRACE_S

    def _tick(self, now, seen):
        actions = []  # type: list
        app = seen.app
        if app and self.app_started is None:
            self.app_started = seen.app_started_at if seen.app_started_at is not None else now
        if app and self.app_gone is None and seen.app_alive is False:
            self.app_gone = now
        if self.ended_early is None and seen.stop_reason:
            # seconds of capture: from the app's start, as the user counts them
            since = self.app_started if self.app_started is not None else self.started
            kind, reason = seen.stop_reason
            self.ended_early = {"kind": kind, "reason": reason, "after_s": round(now - since, 3)}
        planned_stop = self.app_started is not None and self.app_stopped is None and (
            now - self.app_started >= self.capture_s or self.ended_early is not None)
        # a SIGTERM that arrives while nsys's injection holds the app's signals can be lost: resend it
        resend = self.app_stopped is not None and now - self.last_term >= RESEND_TERM_S
        if self.app_gone is None and (planned_stop or resend):
            actions.append(SignalApp(app, signal.SIGTERM))
            if self.app_stopped is None:
                self.app_stopped = now
            self.last_term = now
            self.terms_sent += 1
        if self.last_beat is None or now - self.last_beat >= self.heartbeat_s:
            app_s = None if self.app_started is None else round(now - self.app_started, 2)  # the app's seconds
            actions.append(Emit("heartbeat", {"elapsed_s": round(now - self.started, 2), "budget_s": self.budget,
                                              "app_s": app_s}))
            self.last_beat = now
        if self.app_gone is not None and seen.generated_at is None:
            self.progress = self.progress or WriteProgress(now, seen.scratch_bytes)
            if self.progress.stalled(now, seen.scratch_bytes):
                self.stalled = True
                actions.append(stop_nsys("stalled"))
        if seen.generated_at is not None and now - seen.generated_at > AFTER_REPORT_GRACE_S:
            actions.append(stop_nsys("hung_after_report", signal.SIGTERM))
        elif now > self.deadline and not self.app_stop_asked:
            # nsys writes its report once the app is gone: stop the app first, nsys only if need be
            if app:
                actions.append(stop_session("app", app, now))
            self.app_stop_asked = True
        elif self.nsys_deadline is not None and now > self.nsys_deadline:
            actions.append(stop_nsys("unfinished"))
        return actions

    def _leftovers(self, now, seen):
        app_ended = self.app_gone is not None or not seen.app or not seen.app_alive
        # an app still running when nsys ended may finish by the planned end; once it is gone nothing is left
        # to capture, and what nsys leaves (its daemon, orphaned by a stopped nsys, spinning a core) gets its
        # grace from now, not from a planned end that a long duration_s puts minutes away (a short one when
        # nsys had to be stopped and wrote no report)
        until = seen.ended_at if app_ended else max(self.deadline, seen.ended_at)
        nsys_until = max(until, now + leftover_grace_s(seen.signals, seen.report_written))
        sessions = [("app", seen.app, until), ("nsys helpers", seen.nsys_pid, nsys_until)]
        sessions += [("nsys daemon", pid, nsys_until) for pid in seen.daemons]
        return [stop_session(label, sid, at) for label, sid, at in sessions if sid]

    def summary(self):
        """The capture's record of the app's end, the early end and the stall."""
        both = self.app_started is not None
        return {
            "app_stopped_after_s": round(self.app_stopped - self.app_started, 3)
            if both and self.app_stopped is not None else None,
            "stalled": self.stalled,
            "stop_signals": self.terms_sent,
            "app_gone_after_s": round(self.app_gone - self.app_started, 3)
            if both and self.app_gone is not None else None,
            "ended_early": self.ended_early,
        }
