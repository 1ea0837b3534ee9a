"""What a message is: a record of typed fields, its JSON object (``to_wire``) and how one is read (``from_wire``).

Standard library only, Python 3.6 syntax (the agent's). A message is a class whose annotated attributes are its
fields. Read, it is lenient as run folders are: keys it does not know are kept (``extra``), a value of the wrong
kind reads as missing (the field's default), a nested message or list of them is read the same way down; read
``strict``, a value of the wrong kind or a key the message does not declare is an error (what a side builds itself,
or the agent's requests, as Ansible's argument specs refuse an option they do not know). The messages themselves are
in messages.py.
"""
import copy
import types
import typing
from typing import Any, Callable, ClassVar, Dict, FrozenSet, Generic, List, Optional, Tuple, Type, TypeVar

if typing.TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda cls: cls

M = TypeVar("M", bound="Message")

PROTOCOL = 1
_UNION_TYPES = tuple(kind for kind in (getattr(types, "UnionType", None),) if kind is not None)  # 3.10's X | Y


@dataclass_transform()
class Message(object):
    """A record of typed fields; subclasses declare them as annotated class attributes with defaults."""
    _field_types: ClassVar[Any] = None
    _wire_keys: ClassVar[Dict[str, str]] = {}  # a field whose JSON key is not its name (else: less a final _)

    def __init__(self, *args: Any, **values: Any) -> None:
        """Fields by name, or the first ones in the order they are declared (as a dataclass takes them)."""
        names = list(self._fields())
        if len(args) > len(names):
            raise TypeError("{} takes {} fields, {} given".format(type(self).__name__, len(names), len(args)))
        for name, value in zip(names, args):
            if name in values:
                raise TypeError("{} got {} twice".format(type(self).__name__, name))
            values[name] = value
        for name, default in self._defaults().items():
            setattr(self, name, values.pop(name) if name in values else copy.deepcopy(default))
        if values:
            raise TypeError("{} has no field {}".format(type(self).__name__, ", ".join(sorted(values))))
        self.extra: Dict[str, Any] = {}
        self.read_keys: Optional[FrozenSet[str]] = None  # the keys from_wire found (None: made here)
        # a field read without some of its items (of the wrong kind): what was read of it, and the value as it was
        self.as_read: Dict[str, Tuple[Any, Any]] = {}

    def set(self: M, **values: Any) -> M:
        """Fields changed in place; a name the message does not declare is a TypeError, as for the constructor. A
        field set is written as a field read is, even at its default: it was given."""
        unknown = set(values) - set(self._fields())
        if unknown:
            raise TypeError("{} has no field {}".format(type(self).__name__, ", ".join(sorted(unknown))))
        for name, value in values.items():
            setattr(self, name, value)
        if self.read_keys is not None:
            self.read_keys = self.read_keys | frozenset(self._key(name) for name in values)
        return self

    def replace(self: M, **values: Any) -> M:
        """A copy with these fields changed (as dataclasses.replace makes one)."""
        changed = copy.copy(self)
        changed.extra, changed.as_read = dict(self.extra), dict(self.as_read)
        return changed.set(**values)

    @classmethod
    def _fields(cls) -> Dict[str, Any]:
        """Each field's name and type, the base classes' first (forward references resolved once)."""
        if "_field_types" not in cls.__dict__:
            cls._field_types = {name: kind for name, kind in typing.get_type_hints(cls).items()
                                if not _is_class_var(kind)}
        found: Dict[str, Any] = cls._field_types
        return found

    @classmethod
    def _defaults(cls) -> Dict[str, Any]:
        return {name: getattr(cls, name, None) for name in cls._fields()}

    @classmethod
    def _key(cls, name: str) -> str:
        """The field's JSON key: a field named after a Python keyword (import_) is the keyword on the wire."""
        return cls._wire_keys.get(name) or name.rstrip("_")

    def _left_out(self) -> typing.Collection[str]:
        """The keys not written while their value is unset, read or not (a value of the wrong kind read for one is
        written back as it was): none for a message, whose every field the other side reads; a document's own
        choice."""
        return ()

    def to_wire(self, version: bool = True) -> Dict[str, Any]:
        """The JSON object; version: with ``v`` (what a side sends). A message read from_wire writes back the
        keys it read, and the others only once they differ from their default: a stored document read and
        written again loses nothing and gains nothing."""
        wire = dict(self.extra)
        defaults = self._defaults()
        left_out = self._left_out()
        for name in self._fields():
            key, value = self._key(name), getattr(self, name)
            if key in self.extra and value == defaults[name]:
                continue  # read with a value of the wrong kind: written back as it was
            if key in self.as_read and value == self.as_read[key][0]:
                wire[key] = self.as_read[key][1]  # read without its items of the wrong kind, unchanged since
                continue
            if key in left_out and key not in self.extra:
                continue
            if self.read_keys is None or key in self.read_keys or value != defaults[name]:
                wire[key] = _to_wire(value, version)
        if version:
            wire["v"] = PROTOCOL
        return wire

    @classmethod
    def from_wire(cls: Type[M], wire: Any, strict: bool = False) -> M:
        """The message a JSON object holds (None or not an object: every field at its default). strict: a
        value of the wrong kind or a key it does not declare is a ValueError, for what a side builds itself rather
        than reads."""
        if strict and not isinstance(wire, dict):
            raise ValueError("{} needs a JSON object, not {!r}".format(cls.__name__, wire))
        wire = wire if isinstance(wire, dict) else {}
        message = cls()
        known = {"v"}
        wrong = {}
        for name, kind in cls._fields().items():
            key = cls._key(name)
            if key in wire:
                skipped: List[Any] = []
                ok, value = _read(kind, wire[key], strict, skipped)
                if ok:
                    setattr(message, name, value)
                    known.add(key)
                    if skipped:
                        message.as_read[key] = (copy.deepcopy(value), wire[key])
                elif strict:
                    raise ValueError("{}.{} cannot be {!r}".format(cls.__name__, key, wire[key]))
                else:
                    wrong[key] = wire[key]
            else:
                known.add(key)
        message.extra = {key: value for key, value in wire.items() if key not in known}  # unknown, or wrong
        if strict and message.extra:
            raise ValueError("{} has no field {}".format(cls.__name__, ", ".join(sorted(message.extra))))
        message.read_keys = frozenset(known & set(wire))
        return message

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n in self._fields()) \
            and self.extra == other.extra

    def __repr__(self) -> str:
        shown = ", ".join("{}={!r}".format(name, getattr(self, name)) for name in self._fields())
        return "{}({})".format(type(self).__name__, shown)


