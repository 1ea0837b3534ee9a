"""Reading and writing the documents' JSON: whole or not at all, a version checked on the way in, a
dataclass to its JSON object and back."""
from __future__ import annotations

import json
from dataclasses import MISSING, fields
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from remote_agent.messages import Message

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
    """A document's JSON object: its fields under their keys, over the keys it read and did not know (or read with
    a value of the wrong kind: such a value is written back as it was while its field keeps its default)."""
    found = {}
    for spec in fields(item):
        key, value = keys.get(spec.name, spec.name), getattr(item, spec.name)
        if spec.name != "unknown" and not (key in item.unknown and value == _default(spec)):
            found[key] = value.to_wire(version=False) if isinstance(value, Message) else value
    return {**item.unknown, **found}


def leave_out(found: dict[str, Any], item: Any, *keys: str) -> None:
    """Keys a document does not write while they are unset (a value read and kept as it was stays)."""
    for key in keys:
        if key not in item.unknown:
            found.pop(key, None)


def from_json_fields(cls: Any, value: dict[str, Any], keys: dict[str, str]) -> Any:
    """The dataclass from its JSON object: a key with a value of the wrong kind reads as missing (a hand-edited
    file still opens) and is kept as it was, as is a key this release does not know."""
    hints = get_type_hints(cls)
    known = {keys.get(f.name, f.name): f for f in fields(cls) if f.name != "unknown"}
    args: dict[str, Any] = {}
    unknown: dict[str, Any] = {}
    for key, item in value.items():
        spec = known.get(key)
        if spec is not None and value_fits(item, hints[spec.name]):
            message = _message_type(hints[spec.name])
            args[spec.name] = message.from_wire(item) if message is not None and item is not None else item
        else:
            unknown[key] = item
    return cls(**args, unknown=unknown)


def _default(spec: Any) -> Any:
    if spec.default is not MISSING:
        return spec.default
    return spec.default_factory() if spec.default_factory is not MISSING else MISSING


def _message_type(annotation: Any) -> type[Message] | None:
    """The message a field holds (``Facts`` or ``Facts | None``), read with the messages' own rules."""
    members = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    return next((m for m in members if isinstance(m, type) and issubclass(m, Message)), None)


def value_fits(value: Any, annotation: Any) -> bool:
    """Whether a JSON value is of the kind a field's annotation says (its outer type: a list, a dict, text, ...;
    a message's is an object)."""
    members = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    kinds = tuple(dict if isinstance(m, type) and issubclass(m, Message) else get_origin(m) or m for m in members)
    if Any in kinds:
        return True
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int) and float in kinds:
        return True
    return isinstance(value, tuple(kind for kind in kinds if isinstance(kind, type)))
