"""Screenshots of fxdesk's main states for docs/screenshots/, from a seeded demo database.

Run under a virtual X server (real xcb rendering, not offscreen):

    xvfb-run -a -s "-screen 0 1280x800x24" env QT_QPA_PLATFORM=xcb \\
        .venv/bin/python scripts/screenshots.py docs/screenshots

The model is scripted (no network); everything else is the real app on a temporary data folder:
the database, the engine, the tools working on a small sample project.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication

from fxdesk.app import App
from fxdesk.domain.approvals import Choice
from fxdesk.domain.model import KeySource, PermissionMode, Profile
from fxdesk.domain.permissions import PermissionRule, Scope, Verdict
from fxdesk.engine.providers import FixedResolver, ProviderResolver
from fxdesk.gui.application import GuiController, create_qapplication
from fxdesk.gui.theme import apply_appearance
from fxdesk.gui.transcript.model import RowKind
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Fault, Reply, ScriptedCall, ScriptedProvider, Stall

SIZE = (1280, 800)

EXPLAIN = """The project is a small **expression parser** with a tokenizer and a recursive-descent
parser. Here is how the pieces fit together:

- `tokenizer.py` splits the input into numbers, operators and parentheses.
- `parser.py` builds an AST, honouring precedence (`*` and `/` bind tighter than `+` and `-`).
- `tests/` holds the pytest suite.

A typical call looks like this:

```python
from parser import parse

tree = parse("2 * (3 + 4)")
print(tree.evaluate())  # 14
```

The README suggests running the tests with `pytest -q` before every change."""

FIXED = """Fixed. The tokenizer dropped the last digit of a number at the end of the input,
because the loop stopped one character early. I changed the bound and ran the tests:
**12 passed**. The regression case `parse("12")` is now covered."""

DOCS = """## Writing the user guide

I'll structure the guide in three parts so a new contributor can find their way:

1. **Getting started**: installing, running the parser from the command line, and reading
   the output of `--tree`.
2. **The grammar**: every rule with an example, and how precedence and associativity are
   decided. The tricky part is unary minus, which binds tighter than multiplication but
   looser than exponentiation; I'll show `-2 ** 2` evaluating to `-4` and explain why.
3. **Extending it**: adding a new operator means touching the tokenizer (a new token kind),
   the parser (a new precedence level) and the evaluator (its meaning).

```python
def parse_unary(self) -> Node:
    if self.peek() == "-":
        self.advance()
        return Negate(self.parse_unary())
    return self.parse_power()
```