def _is_class_var(kind: Any) -> bool:
    """ClassVar[X]: a class's constant, not a field (3.6's typing spells it otherwise than 3.7's)."""
    return kind is typing.ClassVar or getattr(kind, "__origin__", None) is typing.ClassVar or \
        type(kind).__name__ == "_ClassVar"


def _to_wire(value: Any, version: bool = True) -> Any:
    if isinstance(value, Message):
        return value.to_wire(version)
    if isinstance(value, (list, tuple)):
        if set(map(type, value)) <= _SCALARS:  # a frame list of 60 000 numbers: no call per item
            return list(value)
        return [_to_wire(item, version) for item in value]
    if isinstance(value, dict):
        return {key: _to_wire(item, version) for key, item in value.items()}
    return value


_PLAIN = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}
_SCALARS = frozenset((str, int, float, bool, type(None)))
# the exact types each plain kind's items may be (True is an int to isinstance, never to a list of ints)
_PLAIN_ITEMS = {kind: frozenset(types) for kind, types in _PLAIN.items()}


def _read(kind: Any, value: Any, strict: bool = False, skipped: Optional[List[Any]] = None) -> Tuple[bool, Any]:
    """(whether value is of kind, the value read as kind): the rules of from_wire, for one field; strict, the
    items of a list or dict of the wrong kind are a ValueError rather than left out (and noted in ``skipped``). A
    whole number is a float's value as it is: read and written again, 5 stays 5."""
    if kind is Any:
        return True, value
    if isinstance(kind, type) and issubclass(kind, Message):
        return isinstance(value, dict), kind.from_wire(value, strict) if isinstance(value, dict) else None
    if kind in _PLAIN:
        fits = isinstance(value, _PLAIN[kind]) and (kind is bool or not isinstance(value, bool))
        return fits, value
    optional = _union_arg(kind)
    if optional is not None:
        return (True, None) if value is None else _read(optional, value, strict, skipped)
    args: Any = getattr(kind, "__args__", None) or ()
    origin = getattr(kind, "__origin__", None)
    if origin in (list, List):
        if not isinstance(value, list):
            return False, None
        allowed = _plain_items(args[0])
        if allowed is not None and set(map(type, value)) <= allowed:
            return True, list(value)  # every item of the kind: read whole, without a call per item
        return True, [item for item in (_item(args[0], item, strict, skipped) for item in value) if item is not _SKIP]
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            return False, None
        items = ((key, _item(args[1], item, strict, skipped)) for key, item in value.items())
        return True, {key: item for key, item in items if item is not _SKIP}
    return isinstance(value, kind), value


_SKIP = object()


def _union_arg(kind: Any) -> Any:
    """X, of Optional[X] (or of X | None on the host): a union's first kind that is not None; None for a kind that
    is no union."""
    if getattr(kind, "__origin__", None) is typing.Union or isinstance(kind, _UNION_TYPES):
        return next(arg for arg in kind.__args__ if arg is not type(None))
    return None


def _plain_items(kind: Any) -> Optional[FrozenSet[type]]:
    """The exact types a list's items may be for it to be read whole: a plain kind's, or an Optional plain kind's
    and None's; None for any other kind of item."""
    if kind in _PLAIN_ITEMS:
        found: FrozenSet[type] = _PLAIN_ITEMS[kind]
        return found
    optional = _union_arg(kind)
    return _PLAIN_ITEMS[optional] | {type(None)} if optional in _PLAIN_ITEMS else None


def _item(kind: Any, value: Any, strict: bool, skipped: Optional[List[Any]]) -> Any:
    ok, read = _read(kind, value, strict, skipped)
    if ok:
        return read
    if strict:
        raise ValueError("{!r} is not a {}".format(value, getattr(kind, "__name__", kind)))
    if skipped is not None:
        skipped.append(value)
    return _SKIP


Q = TypeVar("Q", bound=Message)
A = TypeVar("A", bound=Message)


class Command(Generic[Q, A]):
    """An agent command: its name, the request it reads (strictly: an unknown key or a value of the wrong kind is
    a bad_request failure), its answer, and its handler ("module.function" in the agent, imported when it runs:
    a board's Python starts slowly enough that every call gains from loading nothing else). A handler takes the
    request and returns the answer; a conversational one (attach) takes the function that writes its lines too.
    The table is commands.py."""

    def __init__(self, name: str, request: Type[Q], answer: Type[A], handler: str, in_session: bool = True,
                 conversational: bool = False) -> None:
        self.name = name
        self.request = request
        self.answer = answer
        self.module, self.function = handler.rsplit(".", 1)
        self.in_session = in_session  # answered inside a session too (one process answering a run's calls)
        self.conversational = conversational

    def __repr__(self) -> str:
        return "Command({})".format(self.name)
