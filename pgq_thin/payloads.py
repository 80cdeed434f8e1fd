"""Typed payloads: a dataclass or pydantic model, converted to JSON on enqueue and back into the
type before the handler runs, validated both ways.

- :func:`encode_payload` (enqueue): a dataclass or model instance becomes JSON data; any other
  value is passed on unchanged.
- :func:`validate_payload` (worker): JSON data becomes an instance of the handler's payload
  type, or :class:`PayloadValidationError` says which field is wrong and why.
- :func:`check_payload_type` (registration): refuses a type that cannot be converted, with a
  :class:`TypeError` naming the field, before any job runs.

With pydantic installed, ``pydantic.TypeAdapter`` does the work for dataclasses and models
alike (pydantic's rules; unknown fields of a plain dataclass are refused, as without it).
Without pydantic, a built-in converter handles dataclasses whose fields are of the types in
:data:`SUPPORTED` (nested freely) and refuses any other field type at registration.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import re
from collections.abc import Sequence
from typing import Any

from pgq_thin._payload_codecs import SUPPORTED, Codec, dataclass_codec, type_name
from pgq_thin.errors import one_line as _one_line

__all__ = [
    "SUPPORTED",
    "Codec",
    "PayloadValidationError",
    "check_payload_type",
    "codec",
    "encode_payload",
    "is_model",
    "pydantic_available",
    "validate_payload",
]


class PayloadValidationError(Exception):
    """The payload does not fit its payload type, or is not JSON (in a worker: the job is
    dead at once, ``fatal``: no retry can fix it)."""


def non_json_number(value: Any, path: str = "$") -> str | None:
    """Where ``value`` holds a float JSON cannot carry (NaN, Infinity), as a path such as
    ``$.items[2].price``; None when it holds none. Only looked for after the server refused a
    payload (the common case pays nothing)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} = {value!r}"
    if isinstance(value, dict):
        for key, item in value.items():
            found = non_json_number(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = non_json_number(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def non_json_payload_error(payloads: Sequence[Any]) -> PayloadValidationError | None:
    """The one-line error for the first payload holding NaN or Infinity (None: none does)."""
    for position, payload in enumerate(payloads, 1):
        found = non_json_number(payload)
        if found is not None:
            return PayloadValidationError(
                f"payload at position {position} is not JSON: {found} (JSON has no NaN or "
                "Infinity; send null or a string instead)"
            )
    return None


def is_model(tp: Any) -> bool:
    """True for a type usable as a payload type: a dataclass or a pydantic model.

    A dataclass with a field type that cannot be converted raises :class:`TypeError` here
    (this is the check made when a handler is registered).
    """
    if not isinstance(tp, type):
        return False
    if not (dataclasses.is_dataclass(tp) or hasattr(tp, "model_validate")):
        return False
    check_payload_type(tp)
    return True


def check_payload_type(tp: type) -> None:
    """Raise :class:`TypeError` unless ``tp`` can be a payload type (see the module docstring)."""
    codec(tp)


def codec(tp: type, *, use_pydantic: bool | None = None) -> Codec:
    """The converter of payload type ``tp``: ``decode(json_data)`` gives an instance,
    ``encode(instance)`` JSON data; both raise :class:`PayloadValidationError` on a mismatch.

    ``use_pydantic`` None: pydantic when installed; False: the built-in converter (dataclasses
    of the :data:`SUPPORTED` field types only). Raises :class:`TypeError` for a type that
    cannot be converted. Made once per type.
    """
    return _codec(tp, pydantic_available() if use_pydantic is None else use_pydantic)


def validate_payload(tp: type, payload: Any) -> Any:
    """``payload`` (JSON data) converted into ``tp``, or :class:`PayloadValidationError`."""
    return codec(tp).decode(payload)


def encode_payload(payload: Any) -> Any:
    """A dataclass or pydantic model instance as JSON data; anything else unchanged."""
    dump = getattr(payload, "model_dump", None)
    if dump is not None and not isinstance(payload, type):  # a pydantic model
        try:
            return dump(mode="json")
        except Exception as err:
            raise PayloadValidationError(
                f"payload {type(payload).__name__} cannot be encoded: {_one_line(err)}"
            ) from err
    if dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        return codec(type(payload)).encode(payload)
    return payload


@functools.cache
def pydantic_available() -> bool:
    """Whether pydantic (v2) can be imported; decides which converter is used."""
    try:
        import pydantic
        import pydantic_core  # noqa: F401
    except ImportError:
        return False
    return int(pydantic.VERSION.split(".")[0]) >= 2


@functools.cache
def _codec(tp: type, use_pydantic: bool) -> Codec:
    if use_pydantic:
        return _PydanticCodec(tp)
    if dataclasses.is_dataclass(tp):
        return _Checked(dataclass_codec(tp), PayloadValidationError)
    raise TypeError(
        f"payload type {type_name(tp)} must be a dataclass (or a pydantic model, with pydantic "
        "installed)"
    )


class _Checked:
    """A built-in codec whose failures (ValueError) become :class:`PayloadValidationError`."""

    def __init__(self, inner: Codec, error: type[Exception]) -> None:
        self._inner = inner
        self._error = error

    def decode(self, data: Any) -> Any:
        try:
            return self._inner.decode(data)
        except ValueError as err:
            raise self._error(str(err)) from err

    def encode(self, value: Any) -> Any:
        try:
            return self._inner.encode(value)
        except ValueError as err:
            raise self._error(str(err)) from err


class _PydanticCodec:
    """``pydantic.TypeAdapter`` for a dataclass or model, with unknown fields of plain
    dataclasses refused (pydantic ignores them by default; the built-in converter refuses)."""

    def __init__(self, tp: type) -> None:
        from pydantic import TypeAdapter
        from pydantic_core import SchemaValidator

        self._name = type_name(tp)
        try:
            self._adapter: Any = TypeAdapter(tp)
        except Exception as err:  # PydanticSchemaGenerationError and friends
            raise TypeError(
                f"payload type {self._name} is not supported by pydantic: {_one_line(err)}"
            ) from err
        schema = copy.deepcopy(self._adapter.core_schema)
        self._validator: Any = (
            SchemaValidator(schema) if _forbid_unknown_fields(schema) else self._adapter.validator
        )

    def decode(self, data: Any) -> Any:
        from pydantic import ValidationError

        try:
            return self._validator.validate_python(data)
        except ValidationError as err:
            raise PayloadValidationError(
                f"payload does not match {self._name}: {_pydantic_errors(err)}"
            ) from err

    def encode(self, value: Any) -> Any:
        try:
            return self._adapter.dump_python(value, mode="json", warnings="error")
        except Exception as err:  # PydanticSerializationError
            raise PayloadValidationError(
                f"payload {self._name} cannot be encoded: {_serializer_problems(err)}"
            ) from err


_UNEXPECTED = re.compile(
    r"Expected `(?P<want>[^`]+)`.*?field_name='(?P<field>[^']*)', "
    r"input_value=(?P<value>.*?), input_type=(?P<type>\w+)\]"
)


def _serializer_problems(err: BaseException) -> str:
    """Pydantic's serializer warnings (a header line, then one line per field) as one line
    naming each field: ``field 'n' must be int, got str 'not-an-int'; ...``."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    problems = []
    for line in lines:
        m = _UNEXPECTED.search(line)
        if m is not None:
            problems.append(
                f"field {m['field']!r} must be {m['want']}, got {m['type']} {m['value']}"
            )
    if problems:
        return "; ".join(problems)
    body = [line for line in lines if not line.endswith(":")] or lines
    return "; ".join(body) or type(err).__name__


def _forbid_unknown_fields(schema: Any) -> bool:
    """Set ``extra_behavior="forbid"`` on every plain (non-pydantic) dataclass of a core
    schema that does not say otherwise; True when anything was changed."""
    changed = False
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            cls = node.get("cls")
            if (
                node.get("type") == "dataclass"
                and isinstance(cls, type)
                and not hasattr(cls, "__pydantic_validator__")
                and isinstance(node.get("schema"), dict)
                and "extra_behavior" not in node["schema"]
            ):
                node["schema"]["extra_behavior"] = "forbid"
                changed = True
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return changed


def _pydantic_errors(err: Any) -> str:
    """A pydantic ValidationError on one line: ``field.path: message; ...``."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e.get("loc", ())) or "(payload)"
        parts.append(f"{loc}: {e.get('msg', '')}")
    return "; ".join(parts)
