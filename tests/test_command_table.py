"""A command is its messages, one entry of the table in commands.py and one handler: a copy of the agent given a new
command answers it through the host's typed call, with no other edit."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.inventory.hosts import Host
from orchestrator.targets import agent as agent_module
from orchestrator.targets.agent import deploy_agent
from orchestrator.targets.connect import open_transport
from orchestrator.targets.settings import ConnectOptions
from remote_agent.commands import COMMANDS, SEND, Command
from remote_agent.messages import Message

MESSAGES = '''

class EchoRequest(Message):
    words: str = ""


class EchoAnswer(Message):
    words: str = ""
    pid: int = 0
'''
ENTRY = '''
COMMANDS["echo"] = Command("echo", messages.EchoRequest, messages.EchoAnswer, "echo.answer")
'''
HANDLER = '''import os

from .messages import EchoAnswer


def answer(request):
    return EchoAnswer(words=request.words.upper(), pid=os.getpid())
'''


class EchoRequest(Message):
    words: str = ""


class EchoAnswer(Message):
    words: str = ""
    pid: int = 0


ECHO = Command("echo", EchoRequest, EchoAnswer, "echo.answer")


@pytest.fixture
def agent_with_echo(tmp_path, monkeypatch):
    source = tmp_path / "remote_agent"
    shutil.copytree(Path(agent_module.AGENT_SOURCE), source, ignore=shutil.ignore_patterns("__pycache__"))
    with (source / "messages.py").open("a") as messages:
        messages.write(MESSAGES)
    with (source / "commands.py").open("a") as table:
        table.write("from . import messages\n" + ENTRY)
    (source / "echo.py").write_text(HANDLER)
    monkeypatch.setattr(agent_module, "AGENT_SOURCE", source)  # the archive built from the copy
    host = Host(name="local", connection="local", work_dir=str(tmp_path / "work"))
    transport = open_transport(host, ConnectOptions())
    yield deploy_agent(transport, host)
    transport.close()


def test_a_command_added_to_the_table_is_answered_through_the_typed_call(agent_with_echo):
    answer = agent_with_echo.call(ECHO, EchoRequest(words="frame"))
    assert isinstance(answer, EchoAnswer) and answer.words == "FRAME" and answer.pid > 0
    with agent_with_echo.session():  # in a session too, as every command is unless it says otherwise
        assert agent_with_echo.call(ECHO, EchoRequest(words="again")).words == "AGAIN"


def test_a_request_with_a_key_its_message_does_not_declare_is_refused(agent_with_echo):
    from orchestrator.errors import AgentError

    class Misspelt(Message):
        wrods: str = ""
    with pytest.raises(AgentError, match=r"could not read the host's 'echo' request: .*EchoRequest has no field wrods"):
        agent_with_echo.call(Command("echo", Misspelt, EchoAnswer, "echo.answer"), Misspelt(wrods="frame"))


def test_the_table_binds_every_command_to_its_messages_and_a_handler_that_exists():
    import importlib
    for name, command in COMMANDS.items():
        assert command.name == name
        assert issubclass(command.request, Message) and issubclass(command.answer, Message)
        handler = getattr(importlib.import_module(f"remote_agent.{command.module}"), command.function)
        assert callable(handler)
    assert not SEND.in_session and [c.name for c in COMMANDS.values() if c.conversational] == ["attach"]
