"""The server over streamable HTTP, for this machine alone: bound to loopback, every request with the bearer token
from $ORCHESTRATE_MCP_TOKEN (401 without it or with another), and an Origin header, when a browser sends one,
naming this server itself (403 otherwise: the MCP specification's guard against DNS rebinding, which would let a
web page reach a local server through a name of its own); the Host header is checked likewise by the SDK.
The token is read from the environment only: never from a command line, never written anywhere.
"""
from __future__ import annotations

import hmac
from typing import Any

from ..environment import take_secret
from ..errors import UsageError

TOKEN_VARIABLE = "ORCHESTRATE_MCP_TOKEN"
MIN_TOKEN_BYTES = 32
LOOPBACK = "127.0.0.1"


def token_from_environment() -> str:
    """$ORCHESTRATE_MCP_TOKEN, taken out of the environment (no child inherits it: a capture, nsys, the app), refused
    when missing, not ASCII, or shorter than MIN_TOKEN_BYTES."""
    token = take_secret(TOKEN_VARIABLE) or ""
    if not token:
        raise UsageError(f"--http needs a bearer token in ${TOKEN_VARIABLE}",
                         f"export {TOKEN_VARIABLE}=$(openssl rand -hex 32) and give the same to the client")
    if not token.isascii() or not token.isprintable():
        raise UsageError(f"${TOKEN_VARIABLE} holds characters a bearer token cannot carry",
                         f"export {TOKEN_VARIABLE}=$(openssl rand -hex 32)")
    if len(token.encode()) < MIN_TOKEN_BYTES:
        raise UsageError(f"${TOKEN_VARIABLE} is {len(token.encode())} bytes: a token needs {MIN_TOKEN_BYTES} or more",
                         f"export {TOKEN_VARIABLE}=$(openssl rand -hex 32)")
    return token


def own_origins(port: int) -> list[str]:
    return [f"http://{LOOPBACK}:{port}", f"http://localhost:{port}"]


class Guard:
    """ASGI middleware: the token and the Origin checked before the MCP app sees a request."""

    def __init__(self, app: Any, token: str, origins: list[str]) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.origins = {origin.encode() for origin in origins}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket or anything else: nothing here speaks it
            return
        headers = dict(scope.get("headers") or [])
        origin = headers.get(b"origin")
        if origin is not None and origin not in self.origins:
            await _refuse(send, 403, "the Origin is not this server's")
            return
        given = headers.get(b"authorization", b"")
        if not hmac.compare_digest(given, self.expected):
            await _refuse(send, 401, "a bearer token is needed", {b"www-authenticate": b'Bearer realm="orchestrate"'})
            return
        await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, why: str, extra: dict[bytes, bytes] | None = None) -> None:
    body = f'{{"error": "{why}"}}'.encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               *(extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve_http(server: Any, port: int, token: str) -> None:
    """The MCP app on loopback at ``port``, behind the guard, until interrupted."""
    import anyio
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings
    origins = own_origins(port)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=[f"{LOOPBACK}:{port}", f"localhost:{port}"],
                                         allowed_origins=origins)
    app = Guard(server.streamable_http_app(transport_security=security, host=LOOPBACK), token, origins)
    config = uvicorn.Config(app, host=LOOPBACK, port=port, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve)
