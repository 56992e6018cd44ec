"""The MCP configuration as fxdesk reads it (domain.mcp): shapes, problems, names, the hash."""

from __future__ import annotations

from fxdesk.domain.mcp import (
    NAME_LIMIT,
    Origin,
    Transport,
    backoff,
    config_hash,
    merge,
    tool_name,
)


def test_stdio_and_http_servers_and_what_is_wrong_with_the_others() -> None:
    config = merge(
        Origin.WORKSPACE,
        [
            (
                ".fxdesk/mcp.json",
                {
                    "mcpServers": {
                        "files": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}},
                        "web": {"type": "http", "url": "https://e.com/mcp"},
                        "old": {"type": "sse", "url": "https://e.com/sse"},
                        "empty": {},
                    }
                },
            ),
            (".mcp.json", {"mcpServers": {"files": {"command": "other"}, "more": {"url": "x"}}}),
        ],
    )
    by_name = {s.name: s for s in config.servers}
    assert by_name["files"].command == "npx"  # .fxdesk/mcp.json wins for a name in both
    assert by_name["files"].env == (("A", "1"),)
    assert by_name["web"].transport is Transport.HTTP
    assert "SSE transport is not supported" in by_name["old"].problem
    assert "give a “command”" in by_name["empty"].problem
    assert "http:// or https://" in by_name["more"].problem
    assert not by_name["files"].problem and not by_name["web"].problem


def test_the_hash_ignores_layout_but_not_content() -> None:
    assert config_hash({"a": {"b": 1, "c": 2}}) == config_hash({"a": {"c": 2, "b": 1}})
    assert config_hash({"a": {"b": 1}}) != config_hash({"a": {"b": 2}})


def test_tool_names_are_namespaced_safe_and_short_enough() -> None:
    assert tool_name("github", "create_issue") == "mcp__github__create_issue"
    assert tool_name("my server", "a.b") == "mcp__my_server__a_b"
    long_a, long_b = tool_name("s", "x" * 80 + "a"), tool_name("s", "x" * 80 + "b")
    assert len(long_a) == NAME_LIMIT and long_a != long_b


def test_backoff_grows_then_repeats_its_last_pause() -> None:
    assert [backoff(n, (1.0, 2.0, 5.0)) for n in (1, 2, 3, 4, 9)] == [1.0, 2.0, 5.0, 5.0, 5.0]
