#!/usr/bin/env bash
# Start-up times of a frozen fxdesk beside a virtualenv one (numbers in packaging/README.md):
#   packaging/measure-startup.sh FROZEN_FXDESK VENV_FXDESK [RUNS]
# For each program: `--version` (the bare interpreter and argument parsing), and the window
# from launch until it is shown with the data loaded (the log's "Ready"), offscreen and, under
# xvfb-run, on X11 (xcb); each on a fresh temporary data folder with the demo profile, quit by
# SIGTERM. Prints the median of RUNS (default 5) in milliseconds.
set -euo pipefail
RUNS=${3:-5}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

window_ms() {  # window_ms PROGRAM PLATFORM: one launch until "Ready", in ms
  local program=$1 platform=$2 data start pid
  data=$(mktemp -d)
  "$program" --data-dir "$data" profiles add demo --kind scripted --default >/dev/null
  start=$(date +%s%N)
  QT_QPA_PLATFORM=$platform "$program" --data-dir "$data" >/dev/null 2>&1 &
  pid=$!
  until grep -q "fxdesk.messages: Ready" "$data/logs/fxdesk.log" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "fxdesk exited before it was ready" >&2; return 1; }
    sleep 0.01
  done
  echo $(( ($(date +%s%N) - start) / 1000000 ))
  kill -TERM "$pid"
  wait "$pid" || true
  rm -rf "$data"
}

if [ "${1:-}" = "--window" ]; then  # inside xvfb-run: --window PROGRAM PLATFORM RUNS
  for _ in $(seq "$4"); do window_ms "$2" "$3"; done | median
  exit 0
fi

for program in "$1" "$2"; do
  "$program" --version >/dev/null  # the page cache warm for both
  version=$(for _ in $(seq "$RUNS"); do
    start=$(date +%s%N); "$program" --version >/dev/null
    echo $(( ($(date +%s%N) - start) / 1000000 ))
  done | median)
  offscreen=$(for _ in $(seq "$RUNS"); do window_ms "$program" offscreen; done | median)
  xcb=$(xvfb-run -a "$0" --window "$program" xcb "$RUNS" || echo "n/a")
  echo "$program: --version ${version} ms; window ready offscreen ${offscreen} ms, xcb (Xvfb) ${xcb} ms"
done
