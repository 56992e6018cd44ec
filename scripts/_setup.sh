# Shared by scripts/run and scripts/test: system libraries and the virtual environment.
# Sourced, not executed. Idempotent: a second run only checks.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${FXDESK_VENV:-$ROOT/.venv}
PYTHON=${PYTHON:-python3}

# Qt's xcb and offscreen platform plugins need these (see docs/stack-notes.md), and bubblewrap
# the agent's commands; xvfb and xauth let the GUI tests and screenshots run with no screen.
APT_RUNTIME="libegl1 libgl1 libfontconfig1 libfreetype6 libxkbcommon0 libx11-6 libglib2.0-0
  libdbus-1-3 fonts-dejavu-core libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxkbcommon-x11-0
  libx11-xcb1 libxcb-image0 libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-shm0
  libxcb-sync1 libxcb-xfixes0 libxcb-xkb1 libxcb-util1 libxcb-render0
  libwayland-client0 libwayland-cursor0 libwayland-egl1
  bubblewrap"  # the sandbox every agent command runs in (fxdesk/tools/sandbox.py)
APT_TEST="xvfb xauth dbus-daemon git appstream desktop-file-utils"  # dbus-daemon: a private bus for
# the notification test; appstream, desktop-file-utils: the packaging tests validate the metadata;
# git: the protected-path tests make a real worktree

apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root or sudo to install: ${missing[*]}" >&2; return 1; }
    sudo="sudo"
  fi
  echo "installing system packages: ${missing[*]}"
  $sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >/dev/null
}

make_venv() {  # make_venv [extra]
  local extra=${1:-}
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "fxdesk needs Python 3.11 or newer ($PYTHON is older)" >&2; return 1; }
  # Debian's own python3 ships venv separately.
  "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
  fi
  local stamp="$VENV/.fxdesk-installed${extra:+-$extra}"
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      -e "$ROOT${extra:+[$extra]}"
    "$VENV/bin/python" -c "import fxdesk" >/dev/null
    touch "$stamp"
  fi
}
