"""The one YAML reader of inventories, app specs and studies: safe, bounded, and strict about keys.

PyYAML's safe loader keeps the last of two equal keys without a word (a host loses its address, a study
runs cells it should have refused); here a key given twice is an error that names it and its line. Every
problem is one ``OrchestratorError`` of the caller's kind: what is wrong, in which file, on which line.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import OrchestratorError

MAX_ALIASES = 500
MAX_BYTES = 4 * 2**20


class _StrictLoader(yaml.SafeLoader):
    """The safe loader, minus what a hostile or mistyped file could do: aliases beyond a few hundred, keys
    given twice, keys that are not plain values."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.aliases = 0
        self.open_anchors: set[str] = set()

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_ALIASES} aliases")
            event = self.peek_event()
            if event.anchor in self.open_anchors:
                raise yaml.composer.ComposerError(None, None, f"alias *{event.anchor} is inside its own anchor",
                                                  event.start_mark)
        return super().compose_node(parent, index)

    def compose_sequence_node(self, anchor: Any) -> Any:
        return self._compose_open(anchor, super().compose_sequence_node)

    def compose_mapping_node(self, anchor: Any) -> Any:
        return self._compose_open(anchor, super().compose_mapping_node)

    def _compose_open(self, anchor: Any, compose: Any) -> Any:
        if anchor is not None:
            self.open_anchors.add(anchor)
        try:
            return compose(anchor)
        finally:
            self.open_anchors.discard(anchor)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # a key a '<<' brings may be overridden, as YAML says
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise yaml.constructor.ConstructorError(None, None, "a key must be a plain value",
                                                            key_node.start_mark) from None
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} is given twice (lines {seen[key]} and {line}): keep one",
                        key_node.start_mark)
                seen[key] = line
        return super().construct_mapping(node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping)


def parse_yaml(text: str, source: str, error: type[OrchestratorError]) -> Any:
    """The document in ``text``; a syntax error, a key given twice or a file too deep is ``error``."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc).splitlines()[0]
        raise error(f"{source}: not valid YAML{where}: {problem}", "fix the file there") from None
    except RecursionError:
        raise error(f"{source} is nested too deeply", "a file of settings is a few levels deep") from None
    except (ValueError, TypeError, AttributeError, IndexError, OverflowError) as exc:  # '2024-13-45', '!!int x'
        raise error(f"{source}: not valid YAML: a value cannot be read ({exc})", "fix the file there") from None


def read_yaml(path: Path, error: type[OrchestratorError], what: str = "file") -> Any:
    """The YAML document of the file at ``path``; a file that cannot be read, or is not UTF-8 text, is ``error``."""
    try:
        with path.open("rb") as handle:  # a file of settings, not /dev/zero: a bounded read
            raw = handle.read(MAX_BYTES + 1)
        text = raw.decode("utf-8")
    except IsADirectoryError:
        raise error(f"{path} is a folder, not a {what}", f"give the {what}'s path") from None
    except OSError as exc:
        raise error(f"cannot read the {what} {path}: {exc.strerror}", "check the path") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path} is not UTF-8 text (byte {exc.start})", f"give a YAML {what}") from None
    if len(raw) > MAX_BYTES:
        raise error(f"{path} is larger than {MAX_BYTES // 2**20} MB: not a {what}", f"give the {what}'s path")
    return parse_yaml(text, str(path), error)
