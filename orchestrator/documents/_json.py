"""Reading and writing the documents' JSON: whole or not at all, a version checked on the way in."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..files import write_text


def read_object(path: Path, version_key: str, newest: int, what: str, fix: str) -> dict[str, Any]:
    """The JSON object in ``path``; UsageError (one line, with ``fix``) when it is missing, not an object, or
    written by a newer release (its ``version_key`` above ``newest``)."""
    try:
        value = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"{path} could not be read ({exc.strerror or exc})", fix) from None
    except ValueError as exc:
        raise UsageError(f"{path} could not be read (not JSON: {exc})", fix) from None
    if not isinstance(value, dict):
        raise UsageError(f"{path} could not be read (it holds {type(value).__name__}, not an object)", fix)
    version = value.get(version_key, 0)
    if not isinstance(version, int) or version > newest:
        raise UsageError(f"{path} is {what} of version {version}, newer than this orchestrate reads ({newest})",
                         "open it with the orchestrate release that wrote it, or upgrade")
    return value


def write_object(path: Path, value: dict[str, Any], indent: int = 2) -> Path:
    return write_text(path, json.dumps(value, indent=indent, sort_keys=indent > 1, default=str) + "\n")
