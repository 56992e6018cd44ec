#!/usr/bin/env bash
# Make dist/fxdesk-<version>-macos.dmg from dist/fxdesk.app (the spec's BUNDLE). macOS only:
# NOT RUN OR TESTED here (packaging/README.md, "macOS"). hdiutil ships with macOS.
#   build/venv/bin/pyinstaller --noconfirm --distpath dist --workpath build/pyinstaller packaging/fxdesk.spec
#   packaging/macos/make-dmg.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(uname)" = Darwin ] || { echo "make-dmg.sh runs on macOS" >&2; exit 1; }
VERSION=$(python3 -c 'import sys; sys.path.insert(0, "."); import fxdesk; print(fxdesk.__version__)')
STAGE=build/dmg
rm -rf "$STAGE" && mkdir -p "$STAGE"
cp -R dist/fxdesk.app "$STAGE/"
ln -s /Applications "$STAGE/Applications"  # drag the app onto it to install
# Signing and notarization need an Apple Developer ID (not available to this project yet):
#   codesign --deep --force --options runtime --sign "Developer ID Application: ..." "$STAGE/fxdesk.app"
#   xcrun notarytool submit dist/fxdesk-$VERSION-macos.dmg --wait ...; xcrun stapler staple ...
hdiutil create -volname "fxdesk $VERSION" -srcfolder "$STAGE" -ov -format UDZO \
  "dist/fxdesk-$VERSION-macos.dmg"
