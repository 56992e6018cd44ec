"""The one message API: buffering until a sink attaches, de-duplication by key, threads."""

from __future__ import annotations

import logging
import threading

import pytest

from fxdesk import messages


def test_messages_wait_for_a_sink_then_arrive_in_order() -> None:
    messages.info("one")
    messages.warning("two")
    received: list[messages.Message] = []
    detach = messages.hub.attach(received.append)
    messages.error("three")
    assert [m.text for m in received] == ["one", "two", "three"]
    assert [m.level for m in received] == [
        messages.Level.INFO,
        messages.Level.WARNING,
        messages.Level.ERROR,
    ]
    detach()
    messages.info("four")
    assert len(received) == 3


def test_same_key_and_text_is_shown_once_but_logged_each_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    received: list[messages.Message] = []
    messages.hub.attach(received.append)
    with caplog.at_level(logging.WARNING, logger="fxdesk.messages"):
        for _ in range(5):
            messages.warning("The provider is rate limited; retrying.", key="rate")
    messages.warning("The provider is rate limited again.", key="rate")  # new text: shown
    messages.warning("The provider is rate limited; retrying.")  # no key: never de-duplicated
    assert [m.text for m in received] == [
        "The provider is rate limited; retrying.",
        "The provider is rate limited again.",
        "The provider is rate limited; retrying.",
    ]
    assert caplog.text.count("rate limited; retrying") == 6


def test_a_withdrawn_message_is_taken_away_and_can_be_said_again_at_once() -> None:
    messages.warning("1 approval waiting for you.", key="approvals")  # buffered: no sink yet
    messages.withdraw("approvals")  # answered before any window showed it
    received: list[messages.Message] = []
    messages.hub.attach(received.append)
    assert received == []
    messages.warning("1 approval waiting for you.", key="approvals")
    messages.withdraw("approvals")
    messages.warning("1 approval waiting for you.", key="approvals")  # a new one, at once
    assert [(m.text, m.withdrawn) for m in received] == [
        ("1 approval waiting for you.", False),
        ("", True),
        ("1 approval waiting for you.", False),
    ]


def test_details_travel_with_errors() -> None:
    received: list[messages.Message] = []
    messages.hub.attach(received.append)
    messages.error("Bug", details="Traceback ...")
    assert received[0].details == "Traceback ..."


def test_a_failing_sink_does_not_stop_the_others() -> None:
    received: list[str] = []

    def broken(message: messages.Message) -> None:
        raise RuntimeError("sink broke")

    messages.hub.attach(broken)
    messages.hub.attach(lambda m: received.append(m.text))
    messages.info("still delivered")
    assert received == ["still delivered"]


def test_posting_from_many_threads_loses_nothing() -> None:
    received: list[messages.Message] = []
    messages.hub.attach(received.append)
    threads = [
        threading.Thread(target=lambda n=n: [messages.info(f"{n}-{i}") for i in range(100)])
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(received) == 800
