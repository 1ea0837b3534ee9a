"""The capture's decisions (remote_agent/capture_machine.py) driven with a fake clock: plain times in, plain
actions out, no process, no /proc, no signal. Ticks are 1/8 s apart so that every time below is exact."""
import signal

import pytest

from remote_agent.capture_machine import (
    AFTER_REPORT_GRACE_S,
    CALM_LOOK_S,
    KILL_WAIT_S,
    LOOK_S,
    NSYS_STOPS,
    ORPHAN_GRACE_S,
    RESEND_TERM_S,
    SIGNAL_STEP_S,
    STALL_GROWTH_BYTES,
    STALL_S,
    CaptureMachine,
    Emit,
    Escalation,
    NsysEnded,
    SignalApp,
    Stop,
    Tick,
    Wait,
)
from remote_agent.daemon import CALM_FOLLOW_LOOK_S, FOLLOW_LOOK_S, follow_look_s, worth_again
from remote_agent.messages import CaptureResult, EarlyEnd, WatchdogStep

T0 = 1000.0
TICK = 0.125
APP = 4242
MB = STALL_GROWTH_BYTES
INT, TERM, KILL = signal.SIGINT, signal.SIGTERM, signal.SIGKILL
NSYS_STEPS = (SIGNAL_STEP_S, SIGNAL_STEP_S, SIGNAL_STEP_S)


class Board:
    """What the capture would observe: the app's PID shows up at seen_at, /proc saying it started at
    started_at; its session ends at ends_at, or at its n-th SIGTERM (ends_on_term), or when the watchdog
    stops it; the host asks for an end at stop_at; nsys prints "Generated:" at generated_at; the scratch
    folder holds scratch(t) bytes. Looks are taken only when the machine needs them, as capture.observe does."""

    def __init__(self, seen_at=T0 + 0.625, started_at=T0 + 0.5, ends_at=None, ends_on_term=None, stop_at=None,
                 generated_at=None, scratch=lambda t: 0, app_stop_s=0.0):
        self.seen_at, self.started_at, self.ends_at = seen_at, started_at, ends_at
        self.ends_on_term, self.terms = ends_on_term, 0
        self.stop_at, self.generated_at, self.scratch = stop_at, generated_at, scratch
        self.app_stop_s = app_stop_s  # how long the watchdog's stop of the app's session takes

    def look(self, machine, now):
        app = APP if now >= self.seen_at else None
        started_at = self.started_at if app and machine.app_started is None else None
        alive = (self.ends_at is None or now < self.ends_at) if app and machine.app_gone is None else None
        reason = ("interrupted", "the host asked") if self.stop_at is not None and now >= self.stop_at \
            and machine.ended_early is None else None
        generated = self.generated_at if self.generated_at is not None and now >= self.generated_at else None
        written = self.scratch(now) if machine.watches_scratch(alive, generated) else None
        return Tick(app, started_at, alive, reason, generated, written)

    def act(self, now, action):
        """Carries out an action on the fake board; returns the seconds it took."""
        if isinstance(action, SignalApp):
            self.terms += 1
            if self.ends_on_term is not None and self.terms >= self.ends_on_term and self.ends_at is None:
                self.ends_at = now + TICK
        if isinstance(action, Stop) and action.target == "app":
            self.ends_at = min(self.ends_at or now, now)
            return self.app_stop_s
        return 0.0


def run(machine, board, until=T0 + 120):
    """Ticks until the machine first stops nsys (or until); returns [(time, action)]."""
    log, now = [], T0
    while now <= until:
        for action in machine.decide(now, board.look(machine, now)):
            log.append((now, action))
            now += board.act(now, action)
            if isinstance(action, Stop) and action.target == "nsys":
                return log
        machine.acted(now)
        now += TICK
    return log


def machine(delay_s=0.0, duration_s=3.0, grace_s=10.0, heartbeat_s=1.0):
    return CaptureMachine(T0, delay_s, duration_s, grace_s, heartbeat_s)


def of(log, kind):
    return [(t, a) for t, a in log if isinstance(a, kind)]


def nsys_stop(kind, first=INT):
    signals = (INT, TERM, KILL)[(INT, TERM, KILL).index(first):]
    return Stop("nsys", None, NSYS_STOPS[kind], signals, NSYS_STEPS[:len(signals)], None, kind)


