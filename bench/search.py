"""Full-text search over many messages (issue 18 item 4: 100,000 messages in under 50 ms).

Builds a data folder with SESSIONS sessions of MESSAGES messages each (what a person asks and what
an agent answers: sentences of words from a 5,000-word vocabulary, Zipf-like, so some words are
everywhere and most are rare), through the real migration and triggers. Then times, on the real
store (its reader thread), ``history.search`` (the 50 newest hits with snippets, what the window
and ``fxdesk search`` ask) and ``history.sessions_mentioning`` (the filter box) for a rare word,
a common word, two words, and a word being typed (a prefix), against the reference: the plain
``LIKE`` scan the filter box used before the index (the same data, the same connection).

Run: python -m bench.search [SESSIONS] [MESSAGES]   (default 1000 x 100 = 100,000 messages)
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fxdesk.store import Store, history

RUNS = 15


def vocabulary(size: int = 5000) -> list[str]:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def build(store: Store, sessions: int, messages: int) -> list[str]:
    words = vocabulary()
    weights = [1 / (rank + 1) for rank in range(len(words))]  # Zipf-like
    rng = random.Random(11)
    db = store._db

    def job() -> None:
        db.execute_sql("INSERT INTO workspace VALUES (1, '/tmp/ws', 'ws', 0)")
        for s in range(sessions):
            sid = f"s{s:06d}"
            db.execute_sql(
                "INSERT INTO session (id, workspace_id, root_id, is_child, name, mode, "
                "permission_mode, state, created_at_ms, updated_at_ms) "
                "VALUES (?, 1, ?, 0, ?, 'persistent', 'auto', 'idle', 0, 0)",
                (sid, sid, f"session {s}"),
            )
            rows = []
            for m in range(messages):
                text = " ".join(rng.choices(words, weights, k=rng.randint(8, 60)))
                kind = "user" if m % 2 == 0 else "assistant"
                rows.append((sid, m + 1, kind, text, s * messages + m))
            for row in rows:
                db.execute_sql(
                    "INSERT INTO history_entry (session_id, seq, step, kind, content, "
                    "created_at_ms) VALUES (?, ?, 0, ?, ?, ?)",
                    row,
                )

    store.write_blocking(job)
    return words


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    times = []
    for _ in range(RUNS):
        began = time.perf_counter()
        fn()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times), max(times)


def like_scan(store: Store, word: str) -> Callable[[], object]:
    def read() -> object:
        return store._db.execute_sql(
            "SELECT session_id, MAX(seq) FROM history_entry WHERE kind IN ('user', 'assistant') "
            "AND content LIKE ? GROUP BY session_id LIMIT 500",
            (f"%{word}%",),
        ).fetchall()

    return lambda: store.read_blocking(read)


def main() -> None:
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    messages = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    folder = Path(tempfile.mkdtemp(prefix="fxdesk-bench-search-"))
    store = Store.open(folder / "fxdesk.sqlite3")
    try:
        began = time.perf_counter()
        words = build(store, sessions, messages)
        built = time.perf_counter() - began
        size = sum(p.stat().st_size for p in folder.glob("fxdesk.sqlite3*")) / 2**20
        print(
            f"{sessions * messages:,} messages in {sessions:,} sessions: written with the index "
            f"in {built:.1f} s, {size:.0f} MiB on disk"
        )
        common, rare = words[0], words[-1]
        queries = {
            "a common word": common,
            "a rare word": rare,
            "two words": f"{words[1]} {words[40]}",
            "a word being typed": words[-2][:3],
            "a phrase": f'"{words[0]} {words[1]}"',
        }
        header = ("query", "search (50 newest)", "filter (sessions)", "LIKE scan")
        print(f"{header[0]:<22} {header[1]:>18} {header[2]:>18} {header[3]:>12}")
        for label, text in queries.items():
            hits = len(store.read_blocking(lambda t=text: history.search(t)))
            med, worst = timed(lambda t=text: store.read_blocking(lambda: history.search(t)))
            fmed, _ = timed(
                lambda t=text: store.read_blocking(lambda: history.sessions_mentioning(t))
            )
            plain = text.strip('"').split()[0]
            lmed, _ = timed(like_scan(store, plain))
            print(
                f"{label:<22} {med:>9.1f} ms (max {worst:.0f}) {fmed:>12.1f} ms "
                f"{lmed:>9.1f} ms   [{hits} hits]"
            )
    finally:
        store.close()


if __name__ == "__main__":
    main()
