#!/bin/sh
# Install fxdesk from this unpacked tarball for the current user, under ~/.local:
#   ~/.local/lib/fxdesk/                 the program (this folder's fxdesk/)
#   ~/.local/bin/fxdesk                  a link to it (put ~/.local/bin on your PATH)
#   ~/.local/share/applications/, icons/hicolor/, metainfo/   the menu entry and its icons
#
#   ./install.sh               install, or upgrade an earlier install
#   ./install.sh --uninstall   remove what an install put there (also:
#                              ~/.local/lib/fxdesk/install.sh --uninstall)
#
# PREFIX=/some/where ./install.sh uses another prefix. Your data (~/.local/share/fxdesk, or
# $FXDESK_HOME) is never touched, by installing or by uninstalling.
set -eu

APP_ID=io.github.fxdesk.Fxdesk
PREFIX=${PREFIX:-$HOME/.local}
LIB=$PREFIX/lib/fxdesk
MANIFEST=$LIB/installed-files
HERE=$(cd "$(dirname "$0")" && pwd)

say() { printf '%s\n' "$*"; }

refresh_caches() {
  # Menus and icon themes pick changes up by themselves on most desktops; these make it
  # immediate where the tools exist.
  if command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database -q "$PREFIX/share/applications" 2>/dev/null || true
  fi
  if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -f "$PREFIX/share/icons/hicolor/index.theme" ]; then
    gtk-update-icon-cache -q -t "$PREFIX/share/icons/hicolor" 2>/dev/null || true
  fi
}

uninstall() {
  if [ ! -f "$MANIFEST" ]; then
    say "fxdesk is not installed under $PREFIX (no $MANIFEST)"
    return 1
  fi
  while IFS= read -r file; do
    case $file in
      "$PREFIX"/*) rm -f "$file" ;;  # only what this script wrote, and only under PREFIX
    esac
  done < "$MANIFEST"
  rm -rf "$LIB"
  refresh_caches
  say "fxdesk removed from $PREFIX (your data folder is kept)"
}

if [ "${1:-}" = "--uninstall" ]; then
  uninstall
  exit $?
fi
if [ $# -gt 0 ]; then
  say "usage: $0 [--uninstall]" >&2
  exit 2
fi
if [ ! -x "$HERE/fxdesk/fxdesk" ]; then
  say "$HERE/fxdesk/fxdesk is missing: run install.sh from the unpacked tarball" >&2
  exit 1
fi

# The program: copied next to its final place, then swapped in, so an upgrade never leaves a
# half-copied folder; the old one goes only after the new one is in place.
mkdir -p "$PREFIX/lib" "$PREFIX/bin"
rm -rf "$LIB.new" "$LIB.old"
cp -a "$HERE/fxdesk" "$LIB.new"
cp "$HERE/install.sh" "$LIB.new/install.sh"
if [ -d "$LIB" ]; then
  mv "$LIB" "$LIB.old"
fi
mv "$LIB.new" "$LIB"
rm -rf "$LIB.old"

: > "$MANIFEST"
put() {  # put SOURCE TARGET: copy a file and remember it for --uninstall
  mkdir -p "$(dirname "$2")"
  cp "$1" "$2"
  printf '%s\n' "$2" >> "$MANIFEST"
}

ln -sfn "$LIB/fxdesk" "$PREFIX/bin/fxdesk"
printf '%s\n' "$PREFIX/bin/fxdesk" >> "$MANIFEST"
# The menu entry starts the program by its full path: ~/.local/bin is often not on the PATH
# of the desktop session.
mkdir -p "$PREFIX/share/applications"
sed "s|^Exec=fxdesk|Exec=$LIB/fxdesk|" "$HERE/share/applications/$APP_ID.desktop" \
  > "$PREFIX/share/applications/$APP_ID.desktop"
printf '%s\n' "$PREFIX/share/applications/$APP_ID.desktop" >> "$MANIFEST"
put "$HERE/share/metainfo/$APP_ID.metainfo.xml" "$PREFIX/share/metainfo/$APP_ID.metainfo.xml"
(cd "$HERE/share/icons" && find . -type f) | while IFS= read -r icon; do
  put "$HERE/share/icons/$icon" "$PREFIX/share/icons/$icon"
done
refresh_caches

say "fxdesk $("$LIB/fxdesk" --version | cut -d' ' -f2) installed in $LIB"
case ":$PATH:" in
  *":$PREFIX/bin:"*) ;;
  *) say "note: $PREFIX/bin is not on your PATH; the menu entry works anyway" ;;
esac
say "uninstall: $LIB/install.sh --uninstall"
