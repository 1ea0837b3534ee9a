"""Captures through `orchestrate mcp --allow-capture`, on the worker's board (sshd on loopback, the real nsys): a
profile ends in a run folder like the CLI's, its progress as MCP progress notifications; a client that goes away
mid-capture is the CLI's Ctrl-C: the capture ends early, the report is kept, nothing is left running."""
from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
from board_state import assert_board_clean, assert_report_kept
from conftest import write_inventory
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_root import in_a_thread
from scenarios import board, ssh_args

pytestmark = pytest.mark.integration

REPO = Path(__file__).parent.parent
LOOP_APP = "sh -c 'while true; do sleep 0.2; done'"
QUIET = {"trace": "osrt", "sample": "none", "cpuctxsw": "none"}  # as tests/test_faults.py: nsys's calmest capture


def capturing_server(sshd, tmp_path: Path) -> tuple[StdioServerParameters, Path, Path]:
    root, work = tmp_path / "runs", tmp_path / "work"
    root.mkdir()
    inventory = write_inventory(tmp_path / "inventory.yaml", {"board": board(sshd, work)})
    args = ["-m", "orchestrator", "mcp", "--root", str(root), "--allow-capture", "--inventory", str(inventory),
            *ssh_args(sshd)]
    return (StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO),
                                  env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}), root, work)


def test_a_profile_through_the_server_ends_in_a_run_folder_like_the_clis(sshd, tmp_path):
    params, root, work = capturing_server(sshd, tmp_path)
    said: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        said.append(message or "")

    async def session():
        async with Client(params, read_timeout_seconds=600) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            missing = await client.call_tool("profile", {"target": "board"})
            done = await client.call_tool("profile", {"target": "board", "app_cmd": LOOP_APP, "duration": 3,
                                                      "retries": 2, **QUIET}, progress_callback=progress)
            return tools, missing, done
    tools, missing, done = in_a_thread(session)
    assert {"profile", "study"} <= tools
    assert missing.is_error and "one of app and app_cmd" in missing.content[0].text
    assert not done.is_error, done.content[0].text
    answer = json.loads(done.content[0].text)
    run_dir = root / answer["run"]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["app"]["command"] == ["sh", "-c", "while true; do sleep 0.2; done"]
    assert (run_dir / "report.sqlite").is_file() and (run_dir / "summary.json").is_file()
    assert answer["summary"]["run"] == answer["run"] and answer["summary"]["validity"]["status"] == "ok"
    assert any("captur" in line for line in said), said
    assert_report_kept(run_dir)
    assert_board_clean(work)


def test_a_client_gone_mid_capture_ends_it_early_and_keeps_the_report(sshd, tmp_path):
    params, root, work = capturing_server(sshd, tmp_path)

    async def session() -> None:
        async with Client(params, read_timeout_seconds=600) as client:
            started = asyncio.create_task(client.call_tool(
                "profile", {"target": "board", "app_cmd": LOOP_APP, "duration": 30, **QUIET}))
            deadline = time.monotonic() + 120
            while not any(_stage(run) == "capturing" and _app_started(run) for run in root.glob("*/")):
                assert time.monotonic() < deadline and not started.done()
                await asyncio.sleep(0.5)
            await asyncio.sleep(3)
            started.cancel()  # the client goes away: its stdin closes as the session ends
    in_a_thread(session)
    deadline = time.monotonic() + 180
    while _commands_writing_to(root):  # the command line ends the capture and pulls the report on its own
        assert time.monotonic() < deadline, "the capture did not end"
        time.sleep(0.5)
    run_dir, = root.glob("*/")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted" and record["stage"] == "pulled", record["stage"]
    assert 2 < record["capture"]["ended_early"]["after_s"] < 25
    assert_report_kept(run_dir)
    assert_board_clean(work)


def _commands_writing_to(root: Path) -> list[int]:
    """The processes whose command line names the root: the server's `orchestrate profile --out ROOT`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdecimal() and str(root).encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _stage(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / "run.json").read_text()).get("stage")
    except (OSError, ValueError):
        return None


def _app_started(run_dir: Path) -> bool:
    try:
        remote = json.loads((run_dir / "run.json").read_text())["remote"]["run_dir"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    try:
        return bool((Path(remote) / "app.pid").read_text().strip())  # written as the launch wrapper becomes the app
    except OSError:
        return False
