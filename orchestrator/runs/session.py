"""The host's side of a detached capture: launch it on the board, then follow it.

Following means renewing the board's heartbeat once a second and reading its progress. The first
interrupt (Ctrl-C, SIGTERM) asks the board to end the capture early, as nsys's own Ctrl-C would; the
second stops following and leaves the board to finish on its own. Another thread asks the same through
a ``HostStop`` (a fleet's Ctrl-C, which only its main thread receives, or one board's deadline). Silence
from the board past ``silence_s`` counts as a lost connection. Either way the board keeps whatever the
capture wrote.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import AgentError, BoardBusyError
from ..targets.agent import RemoteAgent, parse_event

BEAT_EVERY_S = 1.0
INTERRUPT_REASON = "the user interrupted orchestrate on the host"


class HostStop:
    """The host's wish to end captures early, set from another thread: ``interrupt`` asks the board to end
    the capture (as a first Ctrl-C does), ``abandon`` stops following it (as a second one does)."""

    def __init__(self, reason: str = INTERRUPT_REASON) -> None:
        self.reason = reason
        self.interrupt = threading.Event()
        self.abandon = threading.Event()

    def request(self, reason: str | None = None) -> None:
        if not self.interrupt.is_set():
            self.reason = reason or self.reason
            self.interrupt.set()


class StoppedFollowing(Exception):
    """The user interrupted twice: the host stops waiting; the board carries on without it."""


class LostContact(Exception):
    """Nothing heard from the board for too long, or the channel closed without an answer."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def launch(agent: RemoteAgent, request: dict[str, Any]) -> dict[str, Any]:
    answer = agent.call("launch", request, timeout=float(request.get("wait_lock_s") or 0) + 60)
    if "busy" in answer:
        holder = answer["busy"]
        since = holder.get("since")
        age = f", for {time.time() - since:.0f} s" if isinstance(since, (int, float)) else ""
        raise BoardBusyError(f"{agent.transport.description} is busy with run {holder.get('run')} "
                             f"(from {holder.get('host') or 'another host'}{age})",
                             "wait for it with --wait-lock SECONDS, or try again later")
    return answer


def follow(agent: RemoteAgent, run_dir: str, heartbeat_timeout_s: float, on_progress: Callable[[dict], None],
           on_interrupt: Callable[[], None], silence_s: float | None = None, stop: HostStop | None = None) -> dict:
    """Follow the capture in run_dir until it ends; returns the board's final state."""
    silence_s = silence_s or max(heartbeat_timeout_s, 15.0)
    stream = agent.open("attach", {"run_dir": run_dir, "heartbeat_timeout_s": heartbeat_timeout_s})
    heard = last_beat = time.monotonic()
    interrupted = False
    try:
        while True:
            try:
                now = time.monotonic()
                if stop is not None and stop.abandon.is_set():
                    raise StoppedFollowing()
                if stop is not None and stop.interrupt.is_set() and not interrupted:
                    interrupted = True
                    stream.send(f"stop {stop.reason}\n".encode())
                    on_interrupt()
                if now - last_beat >= BEAT_EVERY_S:
                    stream.send(b"beat\n")
                    last_beat = now
                for line in stream.read_lines(0.25):
                    event = parse_event(line)
                    if event is None:
                        continue
                    heard = time.monotonic()
                    if event.get("event") == "result":
                        if event.get("data") is None:
                            raise LostContact("the board stopped hearing the host's heartbeat")
                        return event["data"]
                    if event.get("failed"):
                        raise AgentError(f"agent 'attach' failed on {agent.transport.description}: "
                                         f"{event.get('msg')}", "see agent.log in the run folder on the board")
                    on_progress(event)
                if stream.finished:
                    detail = stream.error_output().strip().splitlines()[-1:] or ["the channel closed"]
                    raise LostContact(detail[0])
                if time.monotonic() - heard > silence_s:
                    raise LostContact(f"nothing heard from the board for {silence_s:.0f} s")
            except KeyboardInterrupt:
                if interrupted:
                    raise StoppedFollowing() from None
                interrupted = True
                stream.send(f"stop {INTERRUPT_REASON}\n".encode())
                on_interrupt()
    finally:
        stream.close()
