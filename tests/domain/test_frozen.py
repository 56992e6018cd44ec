"""``quick_init``: the frozen dataclasses built on every transition keep their behaviour."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from fxdesk.domain.frozen import quick_init
from fxdesk.domain.model import WorkKind, WorkStatus
from fxdesk.domain.work import ControlEvent, WorkItem


@dataclasses.dataclass(frozen=True)
class _Plain:
    name: str
    count: int = 0
    note: str | None = None


_Quick = quick_init(
    dataclasses.dataclass(frozen=True)(
        type(
            "_Quick",
            (),
            {
                "__annotations__": {"name": "str", "count": "int", "note": "str | None"},
                "count": 0,
                "note": None,
            },
        )
    )
)


def test_same_parameters_and_defaults_as_the_dataclass() -> None:
    plain = inspect.signature(_Plain)
    quick = inspect.signature(_Quick)
    assert [(p.name, p.default, p.kind) for p in quick.parameters.values()] == [
        (p.name, p.default, p.kind) for p in plain.parameters.values()
    ]
    assert vars(_Quick("a")) == vars(_Plain("a"))
    assert vars(_Quick("a", note="n", count=2)) == {"name": "a", "count": 2, "note": "n"}
    with pytest.raises(TypeError):
        _Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Quick("a", size=1)  # type: ignore[call-arg]


def test_still_frozen_equal_hashable_and_replaceable() -> None:
    item = WorkItem("w1", "s1", 1, "person", WorkKind.PROMPT, "hi", WorkStatus.PENDING, None, 5, 5)
    same = WorkItem(
        id="w1",
        session_id="s1",
        position=1,
        source_id="person",
        kind=WorkKind.PROMPT,
        content="hi",
        status=WorkStatus.PENDING,
        reason=None,
        created_at_ms=5,
        updated_at_ms=5,
    )
    assert item == same and hash(item) == hash(same) and repr(item) == repr(same)
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.status = WorkStatus.RUNNING  # type: ignore[misc]
    running = dataclasses.replace(item, status=WorkStatus.RUNNING)
    assert running.status is WorkStatus.RUNNING and running.id == "w1"
    event = ControlEvent("s1", 1, 1, "work_transition", 5)
    assert (event.work_id, event.previous, event.current, event.reason) == (None,) * 4


def test_refuses_a_class_it_would_change() -> None:
    @dataclasses.dataclass(frozen=True)
    class WithPost:
        name: str

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass
    class Mutable:
        name: str

    @dataclasses.dataclass(frozen=True)
    class Factory:
        names: list[str] = dataclasses.field(default_factory=list)

    for cls in (WithPost, Mutable, Factory):
        with pytest.raises(TypeError):
            quick_init(cls)
