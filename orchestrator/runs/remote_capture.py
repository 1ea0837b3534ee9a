"""The host's side of a detached capture: launch it on the board, then follow it.

Following means renewing the board's heartbeat once a second and reading its progress. The first
interrupt (Ctrl-C, SIGTERM) asks the board to end the capture early, as nsys's own Ctrl-C would; the
second stops following and leaves the board to finish on its own. Another thread asks the same through
a ``HostStop`` (a fleet's Ctrl-C, which only its main thread receives, or one board's deadline). Silence
from the board past ``silence_s`` counts as a lost connection. Either way the board keeps whatever the
capture wrote.

While the main thread follows, the first Ctrl-C or SIGTERM only sets the ``HostStop`` that the loop reads:
raised as an exception wherever the thread happened to be, an interrupt could land inside paramiko while it
wrote a packet and leave the SSH stream corrupt, or before the channel to the board was open, and the
request to end the capture never reached the board.
"""
from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from remote_agent.commands import ATTACH, LAUNCH
from remote_agent.messages import AttachRequest, CaptureProgress, CaptureState, HostLine, LaunchAnswer, LaunchRequest

from ..errors import AgentError, BoardBusyError
from ..targets.agent import RemoteAgent, parse_event
from ..targets.agent_session import message_line
from ..targets.transport import Stream

BEAT_EVERY_S = 1.0
BEAT = message_line(HostLine(beat=True))
INTERRUPT_REASON = "the user interrupted orchestrate on the host"


class HostStop:
    """The host's wish to end captures early, set from another thread: ``interrupt`` asks the board to end
    the capture (as a first Ctrl-C does), ``abandon`` stops following it (as a second one does)."""

    def __init__(self, reason: str = INTERRUPT_REASON, kind: str = "interrupted") -> None:
        self.reason = reason
        self.kind = kind  # the early end's kind: interrupted (the user) or deadline (a board's time is up)
        self.interrupt = threading.Event()
        self.abandon = threading.Event()

    def request(self, reason: str | None = None, kind: str | None = None) -> None:
        if not self.interrupt.is_set():
            self.reason = reason or self.reason
            self.kind = kind or self.kind
            self.interrupt.set()


class StoppedFollowing(Exception):
    """The user interrupted twice: the host stops waiting; the board carries on without it."""


class LostContact(Exception):
    """Nothing heard from the board for too long, or the channel closed without an answer."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def launch(agent: RemoteAgent, request: LaunchRequest) -> LaunchAnswer:
    answer = agent.call(LAUNCH, request, timeout=request.settings.wait_lock_s + 60)
    holder = answer.busy
    if holder is not None:
        age = f", for {time.time() - holder.since:.0f} s" if holder.since is not None else ""
        raise BoardBusyError(f"{agent.transport.description} is busy with run {holder.run} "
                             f"(from {holder.host or 'another host'}{age})",
                             "wait for it with --wait-lock SECONDS, or try again later")
    return answer


@contextmanager
def interrupts_as_requests(stop: HostStop) -> Iterator[None]:
    """In the main thread: the first Ctrl-C or SIGTERM sets ``stop`` (ends the capture) instead of raising, for
    as long as the block runs; the second stops following at once, even in a wait on a dead link (it may cut
    a packet short: the stream is then only closed). A signal that comes while the old handlers are put
    back, after the block's last look at ``stop``, is delivered again under the old handlers once the block
    ended normally, so it is never lost. A signal this process ignores (started in the background) stays
    ignored. Other threads never receive signals: nothing to change there."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    late: list[int] = []
    following = [True]

    def on_signal(signum: int, frame: object) -> None:
        if not following[0]:
            late.append(signum)
        elif stop.interrupt.is_set():  # the second: stop waiting now, wherever this thread waits
            stop.abandon.set()
            raise StoppedFollowing()
        else:
            stop.request(INTERRUPT_REASON)

    caught = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in caught}
    for sig, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, on_signal)
    ended_normally = False
    try:
        yield
        ended_normally = True
    finally:
        following[0] = False
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, caught)
        try:
            for sig, handler in previous.items():
                if handler is not signal.SIG_IGN:
                    signal.signal(sig, handler)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    if ended_normally and late:
        signal.raise_signal(late[0])


def follow(agent: RemoteAgent, run_dir: str, heartbeat_timeout_s: float, on_progress: Callable[[CaptureProgress], None],
           on_interrupt: Callable[[], None], silence_s: float | None = None, stop: HostStop | None = None,
           planned_s: float | None = None) -> CaptureState:
    """Follow the capture in run_dir until it ends; returns the board's final state. planned_s: the capture's
    planned seconds from now (the board looks more often for its end from about then)."""
    stop = stop or HostStop()
    streams: list[Stream] = []
    try:
        with interrupts_as_requests(stop):
            return _follow(agent, AttachRequest(run_dir=run_dir, heartbeat_timeout_s=heartbeat_timeout_s,
                                                planned_s=planned_s), on_progress, on_interrupt,
                           silence_s or max(heartbeat_timeout_s, 15.0), stop, streams)
    finally:
        for stream in streams:  # closed under the old handlers: a late signal cannot cut the close short
            stream.close()


def _follow(agent: RemoteAgent, request: AttachRequest, on_progress: Callable[[CaptureProgress], None],
            on_interrupt: Callable[[], None], silence_s: float, stop: HostStop, streams: list[Stream]) -> CaptureState:
    stream = agent.open(ATTACH, request)
    streams.append(stream)
    heard = last_beat = time.monotonic()
    interrupted = False
    while True:
        now = time.monotonic()
        if stop.abandon.is_set():
            raise StoppedFollowing()
        if stop.interrupt.is_set() and not interrupted:
            interrupted = True
            stream.send(message_line(HostLine(stop=stop.kind, reason=stop.reason)))
            on_interrupt()
        if now - last_beat >= BEAT_EVERY_S:
            stream.send(BEAT)
            last_beat = now
        for line in stream.read_lines(0.25):
            event = parse_event(line)
            if event is None:
                continue
            heard = time.monotonic()
            if event.get("event") == "result":
                if event.get("data") is None:
                    raise LostContact("the board stopped hearing the host's heartbeat")
                return ATTACH.answer.from_wire(event["data"])
            if event.get("failed"):
                raise AgentError(f"agent 'attach' failed on {agent.transport.description}: "
                                 f"{event.get('msg')}", "see agent.log in the run folder on the board")
            on_progress(CaptureProgress.from_wire(event))
        if stream.finished:
            detail = stream.error_output().strip().splitlines()[-1:] or ["the channel closed"]
            raise LostContact(detail[0])
        if time.monotonic() - heard > silence_s:
            raise LostContact(f"nothing heard from the board for {silence_s:.0f} s")
