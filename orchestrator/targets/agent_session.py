"""A run's agent calls on one channel, to one agent process on the board (the agent's ``session`` command).

A call of its own starts a shell and a Python on the board and loads the agent: on a board of a fleet, where
the host's two cores serve every board, that was most of what a run cost. In a session, each call is a
``SessionCall`` line and its answer the JSON lines a call of its own would print; ``attach`` keeps the channel
for the host's heartbeat lines until its capture ended. A session that broke (its channel closed, a call past
its deadline, an attach not followed to its end) is closed, and the calls after it are calls of their own
again, as before sessions were; a call whose answer it lost raises as a call of its own would.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from remote_agent.messages import Message, SessionCall

from ..errors import RemoteCommandError
from .streams import CommandResult
from .transport import Stream

EventHandler = Callable[[dict], None]
UNTRUSTED_MARK = "orchestrate-agent-untrusted"
UNTRUSTED_EXIT = 3


def parse_event(line: str) -> dict[str, Any] | None:
    """An agent's JSON line; None for anything else (a board's login banner, a partial line)."""
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def is_answer(event: dict[str, Any]) -> bool:
    return event.get("event") == "result" or bool(event.get("failed"))


def message_line(message: Message) -> bytes:
    """A message as the agent reads it from a stream (a session's calls, attach's lines, send's request): one line."""
    return json.dumps(message.to_wire()).encode() + b"\n"


class AgentSession:
    def __init__(self, stream: Stream, description: str) -> None:
        self.stream = stream
        self.description = description
        self.usable = True

    def call(self, command: str, request: Message | None, on_event: EventHandler | None,
             timeout: float | None) -> list[dict[str, Any]]:
        """The call's answer lines (progress events go to on_event); without an answer when the session broke."""
        wire = request.to_wire() if request is not None else {}
        self.stream.send(message_line(SessionCall(command=command, request=wire)))
        deadline = time.monotonic() + timeout if timeout else None
        events: list[dict[str, Any]] = []
        while True:
            for line in self.stream.read_lines(0.25):
                event = parse_event(line)
                if event is None:
                    continue
                if is_answer(event):
                    events.append(event)
                    return events
                if on_event:
                    on_event(event)
                else:
                    events.append(event)
            if self.stream.finished:
                self.close()
                return events
            if deadline and time.monotonic() > deadline:
                self.close()
                raise RemoteCommandError(f"the agent's '{command}' did not answer within {timeout:g} s on "
                                         f"{self.description}", "the target may be overloaded; rerun with a "
                                                                "longer --grace")

    def result(self) -> CommandResult:
        """What a call of its own would have ended with, for its answer's reader: the board's error output."""
        errors = self.stream.error_output() if not self.usable else ""
        return CommandResult(UNTRUSTED_EXIT if UNTRUSTED_MARK in errors else -1, "", errors)

    def attach(self, command: str, request: Message) -> Stream:
        self.stream.send(message_line(SessionCall(command=command, request=request.to_wire())))
        return AttachOnSession(self)

    def close(self) -> None:
        self.usable = False
        self.stream.close()

    def end(self) -> None:
        if self.usable:
            self.stream.send(message_line(SessionCall(command="end")))
        self.close()


class AttachOnSession:
    """An attach on a session (transport.Stream): closing it before its answer came closes the session, as a
    call of its own closes its channel; after its answer the session goes on."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.answered = False

    def send(self, data: bytes) -> None:
        self.session.stream.send(data)

    def read_lines(self, timeout: float) -> list[str]:
        lines = self.session.stream.read_lines(timeout)
        for line in lines:
            event = parse_event(line)
            if event is not None and is_answer(event):
                self.answered = True
        return lines

    @property
    def finished(self) -> bool:
        return self.session.stream.finished

    def error_output(self) -> str:
        return self.session.stream.error_output()

    def close(self) -> None:
        if not self.answered:
            self.session.close()