def test_constants_are_the_measured_ones():
    assert (STALL_S, STALL_GROWTH_BYTES) == (15.0, 1024 * 1024)
    assert (AFTER_REPORT_GRACE_S, ORPHAN_GRACE_S, SIGNAL_STEP_S, KILL_WAIT_S, RESEND_TERM_S) == (20, 2, 10, 5, 5)


@pytest.mark.parametrize("delay_s, duration_s, term_at", [(0.0, 3.0, 3.5), (2.0, 3.0, 5.5), (0.0, 0.25, 0.75)])
def test_the_app_is_stopped_delay_plus_duration_after_proc_says_it_started(delay_s, duration_s, term_at):
    m = machine(delay_s, duration_s)
    log = run(m, Board(ends_on_term=1, scratch=lambda t: int(t * 8 * MB)), until=T0 + 9)
    assert [(t - T0, a) for t, a in of(log, SignalApp)] == [(term_at, SignalApp(APP, TERM))]
    assert m.app_started == T0 + 0.5  # from /proc, not the poll that saw it at 0.625
    summary = m.summary()
    assert summary["app_stopped_after_s"] == term_at - 0.5
    assert summary["app_gone_after_s"] == term_at - 0.5 + TICK
    assert (summary["stop_signals"], summary["stalled"], summary["ended_early"]) == (1, False, None)
    assert not of(log, Stop)


def test_the_sigterm_is_sent_again_every_5_s_then_the_deadline_stops_the_app_and_nsys_gets_20_s_after_that():
    m = machine(duration_s=3.0, grace_s=10.0)  # deadline T0 + 13
    board = Board(scratch=lambda t: int(t * 8 * MB), app_stop_s=12.0)  # the app ignores SIGTERM
    log = run(m, board)
    assert [t - T0 for t, _ in of(log, SignalApp)] == [3.5, 3.5 + RESEND_TERM_S]
    stops = [(t - T0, a) for t, a in of(log, Stop)]
    app_stop = Stop("app", APP, "app outlived the capture", (TERM, KILL), (SIGNAL_STEP_S, KILL_WAIT_S), T0 + 13.125,
                    "outlived")
    # nsys's 20 s count from when stopping the app was over (13.125 + 12 s), not from the deadline
    assert stops == [(13.125, app_stop), (45.25, nsys_stop("unfinished"))]
    assert m.nsys_deadline == T0 + 13.125 + 12.0 + AFTER_REPORT_GRACE_S
    assert m.summary()["stop_signals"] == 2 and not m.stalled


# the app ends by itself at 2 s, well before its planned end; the scratch folder after that, as a function of time
@pytest.mark.parametrize("scratch, stalled_at", [
    (lambda t: 114_000, 17.125),                                          # not a byte more
    (lambda t: 3_400_000 + int((t - T0) * 32_000), 17.125),               # a full disk's trickle (< 1 MB in 15 s)
    (lambda t: 114_000 + (MB - 1 if t >= T0 + 10 else 0), 17.125),        # a byte short of a megabyte
    (lambda t: 114_000 + (MB if t >= T0 + 10 else 0), 25.125),            # a megabyte at 10 s: 15 s from there
    (lambda t: 114_000 + (MB if t >= T0 + 10 else 0) + (MB if t >= T0 + 24 else 0), 39.125),
    (lambda t: 5 * MB if t < T0 + 5 else 100_000 + (MB if t >= T0 + 8 else 0), 23.125),  # removed files, then 1 MB
])
def test_nsys_counts_as_stalled_when_its_scratch_grows_by_less_than_1_mb_in_15_s_after_the_app(scratch, stalled_at):
    m = machine(duration_s=30.0, grace_s=30.0)
    log = run(m, Board(ends_at=T0 + 2.0, scratch=scratch))
    assert m.app_gone == T0 + 2.0
    assert [(t - T0, a) for t, a in of(log, Stop)] == [
        (stalled_at, nsys_stop("stalled"))]
    assert m.stalled and not of(log, SignalApp)
    assert m.summary()["app_gone_after_s"] == 1.5 and m.summary()["app_stopped_after_s"] is None


def test_the_scratch_folder_is_measured_only_from_the_app_s_end_until_generated():
    m = machine(duration_s=30.0, grace_s=30.0)
    looks = []
    board = Board(ends_at=T0 + 2.0, generated_at=T0 + 4.0, scratch=lambda t: looks.append(t) or 0)
    run(m, board, until=T0 + 10)
    assert looks == [T0 + 2.0 + k * TICK for k in range(16)]


