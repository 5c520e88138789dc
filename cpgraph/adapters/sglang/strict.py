"""Strict stand-ins: an object that has only the attributes the adapter gave it, and says so when read otherwise.

A stand-in for something a server hands the release (its server arguments, the model runner's and the CP
graph runner's state) must never answer a read it was not given: a made-up value is judged as if the release
had it. ``strict(cls, owner, given)`` builds an instance of ``cls`` (a release class, so its real methods
run) holding only ``given``; reading anything else raises ``NotProvided``, an AttributeError, so the
release's own ``getattr(obj, name, default)`` gets its default (the release's behaviour when the name is
unset) and a plain read stops the check, cited at the reading line (glue.classify: exit 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class NotProvided(AttributeError):
    """The release read an attribute the adapter does not provide (``owner.name``)."""


def _not_provided(self: object, name: str) -> Any:
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    owner = type(self).__dict__.get("_cpgraph_owner", type(self).__name__)
    raise NotProvided(f"{owner}.{name} is read, and neither the release's own code nor the adapter sets it")


_CLASSES: dict[tuple[type, str], type] = {}


def strict_class(cls: type, owner: str) -> type:
    """``cls`` (a release class, or ``object``) with reads of unset attributes refused (one class per pair)."""
    key = (cls, owner)
    if key not in _CLASSES:
        made = type(f"Strict{cls.__name__}", (cls,), {"__getattr__": _not_provided, "_cpgraph_owner": owner})
        made.__abstractmethods__ = frozenset()  # type: ignore[attr-defined]
        _CLASSES[key] = made
    return _CLASSES[key]


def strict(cls: type, owner: str, given: Mapping[str, object]) -> Any:
    """An instance of ``cls`` built without its constructor, holding exactly ``given``."""
    made: Any = object.__new__(strict_class(cls, owner))
    made.__dict__.update(given)
    return made
