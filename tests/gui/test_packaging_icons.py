"""packaging/icons.py: the installers' icons rendered from the app's SVG (Qt renders them, so
this test lives with the GUI tests)."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

from PySide6.QtGui import QImage

ROOT = Path(__file__).resolve().parents[2]
APP_ID = "io.github.fxdesk.Fxdesk"


def _icons_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("fxdesk_icons", ROOT / "packaging" / "icons.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_icon_is_made_at_its_size(tmp_path: Path) -> None:
    icons = _icons_module()
    made = icons.make_icons(tmp_path)
    for size in icons.HICOLOR_SIZES:
        png = made["hicolor"] / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        image = QImage(str(png))
        assert (image.width(), image.height()) == (size, size)
        assert image.pixelColor(size // 2, size // 2).alpha() == 255  # drawn, not blank
    assert (made["hicolor"] / "scalable" / "apps" / f"{APP_ID}.svg").is_file()

    ico = made["ico"].read_bytes()
    reserved, kind, count = struct.unpack("<HHH", ico[:6])
    assert (reserved, kind, count) == (0, 1, len(icons.ICO_SIZES))
    first_offset = struct.unpack("<I", ico[6 + 12 : 6 + 16])[0]
    assert ico[first_offset : first_offset + 8] == b"\x89PNG\r\n\x1a\n"

    icns = made["icns"].read_bytes()
    assert icns[:4] == b"icns" and struct.unpack(">I", icns[4:8])[0] == len(icns)
