"""`orchestrate mcp --http` for real: the server on loopback, asked with real HTTP requests and the SDK's own client.
No token, a wrong token, a foreign Origin and a path outside the root are each refused; a short token is refused
at the start; the token is on no command line and in no output."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_root import in_a_thread

pytestmark = pytest.mark.integration

REPO = Path(__file__).parent.parent
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(root: Path, port: int, token: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ORCHESTRATE_MCP_TOKEN": token}
    return subprocess.Popen([sys.executable, "-m", "orchestrator", "mcp", "--root", str(root), "--http", str(port)],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory, export):
    root = tmp_path_factory.mktemp("mcp-http")
    (root / "es2gears").mkdir()
    shutil.copy(export("es2gears-opengl"), root / "es2gears" / "report.sqlite")
    token, port = secrets.token_hex(32), free_port()
    server = start(root, port, token)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert server.poll() is None and time.monotonic() < deadline, server.communicate()[1]
            time.sleep(0.2)
    yield {"url": f"http://127.0.0.1:{port}/mcp", "port": port, "token": token, "server": server}
    server.terminate()
    out, err = server.communicate(timeout=30)
    assert token not in out + err


def post(url: str, headers: dict[str, str]) -> httpx2.Response:
    return httpx2.post(url, json=INITIALIZE, headers={**ACCEPT, **headers}, timeout=30)


def test_requests_without_the_token_or_from_another_origin_are_refused(served):
    url, token, port = served["url"], served["token"], served["port"]
    assert post(url, {}).status_code == 401
    assert post(url, {"Authorization": "Bearer " + "0" * 64}).status_code == 401
    assert post(url, {"Authorization": token}).status_code == 401  # not as a bearer token
    refused = post(url, {"Authorization": f"Bearer {token}", "Origin": "http://evil.example"})
    assert refused.status_code == 403 and "Origin" in refused.json()["error"]
    assert post(url, {"Authorization": f"Bearer {token}", "Host": "evil.example"}).status_code in (403, 421)
    answered = post(url, {"Authorization": f"Bearer {token}", "Origin": f"http://127.0.0.1:{port}"})
    assert answered.status_code == 200
    listening = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    mine = [fields[1] for fields in listening if fields[1].endswith(f":{port:04X}") and fields[3] == "0A"]
    assert mine == [f"0100007F:{port:04X}"]  # listening on 127.0.0.1 alone
    with open(f"/proc/{served['server'].pid}/cmdline", "rb") as cmdline:
        assert token.encode() not in cmdline.read()


def test_the_sdk_client_with_the_token_gets_answers_and_one_line_errors(served):
    async def asked() -> tuple:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {served['token']}"})
        async with http, Client(streamable_http_client(served["url"], http_client=http)) as client:
            frames = await client.call_tool("frames", {"run": "es2gears", "slowest": 1})
            outside = await client.call_tool("summary", {"run": "../../etc"})
            return frames, outside
    frames, outside = in_a_thread(asked)
    assert not frames.is_error and json.loads(frames.content[0].text)["frames"]["count"] == 2445
    assert outside.is_error and "not a path inside the root" in outside.content[0].text


def test_a_short_or_missing_token_is_refused_at_the_start(tmp_path):
    for token in ("", "too-short"):
        done = start(tmp_path, free_port(), token)
        out, err = done.communicate(timeout=60)
        assert done.returncode == 2, err
        line, = err.strip().splitlines()
        assert "ORCHESTRATE_MCP_TOKEN" in line and "32" in line
        if token:
            assert token not in err


def test_captures_over_http_need_their_own_flag(tmp_path):
    port, token = free_port(), secrets.token_hex(32)
    env = {**os.environ, "PYTHONPATH": str(REPO), "ORCHESTRATE_MCP_TOKEN": token}
    done = subprocess.run([sys.executable, "-m", "orchestrator", "mcp", "--root", str(tmp_path), "--http", str(port),
                           "--allow-capture"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    line, = done.stderr.strip().splitlines()
    assert "--allow-capture-over-http" in line and token not in done.stderr