def test_nsys_that_lingers_20_s_after_generated_is_terminated():
    m = machine(duration_s=30.0, grace_s=30.0)
    log = run(m, Board(ends_at=T0 + 2.0, generated_at=T0 + 4.0))
    assert [(t - T0, a) for t, a in of(log, Stop)] == [(24.125, nsys_stop("hung_after_report", TERM))]
    assert not m.stalled


def test_a_stall_and_the_deadline_in_the_same_tick_stop_nsys_first_then_the_app():
    m = machine(duration_s=5.0, grace_s=12.0)  # deadline T0 + 17; the stall is seen at 17.125 too
    actions = []
    now = T0
    board = Board(ends_at=T0 + 2.0)
    while not actions:
        actions = [a for a in m.decide(now, board.look(m, now)) if isinstance(a, Stop)]
        now += TICK
    assert now - TICK == T0 + 17.125
    assert actions == [nsys_stop("stalled"),
                       Stop("app", APP, "app outlived the capture", (TERM, KILL), (10.0, 5.0), T0 + 17.125, "outlived")]
    assert m.nsys_deadline is None
    m.acted(T0 + 18.0)
    assert m.nsys_deadline == T0 + 38.0


@pytest.mark.parametrize("stop_at, term_at, after_s", [
    (2.0, 2.0, 1.5),     # while the app runs: stopped at once; counted from the app's start
    (0.25, 0.625, 0.25),  # before the app showed up: stopped as soon as it does; counted from the capture's start
])
def test_a_host_stop_request_stops_the_app_as_at_the_planned_end(stop_at, term_at, after_s):
    m = machine(duration_s=30.0, grace_s=30.0)
    log = run(m, Board(stop_at=T0 + stop_at, ends_on_term=1, scratch=lambda t: int(t * 8 * MB)), until=T0 + 10)
    assert [(t - T0, a) for t, a in of(log, SignalApp)] == [(term_at, SignalApp(APP, TERM))]
    assert m.ended_early == {"kind": "interrupted", "reason": "the host asked", "after_s": after_s}
    assert not of(log, Stop)


def test_only_the_first_reason_to_end_early_counts():
    m = machine()
    m.decide(T0, Tick(APP, T0, True, ("host_gone", "no heartbeat from the host for 31 s"), None, None))
    m.decide(T0 + 1, Tick(APP, None, True, ("disk_low", "the disk is nearly full"), None, None))
    assert m.ended_early == {"kind": "host_gone", "reason": "no heartbeat from the host for 31 s", "after_s": 0.0}
    assert m.terms_sent == 1


@pytest.mark.parametrize("heartbeat_s, expected", [(1.0, [0, 1, 2, 3]), (0.25, [k / 4 for k in range(13)]),
                                                   (2.5, [0, 2.5])])
def test_the_heartbeat_goes_out_every_heartbeat_s(heartbeat_s, expected):
    m = machine(duration_s=30.0, grace_s=30.0, heartbeat_s=heartbeat_s)
    log = run(m, Board(), until=T0 + 3.0)
    beats = of(log, Emit)
    assert [t - T0 for t, _ in beats] == expected
    # app_s: the app's seconds since /proc says it started (0.5 s in), once it is seen (0.625 s in)
    assert [a.fields for _, a in beats] == [{"elapsed_s": t, "budget_s": 60.0,
                                             "app_s": None if t < 0.625 else t - 0.5} for t in expected]


def ended(signals=(), report_written=True, app=APP, app_alive=None, daemons=(5151,), ended_at=T0 + 4.0):
    return NsysEnded(ended_at, app, app_alive, report_written, 777, list(daemons), list(signals))


STALL_SIGINT = WatchdogStep(kind="stalled", reason=NSYS_STOPS["stalled"], signal="SIGINT", target="nsys", at=0)
APP_TERM = WatchdogStep(kind="outlived", reason="app outlived the capture", signal="SIGTERM", target="app", at=0)


