"""In a frozen app ``sys.executable`` is the app itself: spawning ``sys.executable -c`` or
``-m`` would start fxdesk again, recursively (STACK-NOTES §8). fxdesk runs real programs only;
the one place that re-runs itself, the doctor's Qt probe, calls the app with its hidden
subcommand when frozen."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Functions allowed to use sys.executable, each one checking sys.frozen itself: the Qt probe's
# command, and the program file a frozen build watches for upgrades (never run).
ALLOWED = {
    ("fxdesk/gui/probe.py", "_probe_command"),
    ("fxdesk/gui/desktop/program_watch.py", "frozen_program"),
}


def _uses_of_sys_executable() -> list[tuple[str, str, ast.FunctionDef | None]]:
    found = []
    for path in sorted((ROOT / "fxdesk").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "executable"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                owner = next(
                    (f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or 0)),
                    None,
                )
                found.append(
                    (path.relative_to(ROOT).as_posix(), owner.name if owner else "", owner)
                )
    return found


def test_sys_executable_is_used_only_where_allowed() -> None:
    uses = {(path, name) for path, name, _ in _uses_of_sys_executable()}
    assert uses <= ALLOWED, f"new use of sys.executable: {sorted(uses - ALLOWED)}"


def test_only_the_frozen_branch_uses_it_and_never_to_run_python_code() -> None:
    for _, _, function in _uses_of_sys_executable():
        assert function is not None
        source = ast.unparse(function)
        assert 'getattr(sys, "frozen", False)' in source.replace("'", '"')
        frozen_branch = next(
            n
            for n in ast.walk(function)
            if isinstance(n, ast.If) and "frozen" in ast.unparse(n.test)
        )
        returned = ast.unparse(frozen_branch.body[0])
        assert "sys.executable" in returned
        assert '"-m"' not in returned and '"-c"' not in returned
