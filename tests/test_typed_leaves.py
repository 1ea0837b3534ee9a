"""Every document and message is typed to its leaves: no field is a bare dict (``dict[str, Any]``) or a list of
dicts, but what holds outside input as it came (``extra``, a study cell's variables) and the fields listed below,
not typed yet, which may only leave the list."""
from __future__ import annotations

import types
import typing
from typing import Any, get_args, get_origin

import remote_agent.board_messages as board_messages
import remote_agent.messages as messages
from orchestrator.documents import attribution, fleet, record, run, run_sections, study, summary, summary_sections
from remote_agent.wire import Message

# outside input kept as it came: a study's variables are the study file's own values
AS_GIVEN = {"RunStudy.variables", "StudyCell.variables", "SessionCall.request"}
# not typed yet: each a section of its own still to come (this list only shrinks; it is empty)
NOT_YET: set[str] = set()


def _bare(annotation: Any) -> bool:
    """Any, a dict whose values are Any or dicts, or a list of dicts, at any depth under Optional."""
    if annotation is Any:
        return True
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_bare(arg) for arg in args if arg is not type(None))
    if origin is dict:
        return args[1] is Any or get_origin(args[1]) is dict or _bare(args[1])
    if origin is list:
        return get_origin(args[0]) is dict or _bare(args[0])
    return False


def _records() -> list[type[Message]]:
    """Every record the modules declare, and every record their fields hold, at any depth."""
    found: set[type[Message]] = set()
    modules = (messages, board_messages, record, run, run_sections, study, fleet, summary, summary_sections,
               attribution)
    todo = [value for module in modules for value in vars(module).values()]
    while todo:
        value = todo.pop()
        if isinstance(value, type) and issubclass(value, Message) and value is not Message and value not in found:
            found.add(value)
            todo += [kind for annotation in value._fields().values() for kind in _kinds(annotation)]
    return sorted(found, key=lambda kind: kind.__name__)


def _kinds(annotation: Any) -> list[Any]:
    """The types an annotation names, under Optional, list and dict."""
    return [annotation, *(kind for arg in get_args(annotation) for kind in _kinds(arg))]


def test_no_field_is_a_bare_dict_but_outside_input_and_the_ones_not_typed_yet():
    bare = {f"{kind.__name__}.{name}" for kind in _records() for name, annotation in kind._fields().items()
            if _bare(annotation)}
    assert bare - AS_GIVEN - NOT_YET == set(), "a new untyped field: give it a Record of its own"
    assert NOT_YET - bare == set(), "typed now: take it off NOT_YET"


def test_the_app_as_run_json_keeps_it_has_every_field_of_the_app_spec():
    """run.json's app (RunApp) is written and read back field by field: a field the spec gains must be kept too."""
    from dataclasses import fields

    from orchestrator.documents.run_sections import RunApp
    from orchestrator.inventory.catalog import AppSpec
    assert set(RunApp._fields()) == {spec.name for spec in fields(AppSpec)}
