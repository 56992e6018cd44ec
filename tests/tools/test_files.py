"""read_file, list_dir, glob, grep and edit_file on real files in a temporary workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fxdesk.tools import files, search, textfiles
from fxdesk.tools.base import MODEL_OUTPUT_CAP, ToolContext, ToolResult
from fxdesk.tools.files import EditFileTool, ListDirTool, ReadFileTool
from fxdesk.tools.search import GlobTool, GrepTool

from .conftest import SECRET


async def read(ctx: ToolContext, path: str, **extra: object) -> ToolResult:
    return await ReadFileTool().run({"path": path, **extra}, ctx)


def assert_outside(result: ToolResult) -> None:
    assert not result.ok
    assert "is outside the workspace" in result.output
    assert "secret outside" not in result.output
    assert result.full_output is None or "secret outside" not in result.full_output


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


# --- read_file ----------------------------------------------------------------------------


async def test_read_file_numbers_every_line(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\r\nthree")
    result = await read(ctx, "a.txt")
    assert result.ok
    assert result.output == "     1\tone\n     2\ttwo\n     3\tthree"
    assert result.full_output is None


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        ({"start_line": 2, "end_line": 3}, [2, 3]),
        ({"start_line": 4}, [4, 5]),
        ({"end_line": 2}, [1, 2]),
        ({"start_line": 5, "end_line": 99}, [5]),
        ({"start_line": 3, "end_line": 3}, [3]),
    ],
)
async def test_read_file_line_ranges(
    ctx: ToolContext, workspace: Path, extra: dict[str, int], shown: list[int]
) -> None:
    (workspace / "five.txt").write_text("".join(f"line {n}\n" for n in range(1, 6)))
    result = await read(ctx, "five.txt", **extra)
    assert result.ok, result.output
    assert result.output.splitlines() == [f"{n:6}\tline {n}" for n in shown]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"start_line": 9}, "start_line 9 is past the end of five.txt (5 lines)"),
        ({"start_line": 0}, "start_line must be"),
        ({"start_line": 3, "end_line": 2}, "end_line must be"),
    ],
)
async def test_read_file_bad_ranges(
    ctx: ToolContext, workspace: Path, extra: dict[str, int], message: str
) -> None:
    (workspace / "five.txt").write_text("".join(f"line {n}\n" for n in range(1, 6)))
    result = await read(ctx, "five.txt", **extra)
    assert not result.ok
    assert message in result.output


async def test_read_file_refuses_binary_files(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"PK\x03\x04\x00\x00" + bytes(range(256)) * 4)
    (workspace / "latin1.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    for name, size in (("blob.bin", 1030), ("latin1.txt", 11)):
        result = await read(ctx, name)
        assert not result.ok
        assert result.output == f"{name} is a binary file ({size} bytes); not shown"


async def test_read_file_replaces_bad_bytes_after_a_text_start(
    ctx: ToolContext, workspace: Path
) -> None:
    # Text for well past the sniffed 8 KiB, then a stray byte: shown, with a replacement mark.
    (workspace / "log.txt").write_bytes(b"ok line\n" * 2000 + b"bad \xff byte\n")
    result = await read(ctx, "log.txt", start_line=2001)
    assert result.ok
    assert result.output == "  2001\tbad \ufffd byte"


async def test_read_file_keeps_a_multibyte_character_cut_by_the_sniff(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "u.txt").write_text("é" * 10_000)  # 2 bytes each: the 8 KiB sample ends inside
    result = await read(ctx, "u.txt")
    assert result.ok
    assert "\ufffd" not in (result.full_output or result.output)


async def test_read_file_bounds_a_large_file(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"row {n}\n" for n in range(1, 100_001)))
    result = await read(ctx, "big.txt")
    assert result.ok
    assert len(result.output) < MODEL_OUTPUT_CAP + 200
    assert "characters cut" in result.output
    assert result.output.startswith("     1\trow 1\n")
    assert result.output.endswith("100000\trow 100000")
    assert result.full_output is not None
    assert len(result.full_output.splitlines()) == 100_000


async def test_read_file_cuts_one_giant_line(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(textfiles, "LINE_CHAR_LIMIT", 100)
    (workspace / "min.js").write_text("x" * 1000 + "\nnext\n")
    result = await read(ctx, "min.js")
    assert result.ok
    assert (
        result.output == f"     1\t{'x' * 100} [... 900 more characters on this line]\n     2\tnext"
    )


async def test_read_file_stops_at_the_read_limit(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "READ_CHAR_LIMIT", 100)
    (workspace / "log.txt").write_text("".join(f"entry {n}\n" for n in range(1, 51)))
    result = await read(ctx, "log.txt")
    assert result.ok
    *lines, note = result.output.splitlines()
    assert len(lines) < 50
    assert note == f"[... stopped at line {len(lines)}; read on with start_line={len(lines) + 1}]"


async def test_read_file_plain_errors(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "empty.txt").write_text("")
    os.mkfifo(workspace / "pipe")
    assert (await read(ctx, "missing.txt")).output == "missing.txt does not exist"
    assert "sub is a directory" in (await read(ctx, "sub")).output
    assert (await read(ctx, "pipe")).output == "pipe is not a regular file"
    empty = await read(ctx, "empty.txt")
    assert empty.ok
    assert empty.output == "empty.txt is empty"


async def test_read_file_refuses_paths_outside(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "link").symlink_to(tmp_path / "secret")
    (workspace / "dirlink").symlink_to(tmp_path)
    for path in ("../secret", "link", "dirlink/secret", str(tmp_path / "secret"), "/etc/passwd"):
        assert_outside(await read(ctx, path))


async def test_read_file_follows_links_inside(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "real.txt").write_text("inside\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    result = await read(ctx, "alias.txt")
    assert result.ok
    assert result.output == "     1\tinside"


# --- list_dir -----------------------------------------------------------------------------


async def test_list_dir_sorted_with_kinds_and_sizes(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "b.txt").write_text("12345")
    (workspace / "a_dir").mkdir()
    (workspace / "c_link").symlink_to("b.txt")
    (workspace / "d_out").symlink_to(tmp_path / "secret")
    result = await ListDirTool().run({}, ctx)
    assert result.ok
    assert result.output.splitlines() == [
        "a_dir/",
        "b.txt  (5 bytes)",
        "c_link -> b.txt",
        "d_out -> (outside the workspace)",
    ]
    assert str(tmp_path) not in result.output


async def test_list_dir_bounds_long_listings(ctx: ToolContext, workspace: Path) -> None:
    folder = workspace / "many"
    folder.mkdir()
    for n in range(1003):
        (folder / f"f{n:04}").touch()
    result = await ListDirTool().run({"path": "many"}, ctx)
    lines = (result.full_output or result.output).splitlines()
    assert result.ok
    assert lines[0] == "f0000  (0 bytes)"
    assert lines[999] == "f0999  (0 bytes)"
    assert lines[1000] == "[... 3 more entries not shown]"
    assert result.data == {"entries": 1003}


async def test_list_dir_errors_and_outside(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "f.txt").write_text("x")
    (workspace / "empty").mkdir()
    (workspace / "out").symlink_to(tmp_path)
    assert "is a file" in (await ListDirTool().run({"path": "f.txt"}, ctx)).output
    assert (await ListDirTool().run({"path": "nope"}, ctx)).output == "nope does not exist"
    assert (await ListDirTool().run({"path": "empty"}, ctx)).output == "empty is empty"
    for path in ("..", "../", "out", "empty/../..", "/"):
        assert_outside(await ListDirTool().run({"path": path}, ctx))


# --- glob ---------------------------------------------------------------------------------


def make_tree(workspace: Path) -> None:
    for name in ("pkg/a.py", "pkg/sub/b.py", "top.py", "notes.md", "pkg/sub/c.txt"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(f"content of {name}\nneedle here\n")


async def test_glob_matches_relative_and_sorted(ctx: ToolContext, workspace: Path) -> None:
    make_tree(workspace)
    result = await GlobTool().run({"pattern": "**/*.py"}, ctx)
    assert result.ok
    assert result.output.splitlines() == ["pkg/a.py", "pkg/sub/b.py", "top.py"]
    below = await GlobTool().run({"pattern": "*", "path": "pkg"}, ctx)
    assert below.output.splitlines() == ["pkg/a.py", "pkg/sub/"]


async def test_glob_never_leaves_the_workspace(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    make_tree(workspace)
    other = tmp_path / "other"
    make_tree(other)
    (workspace / "pkg" / "leak.py").symlink_to(tmp_path / "secret")
    (workspace / "outdir").symlink_to(other)
    (workspace / "inside.py").symlink_to("top.py")
    result = await GlobTool().run({"pattern": "**/*.py"}, ctx)
    assert result.output.splitlines() == ["inside.py", "pkg/a.py", "pkg/sub/b.py", "top.py"]
    for pattern in ("outdir/*", "outdir/**/*", "../other/*", "pkg/../../*.*", "*/secret"):
        found = await GlobTool().run({"pattern": pattern}, ctx)
        assert found.ok
        assert found.output == f"no paths match {pattern!r}", pattern
    # '..' may lead back in: the workspace itself is all that '../*' finds.
    assert (await GlobTool().run({"pattern": "../*"}, ctx)).output == "./"
    assert_outside(await GlobTool().run({"pattern": "*", "path": "outdir"}, ctx))
    assert_outside(await GlobTool().run({"pattern": "*", "path": "../"}, ctx))


async def test_glob_bounds_and_errors(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(workspace)
    monkeypatch.setattr(search, "GLOB_LIMIT", 2)
    result = await GlobTool().run({"pattern": "**/*"}, ctx)
    assert result.output.splitlines() == ["notes.md", "pkg/", "[... 5 more paths not shown]"]
    assert result.data == {"matches": 7}
    absolute = await GlobTool().run({"pattern": str(workspace / "*.py")}, ctx)
    assert not absolute.ok
    assert "must be relative" in absolute.output
    assert not (await GlobTool().run({"pattern": ""}, ctx)).ok
    assert not (await GlobTool().run({"pattern": "*", "path": "top.py"}, ctx)).ok


# --- grep ---------------------------------------------------------------------------------


async def grep(ctx: ToolContext, pattern: str, **extra: object) -> ToolResult:
    return await GrepTool().run({"pattern": pattern, **extra}, ctx)


async def test_grep_prints_path_line_and_text(ctx: ToolContext, workspace: Path) -> None:
    make_tree(workspace)
    result = await grep(ctx, r"content of .*\.py")
    assert result.ok
    assert result.output.splitlines() == [
        "pkg/a.py:1: content of pkg/a.py",
        "pkg/sub/b.py:1: content of pkg/sub/b.py",
        "top.py:1: content of top.py",
    ]
    assert result.data == {"matches": 3, "skipped_files": 0}
    assert (await grep(ctx, "NEEDLE")).output == "no matches for 'NEEDLE' in ."
    assert len((await grep(ctx, "NEEDLE", ignore_case=True)).output.splitlines()) == 5


async def test_grep_filters_by_path_and_name(ctx: ToolContext, workspace: Path) -> None:
    make_tree(workspace)
    assert (await grep(ctx, "needle", glob="*.txt")).output == "pkg/sub/c.txt:2: needle here"
    in_sub = await grep(ctx, "needle", path="pkg/sub", glob="*.py")
    assert in_sub.output == "pkg/sub/b.py:2: needle here"
    one_file = await grep(ctx, "content", path="top.py")
    assert one_file.output == "top.py:1: content of top.py"
    by_path = await grep(ctx, "needle", glob="pkg/*.py")
    assert by_path.output == "pkg/a.py:2: needle here"


async def test_grep_skips_binary_files_and_git(ctx: ToolContext, workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("needle in git\n")
    (workspace / "data.bin").write_bytes(b"needle\x00\x01\x02")
    (workspace / "src.txt").write_text("a needle\n")
    result = await grep(ctx, "needle")
    assert result.output == "src.txt:1: a needle"
    assert result.data == {"matches": 1, "skipped_files": 1}
    alone = await grep(ctx, "needle", path="data.bin")
    assert alone.output == "no matches for 'needle' in data.bin"
    assert alone.data == {"matches": 0, "skipped_files": 1}


async def test_grep_bounds_matches_and_line_length(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "many.txt").write_text("hit\n" * 500)
    (workspace / "wide.txt").write_text("hit" + "y" * 1000 + "\n")
    many = await grep(ctx, "hit", path="many.txt")
    lines = many.output.splitlines()
    assert len(lines) == 201
    assert lines[-1] == "[... stopped after 200 matches; narrow the search]"
    wide = await grep(ctx, "hit", path="wide.txt")
    text = wide.output.removeprefix("wide.txt:1: ")
    assert text == "hit" + "y" * 297 + " [...]"


async def test_grep_invalid_regex_is_a_tool_error(ctx: ToolContext) -> None:
    result = await grep(ctx, "foo(bar")
    assert not result.ok
    assert (
        result.output
        == "invalid regular expression 'foo(bar': missing ), unterminated subpattern at position 3"
    )


async def test_grep_never_reads_outside(ctx: ToolContext, workspace: Path, tmp_path: Path) -> None:
    (workspace / "leak.txt").symlink_to(tmp_path / "secret")
    (workspace / "outdir").symlink_to(tmp_path)
    (workspace / "mine.txt").write_text("my own secret\n")
    result = await grep(ctx, "secret")
    assert result.output == "mine.txt:1: my own secret"
    for path in ("leak.txt", "outdir", "../secret", "../"):
        assert_outside(await grep(ctx, "secret", path=path))


async def test_grep_reads_a_linked_file_inside_under_its_link_name(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "real.txt").write_text("needle here\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    result = await grep(ctx, "needle")
    assert result.output.splitlines() == ["alias.txt:1: needle here", "real.txt:1: needle here"]


# --- a file swapped for a link after the check -----------------------------------------------


def swap_after_check(monkeypatch: pytest.MonkeyPatch, module: object, outside: Path) -> None:
    """Between the workspace check and the open, replace the checked file with a symbolic link
    out of the workspace: what a process racing the tool could do."""
    real = module.resolve_in_workspace  # type: ignore[attr-defined]

    def resolve_then_swap(*args: object, **kwargs: object) -> Path:
        checked: Path = real(*args, **kwargs)
        checked.unlink(missing_ok=True)
        checked.symlink_to(outside)
        return checked

    monkeypatch.setattr(module, "resolve_in_workspace", resolve_then_swap)


@pytest.mark.parametrize("tool", ["read_file", "edit_file", "write_file"])
async def test_a_file_swapped_for_a_link_after_the_check_is_not_followed(
    ctx: ToolContext,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
) -> None:
    from fxdesk.tools import basic

    (workspace / "notes.txt").write_text("the secret outside\n")
    outside = tmp_path / "secret"
    before = snapshot(outside)
    # Every file tool resolves in textfiles (reachable).
    swap_after_check(monkeypatch, textfiles, outside)
    if tool == "read_file":
        result = await read(ctx, "notes.txt")
    elif tool == "edit_file":
        result = await edit(ctx, "notes.txt", "secret", "public")
    else:
        result = await basic.WriteFileTool().run({"path": "notes.txt", "content": "x"}, ctx)
    assert not result.ok
    assert "became a symbolic link after it was checked" in result.output
    assert SECRET not in result.output
    assert snapshot(outside) == before


# --- edit_file ----------------------------------------------------------------------------


async def edit(ctx: ToolContext, path: str, old: str, new: str) -> ToolResult:
    return await EditFileTool().run({"path": path, "old_text": old, "new_text": new}, ctx)


async def test_edit_file_replaces_once_and_returns_a_diff(
    ctx: ToolContext, workspace: Path
) -> None:
    target = workspace / "pkg" / "mod.py"
    target.parent.mkdir()
    target.write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    target.chmod(0o754)
    result = await edit(ctx, "pkg/mod.py", "    return 2\n", "    return 3\n")
    assert result.ok, result.output
    assert target.read_text() == "def f():\n    return 1\n\n\ndef g():\n    return 3\n"
    assert result.output.splitlines() == [
        "--- a/pkg/mod.py",
        "+++ b/pkg/mod.py",
        "@@ -3,4 +3,4 @@",
        " ",
        " ",
        " def g():",
        "-    return 2",
        "+    return 3",
    ]
    assert target.stat().st_mode & 0o777 == 0o754
    assert sorted(p.name for p in target.parent.iterdir()) == ["mod.py"]  # no temporary file


async def test_edit_file_keeps_line_ends_and_marks_a_missing_newline(
    ctx: ToolContext, workspace: Path
) -> None:
    target = workspace / "w.txt"
    target.write_bytes(b"one\r\ntwo\r\nlast")
    result = await edit(ctx, "w.txt", "last", "final")
    assert result.ok
    assert target.read_bytes() == b"one\r\ntwo\r\nfinal"
    assert result.output.endswith(
        "-last\n\\ No newline at end of file\n+final\n\\ No newline at end of file\n"
    )


@pytest.mark.parametrize(
    ("old", "message"),
    [
        ("absent", "old_text was not found in t.txt"),
        ("dup", "old_text occurs 2 times in t.txt; include more context so it matches once"),
        ("aa", "old_text occurs 2 times in t.txt; include more context so it matches once"),
    ],
)
async def test_edit_file_needs_exactly_one_match(
    ctx: ToolContext, workspace: Path, old: str, message: str
) -> None:
    target = workspace / "t.txt"
    target.write_text("dup\naaa\ndup\n")
    before = snapshot(target)
    result = await edit(ctx, "t.txt", old, "new")
    assert not result.ok
    assert result.output == message
    assert snapshot(target) == before


async def test_edit_file_refusals_leave_files_alone(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    (workspace / "link").symlink_to(secret)
    (workspace / "outdir").symlink_to(tmp_path)
    (workspace / "latin.txt").write_bytes(b"caf\xe9\n")
    before_secret, before_latin = snapshot(secret), snapshot(workspace / "latin.txt")
    for path in ("link", "outdir/secret", "../secret", str(secret)):
        assert_outside(await edit(ctx, path, "secret", "stolen"))
    assert secret.read_text() == SECRET
    assert snapshot(secret) == before_secret
    latin = await edit(ctx, "latin.txt", "caf", "cafe")
    assert latin.output == "latin.txt is not UTF-8 text; edit_file will not rewrite it"
    assert snapshot(workspace / "latin.txt") == before_latin
    assert (await edit(ctx, "nope.txt", "a", "b")).output == "nope.txt does not exist"
    assert "must not be empty" in (await edit(ctx, "latin.txt", "", "b")).output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret", "ws"]


async def test_edit_file_respects_a_read_only_file(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # os.access stands in for the mode: these tests may run as root, for whom all is writable.
    target = workspace / "locked.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    monkeypatch.setattr(files.os, "access", lambda path, mode: False)
    result = await edit(ctx, "locked.txt", "keep", "change")
    assert result.output == "locked.txt is read-only"
    assert target.read_text() == "keep\n"


async def test_edit_file_through_an_inside_link_edits_the_target(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "real.txt").write_text("old\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    result = await edit(ctx, "alias.txt", "old", "new")
    assert result.ok
    assert (workspace / "alias.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "new\n"
    assert result.output.startswith("--- a/real.txt\n+++ b/real.txt\n")
