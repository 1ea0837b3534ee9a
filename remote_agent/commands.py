"""The agent's commands: each one's name, the request it reads, its answer and its handler, in one table both sides
import. The agent dispatches by it (main.py); the host calls ``agent.call(PREFLIGHT, request)`` and gets a
``PreflightAnswer``. Adding a command is one entry here and one handler in the module it names.

Standard library only, Python 3.6 syntax (the agent's).
"""

from typing import Any, Dict

from .messages import (
    AttachRequest,
    BoardState,
    CaptureState,
    Facts,
    FactsRequest,
    LaunchAnswer,
    LaunchRequest,
    NoRequest,
    PreflightAnswer,
    PreflightRequest,
    RemoveAnswer,
    RemoveRequest,
    SendRequest,
    SentFile,
    StatusAnswer,
    StatusRequest,
    VersionAnswer,
)
from .wire import A, Command, Q

__all__ = ["A", "Command", "Q"]  # what a command is comes with the table


VERSION = Command("version", NoRequest, VersionAnswer, "identity.version")
FACTS = Command("facts", FactsRequest, Facts, "facts.answer")
BOARD_STATE = Command("board_state", NoRequest, BoardState, "facts.board_state_now")
PREFLIGHT = Command("preflight", PreflightRequest, PreflightAnswer, "preflight.run")
LAUNCH = Command("launch", LaunchRequest, LaunchAnswer, "daemon.launch")
# reads the host's lines (HostLine) after its request, writes progress lines (CaptureProgress) until the capture ended
ATTACH = Command("attach", AttachRequest, CaptureState, "daemon.attach", conversational=True)
STATUS = Command("status", StatusRequest, StatusAnswer, "daemon.status")
REMOVE = Command("remove", RemoveRequest, RemoveAnswer, "files.remove_answer")
# its stdout is the files' bytes, one after the other; its answers a SentFile line per file on stderr
SEND = Command("send", SendRequest, SentFile, "send.send_files", in_session=False)

COMMANDS: Dict[str, Command[Any, Any]] = {
    command.name: command for command in (VERSION, FACTS, BOARD_STATE, PREFLIGHT, LAUNCH, ATTACH, STATUS, REMOVE, SEND)}
