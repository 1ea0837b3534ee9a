"""What every document is: a ``Record``, a wire message (remote_agent/wire.py: the one record machinery of host,
agent and run folder), read and written as run folders are; and reading and writing a document's file: whole or
not at all, its version checked on the way in."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from remote_agent.messages import Message

from ..errors import UsageError
from ..files import write_text

R = TypeVar("R", bound="Record")


class Record(Message):
    """A document or a section of one. Read, a key it does not know is kept and a value of the wrong kind reads as
    missing (kept as it was too): written again, it is what it was, its own changes apart. Written without the
    protocol's version: a document of its own says its own (``VERSION_KEY``: the version this release writes, read
    by read_record, which refuses a newer one)."""
    VERSION_KEY: ClassVar[str | None] = None
    VERSION: ClassVar[int] = 0

    def __init__(self, *args: Any, **values: Any) -> None:
        super().__init__(*args, **values)
        self.key_order: tuple[str, ...] = ()  # the keys as read: written again in that order, new keys after

    def as_json(self) -> dict[str, Any]:
        """The JSON object, the document's version first."""
        found: dict[str, Any] = self.to_wire(version=False)
        return {self.VERSION_KEY: self.VERSION, **found} if self.VERSION_KEY else found

    def to_wire(self, version: bool = True) -> dict[str, Any]:
        wire: dict[str, Any] = super().to_wire(version)
        if not self.key_order:
            return wire
        ordered = {key: wire[key] for key in self.key_order if key in wire}
        return {**ordered, **{key: value for key, value in wire.items() if key not in ordered}}

    @classmethod
    def from_wire(cls: type[R], wire: Any, strict: bool = False) -> R:
        found: R = super().from_wire(wire, strict)
        if isinstance(wire, dict):
            found.key_order = tuple(wire)
        return found

    @classmethod
    def from_json(cls: type[R], value: Any) -> R:
        if cls.VERSION_KEY and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != cls.VERSION_KEY}
        found: R = cls.from_wire(value)
        return found


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


def read_record(kind: type[R], path: Path, what: str, fix: str) -> R:
    """The document in ``path``, of a version this release reads (read_object's checks)."""
    found = read_object(path, str(kind.VERSION_KEY), kind.VERSION, what, fix)
    try:
        return kind.from_json(found)
    except RecursionError:  # sections nested deeper than any writer nests them (a call tree stops at 64)
        raise UsageError(f"{path} could not be read (nested too deeply)", fix) from None


def write_record(path: Path, record: Record) -> Path:
    """A document written whole or not at all (a crash leaves the previous version)."""
    return write_object(path, record.as_json())
