"""packaging/fxdesk.spec, read as text and as Python (the frozen build itself is not run here:
it takes a minute and 135 MB; packaging/README.md records how it is run and measured)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "packaging" / "fxdesk.spec"


def _tree() -> ast.Module:
    return ast.parse(SPEC.read_text(encoding="utf-8"), filename=str(SPEC))


def _strings(node: ast.AST) -> set[str]:
    return {
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def _assigned(name: str) -> ast.AST:
    for node in ast.walk(_tree()):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    raise AssertionError(f"{name} is not assigned in the spec")


def test_the_spec_is_python_and_takes_version_and_id_from_the_package() -> None:
    text = SPEC.read_text(encoding="utf-8")
    assert "VERSION = fxdesk.__version__" in text
    assert "APP_ID = fxdesk.APP_ID" in text
    assert "console=False" in text and "console=True" in text  # window and command line
    assert "BUNDLE(" in text and "bundle_identifier=APP_ID" in text  # macOS
    assert '"version": _windows_version_file()' in text and '"icon": str(ICONS["ico"])' in text


# Modules the bundle needs but no import statement names: each is found by a string at run
# time (entry points, importlib.import_module, yacc's table module, a name lookup).
IMPORTED_BY_NAME = {
    "bashlex.parsetab": "bashlex's parser tables (yacc imports them by name)",
    "anyio._backends._asyncio": "anyio picks its event-loop backend by name",
    "yaml._yaml": "PyYAML's C loader",
    "secretstorage": "keyring's Secret Service backend",
}
COLLECTED = {
    "keyring.backends": "keyring loads its backends through entry points",
    "openai": "the openai SDK imports its resources with importlib.import_module",
    "anthropic": "the anthropic SDK imports its resources lazily",
    "pygments.lexers": "get_lexer_by_name imports a lexer by name",
    "fxdesk": "command groups import the engine inside their handlers",
}


@pytest.mark.parametrize("module", sorted(IMPORTED_BY_NAME))
def test_modules_imported_by_name_are_hidden_imports(module: str) -> None:
    assert module in _strings(_assigned("HIDDEN_IMPORTS")), IMPORTED_BY_NAME[module]
    top = module.split(".")[0]
    if importlib.util.find_spec(top) is not None:  # only what this environment has installed
        assert importlib.util.find_spec(module) is not None, f"{module} no longer exists"


@pytest.mark.parametrize("package", sorted(COLLECTED))
def test_packages_with_dynamic_imports_are_collected_whole(package: str) -> None:
    calls = [
        node
        for node in ast.walk(_assigned("HIDDEN_IMPORTS"))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "collect_submodules"
    ]
    collected = {c.args[0].value for c in calls if isinstance(c.args[0], ast.Constant)}
    assert package in collected, COLLECTED[package]


def test_the_openai_resources_are_still_imported_by_name() -> None:
    """If the SDK stops importing its resources by name, the collect_submodules can go."""
    spec = importlib.util.find_spec("openai")
    assert spec is not None and spec.origin is not None
    proxy = Path(spec.origin).parent / "_utils" / "_resources_proxy.py"
    assert 'importlib.import_module("openai.resources")' in proxy.read_text(encoding="utf-8")


def test_the_runtime_hook_and_the_entry_point_exist() -> None:
    text = SPEC.read_text(encoding="utf-8")
    assert '"rthooks" / "pyi_rth_fxdesk_environment.py"' in text
    assert (ROOT / "packaging" / "rthooks" / "pyi_rth_fxdesk_environment.py").is_file()
    assert '"fxdesk" / "__main__.py"' in text
    main = (ROOT / "fxdesk" / "__main__.py").read_text(encoding="utf-8")
    assert "from fxdesk.cli import main" in main  # the same entry point as [project.scripts]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'fxdesk = "fxdesk.cli:main"' in pyproject


def test_qt_trimming_never_drops_what_the_window_needs() -> None:
    unused = _strings(_assigned("QT_UNUSED"))
    needed = ("platforms/libqxcb", "platforms/libqwayland", "platforms/libqoffscreen",
              "imageformats/libqsvg", "iconengines/libqsvgicon", "platforminputcontexts/",
              "libQt6Svg", "libQt6Widgets", "libQt6DBus")  # fmt: skip
    for path in needed:
        assert not any(part in path for part in unused), path
