"""Several real fxdesk processes on one data folder, for ``test_concurrency.py``.

``Folder`` is the data folder and workspace they share; ``Host`` is a ``conc_host`` process
(the window's App, headless) driven on its stdin; ``Folder.cli`` runs the real ``fxdesk``
command. ``Folder.violations`` reads what must hold from the files alone: every model step of
every message asked once, every tool side effect done once, at most one committed turn per work
item, and ``PRAGMA integrity_check`` ok.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from tests.helpers import child_env, fxdesk_command

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120.0


class Host:
    """One ``conc_host`` process; ``ask`` sends a command and waits for its answer line."""

    def __init__(self, folder: Folder, clock: Path | None = None) -> None:
        args = [str(folder.data), str(folder.workspace), str(folder.calls)]
        if clock is not None:
            args.append(str(clock))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.conc_host", *args],
            cwd=REPO,
            env=child_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()
        started = self.expect("STARTED")
        self.pid = int(started.split()[1])

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.errors.append(line.rstrip("\n"))

    def send_line(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def expect(self, prefix: str, timeout: float = TIMEOUT_S) -> str:
        """The next line starting with ``prefix`` (an ``ERROR`` line fails the test)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"host {self.process.pid}: no {prefix!r} within {timeout} s; "
                    f"saw {self.seen[-5:]}; stderr {self.errors[-5:]}"
                )
            try:
                line = self.lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    raise AssertionError(
                        f"host {self.process.pid} ended ({self.process.returncode}) before "
                        f"{prefix!r}; stderr {self.errors[-10:]}"
                    ) from None
                continue
            self.seen.append(line)
            if line.startswith(prefix):
                return line
            if line.startswith("ERROR"):
                raise AssertionError(f"host {self.process.pid}: {line}")

    def answer(self, line: str, timeout: float = TIMEOUT_S) -> str:
        """Send ``line`` and return the next answer, an ``ERROR`` line included."""
        self.send_line(line)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                got = self.lines.get(timeout=1.0)
            except queue.Empty:
                continue
            self.seen.append(got)
            return got
        raise AssertionError(f"host {self.process.pid}: no answer to {line!r} in {timeout} s")

    def ask(self, line: str, answer: str, timeout: float = TIMEOUT_S) -> str:
        self.send_line(line)
        return self.expect(answer, timeout)

    def create(self, name: str, text: str) -> str:
        return self.ask(f"create {name} {text}", f"SESSION {name}").split()[2]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.signal(signal.SIGCONT)
            try:
                self.send_line("quit")
                self.expect("STOPPED", 60)
            except (AssertionError, OSError):
                pass
        if self.process.poll() is None:
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)

    def signal(self, signum: int) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signum)


class Folder:
    """The data folder, workspace and records that every process of a test shares."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.workspace = root / "ws"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.calls = root / "calls.jsonl"
        self.hosts: list[Host] = []

    def host(self, clock: Path | None = None) -> Host:
        host = Host(self, clock)
        self.hosts.append(host)
        return host

    def stop_all(self) -> None:
        for host in self.hosts:
            host.stop()

    def cli(self, *args: str, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            fxdesk_command("--data-dir", str(self.data), *args),
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def call_log(self) -> list[dict[str, object]]:
        if not self.calls.exists():
            return []
        return [json.loads(line) for line in self.calls.read_text().splitlines() if line]

    def asked(self, label: str, step: int | None = None) -> int:
        return sum(
            1
            for c in self.call_log()
            if c["label"] == label and (step is None or c["step"] == step)
        )

    def tags(self) -> list[str]:
        path = self.workspace / "tags.txt"
        return path.read_text().split() if path.exists() else []

    def query(self, sql: str, *params: object) -> list[tuple[object, ...]]:
        with sqlite3.connect(f"file:{self.data / 'fxdesk.sqlite3'}?mode=ro", uri=True) as db:
            db.execute("PRAGMA busy_timeout = 30000")
            return db.execute(sql, params).fetchall()

    def statuses(self, session_id: str) -> list[str]:
        rows = self.query(
            "SELECT status FROM work_item WHERE session_id = ? ORDER BY position", session_id
        )
        return [str(r[0]) for r in rows]

    def item_status(self, content_prefix: str) -> str | None:
        rows = self.query("SELECT status FROM work_item WHERE content LIKE ?", content_prefix + "%")
        return str(rows[0][0]) if rows else None

    def violations(self) -> list[str]:
        found: list[str] = []
        twice = Counter((c["label"], c["step"]) for c in self.call_log())
        found += [
            f"{label} step {step} asked {n} times" for (label, step), n in twice.items() if n > 1
        ]
        found += [f"tag {t} written {n} times" for t, n in Counter(self.tags()).items() if n > 1]
        turns = self.query(
            "SELECT work_id, COUNT(*) FROM history_entry WHERE kind = 'turn_end' "
            "GROUP BY work_id HAVING COUNT(*) > 1"
        )
        found += [f"work item {w} has {n} committed turns" for w, n in turns]
        running = self.query("SELECT COUNT(*) FROM work_item WHERE status = 'running'")
        if running[0][0]:
            found.append(f"{running[0][0]} work items still running with every process idle")
        with sqlite3.connect(self.data / "fxdesk.sqlite3") as db:
            check = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
        if check != ["ok"]:
            found.append(f"integrity_check: {check[:3]}")
        return found


class Window:
    """The real window (``python -m fxdesk``) on the folder, offscreen."""

    def __init__(self, folder: Folder) -> None:
        log = folder.data / "logs" / "fxdesk.log"
        ready_before = _count(log, "startup: handed-off work ready")
        # Its output to a file: an unread pipe that fills would freeze the window.
        with open(folder.root / "window-output.txt", "ab") as output:
            self.process = subprocess.Popen(
                fxdesk_command("--data-dir", str(folder.data)),
                env=child_env(QT_QPA_PLATFORM="offscreen"),
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + TIMEOUT_S
        while _count(log, "startup: handed-off work ready") <= ready_before:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the window did not start: {self.process.returncode}")
            time.sleep(0.1)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the orderly quit
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        return self.process.returncode


def _count(path: Path, text: str) -> int:
    try:
        return path.read_text(errors="replace").count(text)
    except FileNotFoundError:
        return 0