@pytest.mark.parametrize("case, seen, app_until, nsys_until", [
    ("stalled, no report", ended([STALL_SIGINT], report_written=False), 4.0, 5.0 + ORPHAN_GRACE_S),
    ("stalled, report written", ended([STALL_SIGINT]), 4.0, 5.0 + AFTER_REPORT_GRACE_S),
    ("clean exit, daemon lingers", ended(), 4.0, 25.0),
    ("only the app was stopped", ended([APP_TERM], report_written=False), 4.0, 25.0),
    ("app still running: it may finish by the deadline", ended(app_alive=True), 13.0, 25.0),
    ("app still running, short grace", ended([STALL_SIGINT], report_written=False, app_alive=True), 13.0, 13.0),
])
def test_what_nsys_leaves_gets_its_grace_from_its_end(case, seen, app_until, nsys_until):
    m = machine()  # deadline T0 + 13
    if seen.app_alive is None:
        m.app_gone = T0 + 3.0
    stops = m.decide(T0 + 5.0, seen)  # nsys ended at 4.0; the grace counts from the decision at 5.0
    assert [(s.target, s.sid, s.not_before - T0) for s in stops] == [
        ("app", APP, app_until), ("nsys helpers", 777, nsys_until), ("nsys daemon", 5151, nsys_until)], case
    assert all(s.signals == (TERM, KILL) and s.waits == (SIGNAL_STEP_S, KILL_WAIT_S) for s in stops)
    assert stops[-1].reason == "nsys daemon outlived the capture"


def test_without_an_app_or_daemons_only_nsys_helpers_are_left_to_watch():
    stops = machine().decide(T0 + 1.0, ended(app=None, daemons=()))
    assert [(s.target, s.sid, s.not_before) for s in stops] == [("nsys helpers", 777, T0 + 1.0 + 20.0)]


def drive(stop, gone_at, start=T0, step=0.25):
    """Runs an Escalation against a target that is gone at gone_at (None: never): [(time, signal)], left."""
    steps, sent, now = Escalation(stop), [], start
    while True:
        action = steps.decide(now, [] if gone_at is not None and now >= gone_at else [APP])
        if action is None:
            return sent, steps.left, now
        if isinstance(action, Wait):
            assert action.until > now
            now += step
        else:
            sent.append((now - start, action.sig))


@pytest.mark.parametrize("gone_at, sent, left, over_at", [
    (1.0, [], [], 1.0),                                  # the daemon ended within its grace: nothing sent
    (None, [(2.0, TERM), (12.0, KILL)], [APP], 17.0),    # it ignores both: reported as left
    (2.5, [(2.0, TERM)], [], 2.5),                       # SIGTERM ends it
    (13.0, [(2.0, TERM), (12.0, KILL)], [], 13.0),       # SIGKILL does
])
def test_a_lingering_daemon_is_terminated_at_the_end_of_its_grace_then_killed(gone_at, sent, left, over_at):
    stop = machine().decide(T0, ended([STALL_SIGINT], report_written=False, app=None, ended_at=T0))[-1]
    assert stop.target == "nsys daemon" and stop.not_before == T0 + ORPHAN_GRACE_S
    got_sent, got_left, end = drive(stop, None if gone_at is None else T0 + gone_at)
    assert (got_sent, got_left, end - T0) == (sent, left, over_at)


def test_a_clean_nsys_exit_leaves_a_lingering_daemon_the_full_grace():
    stop = machine().decide(T0, ended(app=None, ended_at=T0))[-1]
    assert drive(stop, None)[:2] == ([(20.0, TERM), (30.0, KILL)], [APP])


@pytest.mark.parametrize("first, gone_at, sent", [
    (INT, 0.5, [(0.0, INT)]),                                     # SIGINT: nsys writes what it has and ends
    (INT, None, [(0.0, INT), (10.0, TERM), (20.0, KILL)]),
    (TERM, 12.0, [(0.0, TERM), (10.0, KILL)]),
    (KILL, None, [(0.0, KILL)]),
    (INT, 0.0, []),                                               # already gone: nothing sent
])
def test_nsys_is_stopped_step_by_step_10_s_apart(first, gone_at, sent):
    got, left, end = drive(nsys_stop("unfinished", first), None if gone_at is None else T0 + gone_at)
    assert got == sent
    assert left == ([APP] if gone_at is None else [])
    assert end - T0 == (10.0 * len(sent) if gone_at is None else gone_at)


