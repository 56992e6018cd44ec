"""``fxdesk search`` in a real process over a real data folder (issue 18 item 4): what two sessions
said is found by words in any order, the matches bracketed; --json for scripts; nothing found
says so. The model is the scripted provider."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_sessions import Setup


def test_search_finds_what_was_said_in_any_session(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.write_script({"text": "The tokenizer now keeps the last digit."})
    added = s.fx(
        "profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default"
    )
    assert added.returncode == 0, added.stderr
    done = s.fx("run", "-w", str(s.workspace), "Fix the tokenizer: it drops digits")
    assert done.returncode == 0, done.stderr
    s.write_script({"text": "The README explains the build."})  # each run plays it afresh
    done = s.fx("run", "-w", str(s.workspace), "Write the README")
    assert done.returncode == 0, done.stderr

    found = s.fx("search", "digit", "token")  # every word, any order, the last a prefix
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert len(lines) == 2
    assert any("you: Fix the [tokenizer]: it drops [digits]" in line for line in lines)
    assert any("agent: The [tokenizer] now keeps the last [digit]." in line for line in lines)
    assert all("Fix the tokenizer" in line for line in lines)  # the session's name

    as_json = json.loads(s.fx("search", "README", "--json").stdout)
    assert sorted(hit["who"] for hit in as_json) == ["assistant", "user"]
    assert {hit["session"] for hit in as_json} == {"Write the README"}
    assert all("[README]" in hit["snippet"] for hit in as_json)

    nothing = s.fx("search", '"drops the README"')
    assert nothing.returncode == 0
    assert nothing.stdout.strip() == 'nothing said matches “"drops the README"”'