Next I'll write the examples section, checking each snippet against the real parser so the
guide never drifts from the code. After that comes a short troubleshooting part covering the
error messages people hit most: unbalanced parentheses, a dangling operator, and numbers with
two decimal points."""


def seed_project(root: Path) -> Path:
    project = root / "expr-parser"
    (project / "tests").mkdir(parents=True)
    (project / "README.md").write_text(
        "# expr-parser\n\nA tiny arithmetic expression parser.\n\nRun `pytest -q` to test.\n"
    )
    (project / "tokenizer.py").write_text(
        "def tokenize(text):\n"
        "    tokens, i = [], 0\n"
        "    while i < len(text) - 1:\n"
        "        tokens.append(text[i])\n"
        "        i += 1\n"
        "    return tokens\n"
    )
    (project / "parser.py").write_text("from tokenizer import tokenize\n\n\ndef parse(text):\n")
    (project / "tests" / "test_parser.py").write_text("def test_placeholder():\n    pass\n")
    return project


def script() -> list[Reply | Fault | Stall]:
    return [
        # "Explain the parser": look around, then answer.
        Reply(
            "Let me look at the project first.",
            tool_calls=(
                ScriptedCall("list_dir", {"path": "."}),
                ScriptedCall("read_file", {"path": "README.md"}),
            ),
            usage=(1830, 64),
        ),
        Reply(EXPLAIN, usage=(2410, 380)),
        # "Fix the tokenizer bug": an edit, a command, an answer.
        Reply(
            "The loop bound in `tokenize` skips the last character. Fixing it.",
            tool_calls=(
                ScriptedCall(
                    "edit_file",
                    {
                        "path": "tokenizer.py",
                        "old_text": "while i < len(text) - 1:",
                        "new_text": "while i < len(text):",
                    },
                ),
            ),
            usage=(2950, 120),
        ),
        Reply(
            "Now the tests.",
            tool_calls=(ScriptedCall("run_command", {"command": "ls -la tests"}),),
            usage=(3310, 40),
        ),
        Reply(FIXED, usage=(3620, 150)),
        # "Upgrade dependencies": the provider refuses.
        Fault(
            "rate_limited",
            "rate limited by the provider (HTTP 429): too many requests; try again in a minute",
            after_text="Checking which packages are out of date",
        ),
        # "Write the user guide": streams slowly, so it can be caught mid-answer.
        Reply(DOCS, chunk=6, delay_s=0.04, usage=(4100, 900)),
        Reply("Added an entry to `CHANGELOG.md` under *Unreleased*.", usage=(5200, 40)),
        # "Clean build": a compound command, part of it not allowed yet.
        Reply(
            "I'll clean the old build and rebuild, keeping a report of the output.",
            tool_calls=(
                ScriptedCall(
                    "run_command",
                    {"command": "rm -rf build && make all 2>&1 | tee ~/build-report.txt"},
                ),
            ),
            usage=(5600, 60),
        ),
        Reply("Understood: I left the build folder alone.", usage=(5800, 30)),
        # "Migrate the database": still running when fxdesk quits.
        Stall(),
    ]


class Run:
    def __init__(self, paths: DataPaths, provider: ScriptedProvider | None) -> None:
        self.app = App(paths, providers=FixedResolver(provider) if provider else None)
        self.controller = GuiController(self.app)
        self.task = asyncio.ensure_future(self.controller.main())

    async def started(self) -> GuiController:
        await until(lambda: self.controller.ready.is_set() or self.task.done())
        window = self.controller.window
        window.setGeometry(0, 0, *SIZE)
        await asyncio.sleep(0.3)
        return self.controller

    async def stop(self) -> None:
        self.controller.request_quit()
        await asyncio.wait_for(self.task, 30)


# The scripted model with a price, so the window shows costs (the held-open scenes' model).
PRICED = Profile(
    "demo",
    "scripted",
    model="gpt-5-mini",
    key_source=KeySource.NONE,
    price_in_per_mtok=0.25,
    price_out_per_mtok=2.0,
)


def call(name: str, text: str = "", **arguments: object) -> Reply:
    """A scripted reply that says ``text`` and calls the tool ``name``."""
    return Reply(text, tool_calls=(ScriptedCall(name, dict(arguments)),), usage=(1800, 90))


async def held_open(
    data: Path, providers: ProviderResolver
) -> tuple[GuiController, asyncio.Future[None]]:
    """The real app on the data folder ``data`` in a light, maximized window, with ``PRICED``
    saved; the controller and its task, which runs until the screenshot tool ends the process
    (SIGTERM quits the window)."""
    qapp = QApplication.instance()
    assert isinstance(qapp, QApplication)
    apply_appearance(qapp, "light")
    app = App(DataPaths(data, "--data-dir"), providers=providers)
    controller = GuiController(app)
    task = asyncio.ensure_future(controller.main())
    await until(lambda: controller.ready.is_set() or task.done(), within=30)
    controller.window.showMaximized()
    await app.profiles.save(PRICED)
    return controller, task


async def until(condition: Callable[[], object], within: float = 30.0) -> object:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not (value := condition()):
        if loop.time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.02)
    return value


async def shoot(out: Path, name: str) -> None:
    await asyncio.sleep(0.4)  # let layouts and paints settle (on the loop, never nested)
    screen = QApplication.primaryScreen()
    image = screen.grabWindow(0, 0, 0, *SIZE)
    path = out / f"{name}.png"
    image.save(str(path))
    print(f"wrote {path}")


async def main(out: Path) -> None:
    qapp = QApplication.instance()
    assert isinstance(qapp, QApplication)
    tmp = Path(tempfile.mkdtemp(prefix="fxdesk-shots-"))
    project = seed_project(tmp)

    # First run: no model profile yet.
    first = Run(DataPaths(tmp / "first", "--data-dir"), None)
    controller = await first.started()
    await until(lambda: controller.setup and controller.setup.isVisible())
    await shoot(out, "first-run")
    assert controller.setup is not None
    controller.setup.reject()
    await until(lambda: controller.setup is None)
    await shoot(out, "empty")
    await first.stop()

    # A working day on the sample project.
    paths = DataPaths(tmp / "data", "--data-dir")
    provider = ScriptedProvider(script())
    run = Run(paths, provider)
    controller = await run.started()
    await run.app.profiles.save(Profile("demo", "scripted", key_source=KeySource.NONE))
    await run.app.profiles.save(
        Profile(
            "claude",
            "anthropic",
            model="claude-sonnet-4-5",
            key_source=KeySource.ENV,
            key_env="ANTHROPIC_API_KEY",
            price_in_per_mtok=3.0,
            price_out_per_mtok=15.0,
        ),
        make_default=True,
    )
    sessions, owner = run.app.sessions, run.app.owner
    await run.app.permissions.add_rule(
        PermissionRule("run_command", "ls -la tests", Verdict.ALLOW, Scope.GLOBAL)
    )
    transcript = controller.transcript

    async def turn(name: str, message: str, calls: int, **kwargs: object) -> str:
        session = await sessions.create_root(
            project, name=name, permission_mode=PermissionMode.AUTO, **kwargs
        )
        await sessions.send(session.id, message)
        owner.start(session.id)
        await until(lambda: provider.calls >= calls and not owner.is_running(session.id))
        return session.id

    explain = await turn("Explain the parser", "What does this project do?", 2)
    fix = await turn("Fix the tokenizer bug", 'parse("12") returns 1. Please fix it.', 5)
    await sessions.create_child(fix, name="Write regression tests", first_message=None)
    failed = await turn("Upgrade dependencies", "Upgrade the dependencies.", 6)

    controller.window.select_session(fix)
    await until(lambda: transcript.session_id == fix and transcript.rowCount() > 4)
    for position in range(transcript.rowCount()):
        if transcript.row_at(position).kind == RowKind.TOOL:
            transcript.toggle(position)
    await shoot(out, "tool-cards")

    controller.window.select_session(failed)
    await until(lambda: transcript.session_id == failed and RowKind.NOTICE in _kinds(controller))
    await shoot(out, "failure")

    docs = await sessions.create_root(
        project, name="Write the user guide", permission_mode=PermissionMode.AUTO
    )
    controller.window.select_session(docs)
    await sessions.send(docs.id, "Write a user guide for the parser.")
    owner.start(docs.id)
    await until(lambda: RowKind.LIVE in _kinds(controller) and _live_length(controller) > 900)
    await sessions.send(docs.id, "Then add a changelog entry.")
    await until(lambda: controller.window.panel.queue.isVisible())
    await shoot(out, "streaming")
    await until(lambda: not owner.is_running(docs.id), within=60)

    controller.window.select_session(explain)
    await until(lambda: transcript.session_id == explain and transcript.rowCount() > 3)
    apply_appearance(qapp, "dark")
    await shoot(out, "dark")
    apply_appearance(qapp, "light")

    controller.window.settings_action.trigger()
    await until(lambda: controller.settings and controller.settings.isVisible())
    assert controller.settings is not None
    controller.settings.move(240, 140)
    await shoot(out, "settings")
    controller.settings.close()

    # A question for the person: inline in the open session, in the dock and the tree's count.
    await run.app.permissions.add_rule(
        PermissionRule("run_command", "make all", Verdict.ALLOW, Scope.GLOBAL)
    )
    clean = await sessions.create_root(
        project, name="Clean build", permission_mode=PermissionMode.AUTO
    )
    controller.window.select_session(clean.id)
    await sessions.send(clean.id, "Do a clean build.")
    owner.start(clean.id)
    dialog = controller.approval_dialog
    assert controller.approvals is not None
    inline = controller.approvals.inline
    await until(lambda: inline.isVisible() and dialog.count == 1)
    controller.approvals_dock.show()
    await shoot(out, "approval")
    inline.choose(Choice.DENY)
    await until(lambda: not owner.is_running(clean.id))

    # Quit while a turn runs: the next start offers it back.
    migrate = await sessions.create_root(project, name="Migrate the database")
    await sessions.send(migrate.id, "Move the config from INI to TOML.")
    owner.start(migrate.id)
    await until(lambda: owner.is_running(migrate.id) and provider.calls >= 11)
    await run.stop()

    again = Run(paths, ScriptedProvider([Reply("Resumed.")]))
    controller = await again.started()
    await shoot(out, "recovery")
    await again.stop()


def _kinds(controller: GuiController) -> list[RowKind]:
    model = controller.transcript
    return [model.row_at(i).kind for i in range(model.rowCount())]


def _live_length(controller: GuiController) -> int:
    model = controller.transcript
    return max(
        (
            len(model.row_at(i).text)
            for i in range(model.rowCount())
            if model.row_at(i).kind == RowKind.LIVE
        ),
        default=0,
    )


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    target.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("FXDESK_LOG_LEVEL", "WARNING")
    qt = create_qapplication(sys.argv)
    qasync.run(main(target.resolve()))
