"""A quicker ``__init__`` for the frozen dataclasses built on every durable transition.

``@dataclass(frozen=True)`` makes an ``__init__`` that sets each field with
``object.__setattr__(self, name, value)``: ~0.2 µs a field, and a transition builds six such
objects (~60 fields: the item, its event, the record before and after, the change, the
session's snapshot). ``quick_init`` gives the class an ``__init__`` with the same parameters
(names, order, defaults) that sets the instance's dictionary in one step, as
``object.__setattr__`` would field by field; everything else (frozen assignment, equality,
hashing, ``repr``, ``dataclasses.replace``) is the dataclass's own (issue 17).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Replace a frozen dataclass's ``__init__``; apply it above ``@dataclass(frozen=True)``.

    Only for classes without ``__slots__``, ``__post_init__``, ``InitVar``s, ``init=False``
    fields or default factories (it says so when used on another)."""
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__} is not a frozen dataclass")
    if hasattr(cls, "__slots__") or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has __slots__ or __post_init__")
    fields = dataclasses.fields(cls)
    defaults: dict[str, Any] = {}
    params = []
    for field in fields:
        if not field.init or field.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{field.name} is not a plain init field")
        if field.default is dataclasses.MISSING:
            params.append(field.name)
        else:
            defaults[f"_default_{field.name}"] = field.default
            params.append(f"{field.name}=_default_{field.name}")
    if len(fields) != len(getattr(cls, "__dataclass_fields__")):  # noqa: B009
        raise TypeError(f"{cls.__name__} has InitVar or ClassVar pseudo-fields")
    body = ", ".join(f"{field.name!r}: {field.name}" for field in fields)
    source = (
        f"def __init__(self, {', '.join(params)}):\n    _set_dict(self, '__dict__', {{{body}}})\n"
    )
    namespace: dict[str, Any] = {"_set_dict": object.__setattr__, **defaults}
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    setattr(cls, "__init__", init)  # noqa: B010 - mypy: no assigning to a method
    return cls
