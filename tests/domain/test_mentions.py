"""``@`` mentions (issue 18 item 6): what counts as one, and the fuzzy ranking of paths."""

from __future__ import annotations

from pathlib import Path

from fxdesk.domain.mentions import Mention, fuzzy_rank, fuzzy_score, mentions
from fxdesk.engine.mentions import attach, list_files


def test_mentions_are_paths_and_ranges_but_not_mail_addresses() -> None:
    text = "See @src/app.py:10-40 and @README.md, @x.py:3. Mail a@b.com. Again @src/app.py:10-40"
    assert mentions(text) == [
        Mention("src/app.py", 10, 40),
        Mention("README.md"),
        Mention("x.py", 3, 3),
    ]
    assert [m.label for m in mentions(text)] == ["src/app.py:10-40", "README.md", "x.py:3"]
    assert mentions("no mentions here, @ alone") == []


def test_fuzzy_ranking_prefers_the_file_name_and_starts_of_parts() -> None:
    paths = ["docs/tapping.md", "src/app.py", "tests/test_app.py", "src/happy.py", "x/other.txt"]
    assert fuzzy_score("zz", "src/app.py") is None
    ranked = fuzzy_rank("app", paths)
    assert ranked[:2] == ["src/app.py", "tests/test_app.py"]
    assert "x/other.txt" not in ranked
    assert fuzzy_rank("", paths, limit=2) == ["src/app.py", "x/other.txt"]  # shortest first
    assert fuzzy_rank("tsapp", paths)[0] == "tests/test_app.py"


def test_attached_files_are_the_workspace_s_own(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 51)))
    (workspace / "big.txt").write_text("x" * 300_000)
    (tmp_path / "secret.txt").write_text("outside")
    (workspace / "link.txt").symlink_to(tmp_path / "secret.txt")

    sent = attach(workspace, "Check @src/app.py:10-12 please")
    assert sent.startswith("Check @src/app.py:10-12 please\n\n")
    assert '<attached file="src/app.py" lines="10-12">\nline 10\nline 11\nline 12\n</attached>' in (
        sent
    )
    whole = attach(workspace, "@big.txt")
    assert "[cut at 200,000 bytes]" in whole and len(whole) < 201_000
    for outside in ("@../secret.txt", "@link.txt", "@src", "@nothing.py", "@/etc/passwd"):
        assert attach(workspace, f"look {outside}") == f"look {outside}"  # plain text


def test_files_are_listed_by_git_or_by_walking(tmp_path: Path) -> None:
    import subprocess

    plain = tmp_path / "plain"
    (plain / "node_modules" / "x").mkdir(parents=True)
    (plain / "src").mkdir()
    (plain / "src" / "a.py").write_text("a")
    (plain / "node_modules" / "x" / "i.js").write_text("i")
    assert list_files(plain) == ["src/a.py"]

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("ignored.log\n")
    (repo / "kept.py").write_text("k")
    (repo / "ignored.log").write_text("i")
    assert list_files(repo) == [".gitignore", "kept.py"]  # untracked but not ignored: listed
