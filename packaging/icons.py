"""Render fxdesk's one icon (``fxdesk/resources/<APP_ID>.svg``) into what installers need.

``python packaging/icons.py OUT`` writes ``OUT/hicolor/<N>x<N>/apps/<APP_ID>.png`` for every
hicolor size, ``OUT/hicolor/scalable/apps/<APP_ID>.svg``, ``OUT/fxdesk.ico`` (Windows) and
``OUT/fxdesk.icns`` (macOS). The spec calls ``make_icons`` too, so a build on any platform makes
its own icons; nothing generated is committed.

ICO and ICNS are written here, not by Qt's image plugins: both formats accept PNG entries as
they are (ICO since Windows Vista, ICNS since macOS 10.7), so a few lines of ``struct`` do it on
every platform without relying on ``qico``/``qicns`` being installed.
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HICOLOR_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# ICNS entry types holding PNG data, by pixel size (the @2x types reuse the larger images).
ICNS_TYPES = (
    (b"icp4", 16), (b"icp5", 32), (b"icp6", 64), (b"ic07", 128),
    (b"ic08", 256), (b"ic09", 512), (b"ic10", 1024),
    (b"ic11", 32), (b"ic12", 64), (b"ic13", 256), (b"ic14", 512),
)  # fmt: skip


def svg_path() -> Path:
    sys.path.insert(0, str(ROOT))
    from fxdesk import APP_ID

    return ROOT / "fxdesk" / "resources" / f"{APP_ID}.svg"


def render_png(svg: Path, size: int) -> bytes:
    """The icon drawn at ``size`` x ``size`` pixels, as PNG bytes."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    if QGuiApplication.instance() is None:
        render_png.app = QGuiApplication([])  # type: ignore[attr-defined]  # kept alive
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"cannot read the icon {svg}")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    buffer.close()
    return bytes(data.data())


def ico(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico whose entries are the PNGs (sizes up to 256)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = len(header) + 16 * len(sizes)
    entries, blobs = b"", b""
    for size in sizes:
        blob = pngs[size]
        side = 0 if size >= 256 else size  # 0 means 256 in an ICO directory entry
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(blob), offset)
        offset += len(blob)
        blobs += blob
    return header + entries + blobs


def icns(pngs: dict[int, bytes]) -> bytes:
    """A macOS .icns whose entries are the PNGs."""
    body = b"".join(
        kind + struct.pack(">I", 8 + len(pngs[size])) + pngs[size] for kind, size in ICNS_TYPES
    )
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def make_icons(out: Path) -> dict[str, Path]:
    """Write every icon under ``out``; returns {"ico": ..., "icns": ..., "hicolor": ...}."""
    svg = svg_path()
    app_id = svg.stem
    sizes = sorted(set(HICOLOR_SIZES) | set(ICO_SIZES) | {size for _, size in ICNS_TYPES})
    pngs = {size: render_png(svg, size) for size in sizes}
    hicolor = out / "hicolor"
    for size in HICOLOR_SIZES:
        folder = hicolor / f"{size}x{size}" / "apps"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{app_id}.png").write_bytes(pngs[size])
    scalable = hicolor / "scalable" / "apps"
    scalable.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(svg, scalable / svg.name)
    (out / "fxdesk.ico").write_bytes(ico({s: pngs[s] for s in ICO_SIZES}))
    (out / "fxdesk.icns").write_bytes(icns(pngs))
    return {"ico": out / "fxdesk.ico", "icns": out / "fxdesk.icns", "hicolor": hicolor}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: icons.py OUT_DIR")
    for kind, path in make_icons(Path(sys.argv[1])).items():
        print(f"{kind}: {path}")
