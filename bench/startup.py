"""Time from `fxdesk` starting to its window being ready, and its memory then (offscreen).

Run: python -m bench.startup [RUNS]
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil


def once(data: Path) -> tuple[float, float]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    log = data / "logs" / "fxdesk.log"
    began = time.perf_counter()
    app = subprocess.Popen(
        [sys.executable, "-m", "fxdesk", "--data-dir", str(data)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not (log.exists() and "fxdesk.messages: Ready" in log.read_text()):
            if time.perf_counter() - began > 60:
                raise TimeoutError("fxdesk did not become ready")
            time.sleep(0.005)
        ready = time.perf_counter() - began
        rss = psutil.Process(app.pid).memory_info().rss / 2**20
    finally:
        app.send_signal(signal.SIGTERM)
        app.wait(30)
    log.unlink()
    return ready, rss


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as folder:
        results = [once(Path(folder)) for _ in range(runs)]
    times = [r[0] * 1000 for r in results]
    rss = [r[1] for r in results]
    print(
        f"start to ready ({runs} runs, offscreen): median {statistics.median(times):.0f} ms, "
        f"min {min(times):.0f} ms; RSS when ready: {statistics.median(rss):.0f} MiB"
    )


if __name__ == "__main__":
    main()