def test_looks_are_half_a_second_apart_while_the_app_runs_and_a_tenth_around_its_start_and_end():
    m = machine(duration_s=3.0)
    assert m.next_look_s(T0) == LOOK_S  # the app not seen yet
    m.decide(T0 + 0.625, Board().look(m, T0 + 0.625))  # seen, started at 0.5 by /proc
    assert m.next_look_s(T0 + 0.7) == CALM_LOOK_S
    assert m.next_look_s(T0 + 3.25) == 0.25  # woken for the planned stop at 3.5, not after it
    assert m.next_look_s(T0 + 3.45) == LOOK_S
    m.decide(T0 + 3.5, Board().look(m, T0 + 3.5))  # the planned stop: SIGTERM sent
    assert m.app_stopped == T0 + 3.5 and m.next_look_s(T0 + 3.5) == LOOK_S
    early = machine(duration_s=60.0)
    early.decide(T0 + 1.0, Board(stop_at=T0 + 1.0).look(early, T0 + 1.0))
    assert early.ended_early is not None and early.next_look_s(T0 + 1.0) == LOOK_S


def test_a_capture_with_calm_looks_stops_the_app_as_planned_and_still_beats_every_second_or_so():
    """The ticks of run() at the machine's own pace: the stop lands on time, heartbeats stay under 1.5 s apart."""
    m, board = machine(duration_s=5.0), Board(ends_on_term=1)
    now, log, looks = T0, [], []
    while now < T0 + 8:
        looks.append(round(now - T0, 3))
        for action in m.decide(now, board.look(m, now)):
            log.append((now, action))
            board.act(now, action)
        m.acted(now)
        now += m.next_look_s(now)
    assert [round(t - T0, 3) for t, _ in of(log, SignalApp)] == [5.5]
    beats = [t for t, a in of(log, Emit) if a.event == "heartbeat"]
    assert max(b - a for a, b in zip(beats, beats[1:])) <= 1.5
    # 0.1 s apart until the app shows (at 0.625), then 0.5 s apart up to its planned stop at 5.5, then 0.1 again
    assert [t for t in looks if 0.6 <= t <= 5.6] == [0.6, 0.7, 1.2, 1.7, 2.2, 2.7, 3.2, 3.7, 4.2, 4.7, 5.2, 5.5, 5.6]


@pytest.mark.parametrize("state, planned_s, now, expected", [
    (None, 3.0, T0, "calm"),  # no state yet
    ({"stage": "starting", "updated_at": T0}, 3.0, T0, "calm"),  # nsys starting: nothing to end soon
    ({"stage": "capturing", "app_s": None, "updated_at": T0}, 3.0, T0 + 9, "calm"),  # the app not seen yet
    ({"stage": "capturing", "app_s": 1.0, "updated_at": T0}, 3.0, T0 + 0.9, "calm"),  # 1.9 s < 2 s
    ({"stage": "capturing", "app_s": 1.0, "updated_at": T0}, 3.0, T0 + 1.0, "near"),  # carried on to 2 s
    ({"stage": "capturing", "app_s": 2.5, "updated_at": T0}, 3.0, T0, "near"),
    ({"stage": "capturing", "app_s": 60.0, "updated_at": T0}, None, T0, "calm"),  # no planned end given
    ({"stage": "importing", "app_s": 0.1, "updated_at": T0}, 30.0, T0, "near"),  # past the capture
    ({"stage": "capturing", "app_s": 0.5, "updated_at": T0 + 5}, 3.0, T0, "calm"),  # a clock behind the state
])
def test_the_follower_looks_often_only_from_a_second_before_the_apps_planned_end(state, planned_s, now, expected):
    from remote_agent.messages import CaptureState
    state = CaptureState.from_wire(state, strict=True) if state is not None else None
    assert follow_look_s(state, planned_s, now) == {"calm": CALM_FOLLOW_LOOK_S, "near": FOLLOW_LOOK_S}[expected]


@pytest.mark.parametrize("result, again", [
    (CaptureResult(stalled=True), True),                     # stalled writing its report, no report
    (CaptureResult(failed_to_start=True, nsys_exit=1), True),  # "End of file" before the app ran
    (CaptureResult(nsys_exit=143), True),                    # ended by a signal, no report
    (CaptureResult(nsys_exit=143, reports={".nsys-rep": "/r.nsys-rep"}), False),  # what it wrote comes back
    (CaptureResult(stalled=True, ended_early=EarlyEnd(kind="interrupted")), False),  # an end was asked for
    (CaptureResult(program_not_found=True, nsys_exit=1), False),  # the app is not there: again is no better
    (CaptureResult(with_nsys=False, app_exit=1), False),     # no nsys, no report to expect
])
def test_a_capture_is_made_again_when_nsys_left_no_report_by_itself(result, again):
    assert worth_again(result) is again
