#!/usr/bin/env bash
# Build fxdesk's Linux packages from this checkout:
#   dist/fxdesk/                               the one-folder bundle (PyInstaller)
#   dist/fxdesk_<version>_amd64.deb            for Debian 12 / Ubuntu 22.04+ (apt-get install ./...)
#   dist/fxdesk-<version>-linux-x86_64.tar.gz  the same bundle for other distributions (install.sh)
# It makes its own virtual environment (build/venv: PyInstaller and fxdesk's pinned
# dependencies), so a clean clone needs only python3 (3.11+), binutils (readelf) and dpkg-deb.
# FXDESK_DEB_COMPRESSION=xz makes a smaller .deb, much more slowly (packaging/README.md).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
VENV=build/venv
APP_ID=io.github.fxdesk.Fxdesk
PYINSTALLER=(pyinstaller==6.22.3 pyinstaller-hooks-contrib==2026.9)
step() { echo "== $*"; }

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "build-linux.sh needs Python 3.11 or newer ($PYTHON is older)" >&2; exit 1; }
for tool in dpkg-deb dpkg readelf ldd tar; do
  command -v "$tool" >/dev/null || { echo "build-linux.sh needs $tool (apt-get install dpkg binutils)" >&2; exit 1; }
done
VERSION=$("$PYTHON" -c 'import sys; sys.path.insert(0, "."); import fxdesk; print(fxdesk.__version__)')
ARCH=$(dpkg --print-architecture)
[ "$ARCH" = amd64 ] || { echo "build-linux.sh builds amd64 packages; this is $ARCH" >&2; exit 1; }

step "build environment ($VENV)"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.fxdesk-build"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  # fxdesk's own dependencies, exactly as pinned in pyproject.toml; fxdesk itself is taken from
  # this checkout by the spec (pathex), so a stale installed copy can never be frozen.
  "$VENV/bin/python" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
    > build/requirements.txt
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PYINSTALLER[@]}" -r build/requirements.txt
  touch "$stamp"
fi

step "bundle (PyInstaller)"
start=$(date +%s)
rm -rf dist/fxdesk
"$VENV/bin/pyinstaller" --noconfirm --clean --log-level WARN \
  --distpath dist --workpath build/pyinstaller packaging/fxdesk.spec
echo "bundle: $(du -sh dist/fxdesk | cut -f1) in $(( $(date +%s) - start )) s"
ICONS=build/pyinstaller/fxdesk/icons/hicolor  # rendered by the spec (packaging/icons.py)
"dist/fxdesk/fxdesk" --version

# Files both packages install next to the bundle, laid out under a prefix ($1).
share_files() {
  local prefix=$1
  install -Dm644 "fxdesk/resources/$APP_ID.desktop" "$prefix/share/applications/$APP_ID.desktop"
  install -Dm644 "packaging/linux/$APP_ID.metainfo.xml" "$prefix/share/metainfo/$APP_ID.metainfo.xml"
  (cd "$ICONS" && find . -type f) | while read -r icon; do
    install -Dm644 "$ICONS/$icon" "$prefix/share/icons/hicolor/$icon"
  done
}

step "deb"
DEB=dist/fxdesk_${VERSION}_${ARCH}.deb
PKG=build/deb/root
rm -rf build/deb
mkdir -p "$PKG/DEBIAN" "$PKG/opt" "$PKG/usr/bin" "$PKG/usr/share/doc/fxdesk"
cp -a dist/fxdesk "$PKG/opt/fxdesk"
ln -s /opt/fxdesk/fxdesk "$PKG/usr/bin/fxdesk"
share_files "$PKG/usr"
install -m644 packaging/linux/copyright "$PKG/usr/share/doc/fxdesk/copyright"
LIBS=$("$PYTHON" packaging/deb_depends.py dist/fxdesk 2>build/deb/depends.txt) \
  || { cat build/deb/depends.txt >&2; exit 1; }
# bubblewrap is a program fxdesk runs (every agent command runs in it), so ldd cannot see it.
DEPENDS="$LIBS, bubblewrap"
SIZE=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
cat > "$PKG/DEBIAN/control" <<CONTROL
Package: fxdesk
Version: $VERSION
Architecture: $ARCH
Maintainer: The fxdesk developers <fxdesk@users.noreply.github.com>
Installed-Size: $SIZE
Depends: $DEPENDS
Recommends: git
Suggests: gnome-keyring | kwalletmanager
Section: devel
Priority: optional
Homepage: https://github.com/fxdesk/fxdesk
Description: desktop control room for AI coding agents
 fxdesk runs AI coding agents in your project folders: start sessions, watch
 them stream, answer their permission requests in one place, and keep the dev
 servers they start under control. Every command an agent runs is checked
 against your rules and runs in a bubblewrap sandbox.
 .
 This package holds a self-contained build (Python and Qt included) in
 /opt/fxdesk. Your data stays in ~/.local/share/fxdesk.
CONTROL
rm -f dist/fxdesk_*_"$ARCH".deb
start=$(date +%s)
dpkg-deb --root-owner-group -Z"${FXDESK_DEB_COMPRESSION:-zstd}" --build "$PKG" "$DEB" >/dev/null
echo "deb: $DEB, $(du -h "$DEB" | cut -f1) in $(( $(date +%s) - start )) s; Depends: $DEPENDS"

step "tarball"
NAME=fxdesk-$VERSION-linux-x86_64
TREE=build/tar/$NAME
rm -rf build/tar
mkdir -p "$TREE"
cp -a dist/fxdesk "$TREE/fxdesk"
share_files "$TREE"
install -m755 packaging/linux/install.sh "$TREE/install.sh"
rm -f dist/fxdesk-*-linux-x86_64.tar.gz
tar -C build/tar --owner=0 --group=0 --numeric-owner -czf "dist/$NAME.tar.gz" "$NAME"
echo "tarball: dist/$NAME.tar.gz, $(du -h "dist/$NAME.tar.gz" | cut -f1)"
(cd dist && sha256sum "$(basename "$DEB")" "$NAME.tar.gz" > SHA256SUMS)
