"""Reading and writing the documents' JSON: whole or not at all, a version checked on the way in, a
dataclass to its JSON object and back."""
from __future__ import annotations

import json
from dataclasses import fields
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


def as_json_fields(item: Any, keys: dict[str, str]) -> dict[str, Any]:
    found = {keys.get(f.name, f.name): getattr(item, f.name) for f in fields(item) if f.name != "unknown"}
    return {**item.unknown, **found}


def from_json_fields(cls: Any, value: dict[str, Any], keys: dict[str, str]) -> Any:
    """The dataclass from its JSON object: a key with a value of the wrong kind reads as missing (a hand-edited
    file still opens), a key this release does not know is kept."""
    known = {keys.get(f.name, f.name): f for f in fields(cls) if f.name != "unknown"}
    args: dict[str, Any] = {}
    unknown: dict[str, Any] = {}
    for key, item in value.items():
        spec = known.get(key)
        if spec is None:
            unknown[key] = item
        elif _fits(item, str(spec.type)):
            args[spec.name] = item
    return cls(**args, unknown=unknown)


def _fits(value: Any, annotation: str) -> bool:
    if value is None:
        return "None" in annotation
    kinds = {"str": str, "int": int, "dict": dict, "list": list}
    wanted = [kind for name, kind in kinds.items() if annotation.startswith(name)]
    return not wanted or (isinstance(value, wanted[0]) and not (wanted[0] is int and isinstance(value, bool)))
