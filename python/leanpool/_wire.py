"""Dataclass <-> JSON for the wire types: unknown fields tolerated and kept.

Each wire type is a dataclass deriving from :class:`Wire`. Decoding reads the
fields it knows (nested dataclasses, lists and optionals by their type
hints) and keeps every other member in ``extra``, so a newer daemon's
answers still decode and :meth:`Wire.to_dict` gives back what was sent.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from typing import Any, Dict, List, Mapping, Type, TypeVar

T = TypeVar("T", bound="Wire")

#: Field metadata key: leave the field out of ``to_dict`` when it equals its
#: default (the daemon omits it then, e.g. an empty ``declarations``).
OMIT_DEFAULT = "leanpool_omit_default"


def omit_default(default: Any = None, *, factory: Any = None) -> Any:
    """A field the daemon leaves out when it has this default value."""
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={OMIT_DEFAULT: True})
    return dataclasses.field(default=default, metadata={OMIT_DEFAULT: True})


class ResultDecodeError(TypeError):
    """An answer did not have the shape of its documented type."""


@dataclasses.dataclass
class Wire:
    """Base of the wire dataclasses: ``from_dict`` / ``to_dict``.

    ``extra`` (not a dataclass field: not in ``repr`` or ``==``) holds the
    members this client does not know.
    """

    def __post_init__(self) -> None:
        self.extra: Dict[str, Any] = {}

    @classmethod
    def from_dict(cls: Type[T], data: Any) -> T:
        """Decodes ``data`` (a JSON object), keeping unknown members in ``extra``."""
        if not isinstance(data, Mapping):
            raise ResultDecodeError(f"{cls.__name__}: expected a JSON object, got {data!r:.200}")
        hints = _hints(cls)
        known: Dict[str, Any] = {}
        extra: Dict[str, Any] = {}
        names = {f.name for f in dataclasses.fields(cls)}
        for key, value in data.items():
            if key in names:
                known[key] = _decode(hints[key], value, f"{cls.__name__}.{key}")
            else:
                extra[key] = value
        obj = cls(**known)
        obj.extra = extra
        return obj

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object this value stands for (field order, then ``extra``)."""
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.metadata.get(OMIT_DEFAULT) and value == _default_of(f):
                continue
            out[f.name] = _encode(value)
        out.update(getattr(self, "extra", None) or {})
        return out


def _default_of(f: "dataclasses.Field[Any]") -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def _encode(value: Any) -> Any:
    if isinstance(value, Wire):
        return value.to_dict()
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


_HINTS: Dict[type, Dict[str, Any]] = {}


def _hints(cls: type) -> Dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        module = sys.modules[cls.__module__]
        hints = typing.get_type_hints(cls, vars(module))
        _HINTS[cls] = hints
    return hints


def _decode(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return _decode(args[0], value, where)
    if origin in (list, List):
        if not isinstance(value, list):
            raise ResultDecodeError(f"{where}: expected a list, got {value!r:.200}")
        (item,) = typing.get_args(hint)
        return [_decode(item, v, where) for v in value]
    if isinstance(hint, type) and issubclass(hint, Wire):
        return hint.from_dict(value)
    return value  # str, int, float, bool, Literal, Any, Dict: as sent
