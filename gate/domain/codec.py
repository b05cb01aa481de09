"""JSON <-> dataclass conversion for the domain types (stdlib only, typed by annotations).

`to_json(obj)` accepts any nested dataclass; `from_json(cls, data)` rebuilds it and raises
`ValueError` naming the field when the data does not fit the type.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from enum import Enum
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")
_hints = cache(typing.get_type_hints)
# What JSON value each scalar type takes, and its words in an error; a bool is never read as a number.
_SCALARS = {float: ((int, float), "a number"), int: (int, "an integer"), bool: (bool, "true/false"),
            str: (str, "a string")}


def to_json(obj: Any) -> Any:
    """A JSON-ready structure (dicts, lists, str, numbers, None) of a domain value."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    return obj


def from_json(cls: type[T], data: Any, *, path: str = "") -> T:
    """Rebuild `cls` from `to_json` output."""
    return _convert(cls, data, path or cls.__name__)


def _convert(tp: Any, data: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, data, path)
            except (TypeError, ValueError) as exc:
                errors.append(str(exc))
        raise ValueError(f"{path}: {data!r} fits none of {tp}: {'; '.join(errors)}")
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list, got {type(data).__name__}")
        return [_convert(item, v, f"{path}[{i}]") for i, v in enumerate(data)]
    if origin is dict:
        _, val = typing.get_args(tp)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected an object, got {type(data).__name__}")
        return {k: _convert(val, v, f"{path}.{k}") for k, v in data.items()}
    if tp is Any:
        return data
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected an object for {tp.__name__}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = _convert(hints[f.name], data[f.name], f"{path}.{f.name}")
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tp(data)
    if tp not in _SCALARS:
        raise TypeError(f"{path}: unsupported type {tp!r}")
    accepted, words = _SCALARS[tp]
    if not isinstance(data, accepted) or (isinstance(data, bool) and tp is not bool):
        raise ValueError(f"{path}: expected {words}, got {data!r}")
    return float(data) if tp is float else data


def named_object(ref: str) -> Any:
    """What a `module:name` reference names (a test seam's or a backend's factory, set by name)."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)
