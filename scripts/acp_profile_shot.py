"""The profile editor with an external agent (ACP) profile, held open for a screenshot.

The Claude Code preset picked, an API key in the environment (it goes to the keyring when
saved) and the result of "Check" (whether its program is found here).

    /work/shared/tools/screenshot docs/screenshots/settings-acp-profile.png --wm \\
        --size 900x640 --wait 8 -- .venv/bin/python scripts/acp_profile_shot.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication
from screenshots import until

from fxdesk.engine.facade import ProfileService
from fxdesk.gui.application import create_qapplication
from fxdesk.gui.settings.profile_dialog import ProfileDialog
from fxdesk.gui.theme import apply_appearance
from fxdesk.store import Store


async def main() -> None:
    qapp = QApplication.instance()
    assert isinstance(qapp, QApplication)
    apply_appearance(qapp, "light")
    tmp = Path(tempfile.mkdtemp(prefix="fxdesk-acp-profile-"))
    store = await Store.aopen(tmp / "db.sqlite3")
    dialog = ProfileDialog(ProfileService(store))
    form = dialog.form
    form.set_kind("acp")
    index = form.preset_combo.findText("Claude Code")
    form.preset_combo.setCurrentIndex(index)
    form.preset_combo.activated.emit(index)
    form.agent_env_edit.setPlainText("ANTHROPIC_API_KEY=sk-ant-api03-…\nCLAUDE_CODE_MAX_TURNS=40")
    dialog.show()
    dialog.move(40, 40)
    form.test_button.click()
    await until(lambda: form.test_result.text()[:1] in ("✓", "✗"))
    await asyncio.Event().wait()  # until the screenshot tool ends the program


if __name__ == "__main__":
    qt = create_qapplication(sys.argv)
    assert isinstance(qt, QApplication)
    qasync.run(main())
