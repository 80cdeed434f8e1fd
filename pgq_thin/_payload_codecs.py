"""The built-in payload converter (used when pydantic is not installed).

A dataclass type is compiled once into a tree of small converters, one per field type; a
field type outside :data:`SUPPORTED` is refused while compiling (at registration). Each
converter turns JSON data into the field's type (``decode``) and back (``encode``), checking
the value on the way; a mismatch raises :class:`ValueError` whose text names the field path
(``address.city``, ``tags[1]``) and what was expected.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
import uuid
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

__all__ = ["SUPPORTED", "Codec", "dataclass_codec", "type_name"]

SUPPORTED = (
    "str, int, float, bool, None, Any, datetime and date (ISO 8601 text), UUID (text), "
    "Decimal (text), Enum subclasses (by value), nested dataclasses, list[X], dict[str, X], "
    "X | None (Optional[X]), and plain list and dict (JSON values, not checked inside)"
)


class Codec(Protocol):
    """Converts one payload type: JSON data to an instance and back."""

    def decode(self, data: Any) -> Any: ...

    def encode(self, value: Any) -> Any: ...


def type_name(tp: Any) -> str:
    """A short readable name of a type or type hint."""
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return str(tp).replace("typing.", "")


def dataclass_codec(tp: type) -> Codec:
    """The converter of dataclass ``tp``; :class:`TypeError` for an unsupported field type."""
    return _Root(type_name(tp), _compile(tp, {}, type_name(tp)))


# --- where a value sits, for messages ----------------------------------------------------------


class _At:
    def __init__(self, root: str, path: str = "") -> None:
        self.root = root
        self.path = path

    def field(self, name: str) -> _At:
        return _At(self.root, f"{self.path}.{name}" if self.path else name)

    def item(self, key: object) -> _At:
        return _At(self.root, f"{self.path}[{key!r}]")

    def where(self) -> str:
        return f"field {self.path!r} of {self.root}" if self.path else f"for {self.root}"

    def fail(self, expected: str, got: Any) -> ValueError:
        return ValueError(f"payload {self.where()} must be {expected}, got {_got(got)}")


def _got(value: Any) -> str:
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"str {text!r}"
    return type(value).__name__


class _Conv(Protocol):
    def decode(self, data: Any, at: _At) -> Any: ...

    def encode(self, value: Any, at: _At) -> Any: ...


class _Root:
    def __init__(self, name: str, conv: _Conv) -> None:
        self._name = name
        self._conv = conv

    def decode(self, data: Any) -> Any:
        return self._conv.decode(data, _At(self._name))

    def encode(self, value: Any) -> Any:
        return self._conv.encode(value, _At(self._name))


# --- converters ------------------------------------------------------------------------------


class _Any:
    def decode(self, data: Any, at: _At) -> Any:
        return data

    def encode(self, value: Any, at: _At) -> Any:
        return value


class _Exact:
    """A JSON type taken as it is: str, bool, None, plain list and dict."""

    def __init__(self, tp: type, name: str) -> None:
        self._tp = tp
        self._name = name

    def _fits(self, value: Any) -> bool:
        if self._tp is bool:
            return isinstance(value, bool)
        return isinstance(value, self._tp)

    def decode(self, data: Any, at: _At) -> Any:
        if not self._fits(data):
            raise at.fail(self._name, data)
        return data

    encode = decode


class _Int:
    def decode(self, data: Any, at: _At) -> Any:
        if isinstance(data, bool) or not isinstance(data, int):
            raise at.fail("int", data)
        return data

    encode = decode


class _Float:
    def decode(self, data: Any, at: _At) -> Any:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise at.fail("float", data)
        return float(data)

    encode = decode


class _Text:
    """A type carried as text in JSON: datetime, date, UUID, Decimal."""

    def __init__(self, tp: type, what: str) -> None:
        self._tp = tp
        self._what = what

    def decode(self, data: Any, at: _At) -> Any:
        if self._tp is Decimal and isinstance(data, int | float) and not isinstance(data, bool):
            data = str(data)
        if not isinstance(data, str):
            raise at.fail(self._what, data)
        try:
            if self._tp is datetime:
                return datetime.fromisoformat(data)
            if self._tp is date:
                return date.fromisoformat(data)
            if self._tp is uuid.UUID:
                return uuid.UUID(data)
            return Decimal(data)
        except (ValueError, InvalidOperation):
            raise at.fail(self._what, data) from None

    def encode(self, value: Any, at: _At) -> Any:
        if not isinstance(value, self._tp) or (self._tp is date and isinstance(value, datetime)):
            raise at.fail(self._tp.__name__, value)
        if isinstance(value, date):
            return value.isoformat()
        return str(value)


class _Enum:
    def __init__(self, tp: type[enum.Enum]) -> None:
        self._tp = tp

    def decode(self, data: Any, at: _At) -> Any:
        try:
            return self._tp(data)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in self._tp)
            raise at.fail(f"one of {allowed} ({self._tp.__name__})", data) from None

    def encode(self, value: Any, at: _At) -> Any:
        if not isinstance(value, self._tp):
            raise at.fail(self._tp.__name__, value)
        return value.value


class _Optional:
    def __init__(self, inner: _Conv) -> None:
        self._inner = inner

    def decode(self, data: Any, at: _At) -> Any:
        return None if data is None else self._inner.decode(data, at)

    def encode(self, value: Any, at: _At) -> Any:
        return None if value is None else self._inner.encode(value, at)


class _List:
    def __init__(self, inner: _Conv) -> None:
        self._inner = inner

    def decode(self, data: Any, at: _At) -> Any:
        if not isinstance(data, list):
            raise at.fail("a list", data)
        return [self._inner.decode(v, at.item(i)) for i, v in enumerate(data)]

    def encode(self, value: Any, at: _At) -> Any:
        if not isinstance(value, list | tuple):
            raise at.fail("a list", value)
        return [self._inner.encode(v, at.item(i)) for i, v in enumerate(value)]


class _Dict:
    def __init__(self, inner: _Conv) -> None:
        self._inner = inner

    def _each(self, data: Any, at: _At, decode: bool) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise at.fail("an object", data)
        out = {}
        for key, v in data.items():
            if not isinstance(key, str):
                raise at.fail("an object with text keys", key)
            conv = self._inner.decode if decode else self._inner.encode
            out[key] = conv(v, at.item(key))
        return out

    def decode(self, data: Any, at: _At) -> Any:
        return self._each(data, at, decode=True)

    def encode(self, value: Any, at: _At) -> Any:
        return self._each(value, at, decode=False)


class _Dataclass:
    def __init__(self, tp: type) -> None:
        self._tp = tp
        self._fields: dict[str, _Conv] = {}  # filled by _compile (a dataclass may nest itself)
        self._required: list[str] = []

    def decode(self, data: Any, at: _At) -> Any:
        if not isinstance(data, dict):
            raise ValueError(
                f"payload {at.where()} must be a JSON object, got {type(data).__name__}"
            )
        unknown = sorted(set(data) - set(self._fields))
        if unknown:
            raise ValueError(f"payload {at.where()} has unknown field(s): {', '.join(unknown)}")
        missing = [name for name in self._required if name not in data]
        if missing:
            raise ValueError(f"payload {at.where()} misses required field(s): {', '.join(missing)}")
        values = {name: self._fields[name].decode(v, at.field(name)) for name, v in data.items()}
        try:
            return self._tp(**values)
        except Exception as err:  # __post_init__ checks of the user's own
            name = self._tp.__name__
            raise ValueError(f"payload {at.where()} is refused by {name}: {err}") from err

    def encode(self, value: Any, at: _At) -> Any:
        if not isinstance(value, self._tp):
            raise at.fail(self._tp.__name__, value)
        return {
            name: conv.encode(getattr(value, name), at.field(name))
            for name, conv in self._fields.items()
        }


# --- compiling a type ------------------------------------------------------------------------

_TEXT_TYPES: dict[type, str] = {
    datetime: "an ISO 8601 datetime",
    date: "an ISO 8601 date",
    uuid.UUID: "a UUID",
    Decimal: "a decimal number",
}


def _compile(hint: Any, seen: dict[type, _Dataclass], where: str) -> _Conv:
    if hint is Any:
        return _Any()
    if hint is None or hint is type(None):
        return _Exact(type(None), "null")
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return _Optional(_compile(rest[0], seen, where))
    elif origin is list and len(args) == 1:
        return _List(_compile(args[0], seen, f"{where}[]"))
    elif origin is dict and len(args) == 2 and args[0] is str:
        return _Dict(_compile(args[1], seen, f"{where}[]"))
    elif origin is None and isinstance(hint, type):
        return _compile_class(hint, seen, where)
    raise _unsupported(hint, where)


def _compile_class(tp: type, seen: dict[type, _Dataclass], where: str) -> _Conv:
    if issubclass(tp, enum.Enum):
        return _Enum(tp)
    if tp is bool:
        return _Exact(bool, "bool")
    if tp is int:
        return _Int()
    if tp is float:
        return _Float()
    if tp in (str, list, dict):
        return _Exact(tp, tp.__name__)
    if tp in _TEXT_TYPES:
        return _Text(tp, _TEXT_TYPES[tp])
    if dataclasses.is_dataclass(tp):
        if tp in seen:
            return seen[tp]
        conv = seen[tp] = _Dataclass(tp)
        try:
            hints = typing.get_type_hints(tp)
        except Exception as err:
            raise TypeError(f"cannot resolve the field types of {tp.__name__}: {err}") from err
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            conv._fields[f.name] = _compile(hints.get(f.name, Any), seen, f"{tp.__name__}.{f.name}")
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                conv._required.append(f.name)
        return conv
    raise _unsupported(tp, where)


def _unsupported(hint: Any, where: str) -> TypeError:
    return TypeError(
        f"payload type {where}: {type_name(hint)} is not supported without pydantic "
        f"(supported: {SUPPORTED}); install pydantic (pgq-thin[pydantic]) for more types"
    )
