"""Ordered schema migrations.

The schema version lives in ``PRAGMA user_version``; ``PRAGMA application_id`` marks the file as
fxdesk's. Each migration runs in its own ``BEGIN IMMEDIATE`` transaction together with the version
bump, so a failure (disk full, lock timeout) leaves the database at the previous version, unchanged.

Migrations are plain SQL and frozen once released: the models in ``schema.py`` describe the newest
schema, and ``tests/store/test_migrations.py`` checks the two agree.

SQLite cannot change a CHECK constraint in place: a migration that must (``V5``) rebuilds the
table the way SQLite documents ("Making Other Kinds Of Table Schema Changes"): with foreign keys
off (``foreign_keys_off``: the store turns them off around the transaction, since the pragma is
ignored inside one), create the new table, copy, drop the old one, rename, recreate its indexes,
then ``PRAGMA foreign_key_check`` inside the same transaction: a row it finds rolls everything
back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

APPLICATION_ID = 0x46584453  # "FXDS"


class Cursor(Protocol):
    def fetchall(self) -> list[Any]: ...


Execute = Callable[[str], Cursor]


class MigrationError(Exception):
    """A migration found the database in a state it cannot carry forward (nothing changed)."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: Sequence[str]
    # Rebuilds a table others refer to: run with foreign keys off, checked before the commit.
    foreign_keys_off: bool = False

    def apply(self, execute: Execute) -> None:
        for statement in self.statements:
            execute(statement)
        if self.foreign_keys_off:
            broken = execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                table, rowid, parent, _ = broken[0]
                raise MigrationError(
                    f"schema {self.version} ({self.name}): {len(broken)} row(s) refer to rows "
                    f"that do not exist, e.g. {table} row {rowid} to {parent}; nothing was changed"
                )


_WORK_STATUSES = (
    "'pending','running','awaiting_approval','completed','failed','cancelled','interrupted'"
)
_SESSION_STATES = (
    "'idle','queued','running','awaiting_approval','interrupted','completed',"
    "'failed','cancelled','archived'"
)

V1 = Migration(
    1,
    "sessions, work items, history, control events, settings",
    [
        f"PRAGMA application_id = {APPLICATION_ID}",
        """
    CREATE TABLE workspace (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL
    )""",
        f"""
    CREATE TABLE session (
        id TEXT PRIMARY KEY,
        workspace_id INTEGER NOT NULL REFERENCES workspace(id) ON DELETE RESTRICT,
        parent_id TEXT REFERENCES session(id) ON DELETE RESTRICT,
        root_id TEXT NOT NULL,
        is_child INTEGER NOT NULL CHECK (is_child IN (0, 1)),
        name TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('one_off', 'persistent')),
        profile TEXT,
        model TEXT,
        effort TEXT,
        permission_mode TEXT NOT NULL CHECK (permission_mode IN ('ask', 'auto', 'yolo')),
        config_json TEXT NOT NULL DEFAULT '{{}}',
        state TEXT NOT NULL CHECK (state IN ({_SESSION_STATES})),
        archived_from TEXT CHECK (archived_from IS NULL OR archived_from IN ({_SESSION_STATES})),
        generation INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0),
        next_event_sequence INTEGER NOT NULL DEFAULT 1 CHECK (next_event_sequence >= 1),
        last_work_id TEXT,
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL
    )""",
        "CREATE INDEX session_workspace ON session (workspace_id)",
        "CREATE INDEX session_parent ON session (parent_id)",
        "CREATE INDEX session_root ON session (root_id)",
        f"""
    CREATE TABLE work_item (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        source_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('prompt', 'task', 'continuation', 'steer')),
        content TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ({_WORK_STATUSES})),
        reason TEXT,
        admission_json TEXT,
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL,
        UNIQUE (session_id, position)
    )""",
        # Recovery and the tree look for unfinished work; keep that lookup small.
        """
    CREATE INDEX work_item_unfinished ON work_item (session_id)
        WHERE status IN ('pending', 'running', 'awaiting_approval', 'interrupted')""",
        """
    CREATE TABLE history_entry (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        work_id TEXT REFERENCES work_item(id) ON DELETE SET NULL,
        step INTEGER NOT NULL DEFAULT 0,
        kind TEXT NOT NULL CHECK (kind IN
            ('user', 'assistant', 'tool_call', 'tool_result', 'turn_end', 'notice')),
        call_id TEXT,
        tool_name TEXT,
        content TEXT NOT NULL DEFAULT '',
        full_text TEXT,
        data_json TEXT,
        created_at_ms INTEGER NOT NULL,
        UNIQUE (session_id, seq)
    )""",
        "CREATE INDEX history_entry_work ON history_entry (work_id)",
        # A tool call and its result are each committed at most once.
        """
    CREATE UNIQUE INDEX history_entry_call ON history_entry (session_id, call_id, kind)
        WHERE call_id IS NOT NULL""",
        """
    CREATE TABLE control_event (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        sequence INTEGER NOT NULL CHECK (sequence >= 1),
        revision INTEGER NOT NULL,
        kind TEXT NOT NULL,
        work_id TEXT,
        previous TEXT,
        current TEXT,
        reason TEXT,
        data_json TEXT,
        created_at_ms INTEGER NOT NULL,
        UNIQUE (session_id, sequence)
    )""",
        """
    CREATE TABLE setting (
        key TEXT PRIMARY KEY,
        value_json TEXT NOT NULL,
        updated_at_ms INTEGER NOT NULL
    )""",
    ],
)

V2 = Migration(
    2,
    "deliveries, work notification policies, operation receipts, profiles",
    [
        # What a session reports to its root (the UI, or a parent agent): tool activity, terminal
        # outcomes, interval reports. Stable ids make every append exactly-once.
        """
    CREATE TABLE delivery (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        target_id TEXT NOT NULL,
        work_id TEXT,
        kind TEXT NOT NULL CHECK (kind IN ('tool_activity', 'terminal', 'interval')),
        payload_json TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL
    )""",
        "CREATE INDEX delivery_target ON delivery (target_id, created_at_ms)",
        # Where each committed turn ends: the model's context is "the last N turns".
        "CREATE INDEX history_turn_end ON history_entry (session_id, seq) WHERE kind = 'turn_end'",
        "CREATE INDEX delivery_session ON delivery (session_id, work_id)",
        # A work item's notification policy, captured at admission. When it stops it is kept,
        # marked stopped, so a later repair still knows which terminal notices were wanted.
        """
    CREATE TABLE work_policy (
        work_id TEXT PRIMARY KEY REFERENCES work_item(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        policy_json TEXT NOT NULL,
        started_at_ms INTEGER NOT NULL,
        next_due_ms INTEGER,
        stopped_at_ms INTEGER
    )""",
        "CREATE INDEX work_policy_active ON work_policy (session_id) WHERE stopped_at_ms IS NULL",
        # Receipts of idempotent session commands, replayable by operation id.
        """
    CREATE TABLE operation (
        id TEXT PRIMARY KEY,
        actor_id TEXT NOT NULL,
        session_id TEXT,
        code TEXT NOT NULL,
        generation INTEGER NOT NULL,
        event_sequence INTEGER NOT NULL,
        fingerprint TEXT NOT NULL,
        command_hash TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL
    )""",
        # Model provider profiles, without secrets (those live in the keyring).
        """
    CREATE TABLE profile (
        name TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('scripted', 'openai', 'anthropic')),
        base_url TEXT,
        model TEXT,
        script_path TEXT,
        settings_json TEXT NOT NULL DEFAULT '{}',
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL
    )""",
    ],
)

V3 = Migration(
    3,
    "permission rules and approvals",
    [
        # tool + pattern -> allow / ask / deny, for one session, one workspace or everywhere.
        """
    CREATE TABLE permission_rule (
        id INTEGER PRIMARY KEY,
        tool TEXT NOT NULL,
        pattern TEXT NOT NULL,
        match TEXT NOT NULL CHECK (match IN ('exact', 'prefix', 'glob')),
        action TEXT NOT NULL CHECK (action IN ('allow', 'ask', 'deny')),
        scope TEXT NOT NULL CHECK (scope IN ('session', 'workspace', 'global')),
        scope_key TEXT NOT NULL DEFAULT '',
        note TEXT NOT NULL DEFAULT '',
        created_at_ms INTEGER NOT NULL,
        UNIQUE (scope, scope_key, tool, pattern, match, action)
    )""",
        # A question to the person. The id is stable: (session, work item, request fingerprint).
        """
    CREATE TABLE approval (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        root_id TEXT NOT NULL,
        work_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        tool TEXT NOT NULL,
        label TEXT NOT NULL,
        explanation TEXT NOT NULL DEFAULT '',
        detail_json TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL CHECK (status IN ('pending', 'allowed_once', 'allowed_session',
            'allowed_always', 'denied', 'cancelled', 'stale')),
        resolution_json TEXT NOT NULL DEFAULT '{}',
        created_at_ms INTEGER NOT NULL,
        resolved_at_ms INTEGER
    )""",
        "CREATE INDEX approval_pending ON approval (session_id) WHERE status = 'pending'",
        "CREATE INDEX approval_work ON approval (work_id)",
    ],
)

V4 = Migration(
    4,
    "the fxdesk process that queued each work item",
    [
        # The instance (``store/locks.py`` InstanceLock) whose engine queued the item and will
        # run it. Restart recovery interrupts pending work only when that process is dead; NULL
        # means queued for whichever fxdesk runs the session next (``fxdesk send --no-wait``),
        # which no restart interrupts. Items queued before this version are NULL: handed off.
        "ALTER TABLE work_item ADD COLUMN owner_instance TEXT",
        # Recovery looks up who queued pending work, and the window looks for handed-off work
        # (no owner) every second: keep both lookups to the pending items.
        """
    CREATE INDEX work_item_pending_owner ON work_item (owner_instance, session_id)
        WHERE status = 'pending'""",
    ],
)

_SESSION_COLUMNS = (
    "id, workspace_id, parent_id, root_id, is_child, name, mode, profile, model, effort, "
    "permission_mode, config_json, state, archived_from, generation, next_event_sequence, "
    "last_work_id, created_at_ms, updated_at_ms"
)

V5 = Migration(
    5,
    "the unrestricted permission mode",
    [
        # As V1's session table, with 'unrestricted' allowed (yolo without the sandbox).
        f"""
    CREATE TABLE session_new (
        id TEXT PRIMARY KEY,
        workspace_id INTEGER NOT NULL REFERENCES workspace(id) ON DELETE RESTRICT,
        parent_id TEXT REFERENCES session(id) ON DELETE RESTRICT,
        root_id TEXT NOT NULL,
        is_child INTEGER NOT NULL CHECK (is_child IN (0, 1)),
        name TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('one_off', 'persistent')),
        profile TEXT,
        model TEXT,
        effort TEXT,
        permission_mode TEXT NOT NULL
            CHECK (permission_mode IN ('ask', 'auto', 'yolo', 'unrestricted')),
        config_json TEXT NOT NULL DEFAULT '{{}}',
        state TEXT NOT NULL CHECK (state IN ({_SESSION_STATES})),
        archived_from TEXT CHECK (archived_from IS NULL OR archived_from IN ({_SESSION_STATES})),
        generation INTEGER NOT NULL DEFAULT 0 CHECK (generation >= 0),
        next_event_sequence INTEGER NOT NULL DEFAULT 1 CHECK (next_event_sequence >= 1),
        last_work_id TEXT,
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL
    )""",
        f"INSERT INTO session_new ({_SESSION_COLUMNS}) SELECT {_SESSION_COLUMNS} FROM session",
        "DROP TABLE session",
        "ALTER TABLE session_new RENAME TO session",
        "CREATE INDEX session_workspace ON session (workspace_id)",
        "CREATE INDEX session_parent ON session (parent_id)",
        "CREATE INDEX session_root ON session (root_id)",
    ],
    foreign_keys_off=True,
)

V6 = Migration(
    6,
    "background tasks",
    [
        # A durable background task's record (spec §2.19, §6.9): one row per task, keyed by its
        # session and the number it got at launch, unique by session and stable id. Process-local
        # tasks have none (Appendix A 10). ``owner_instance`` is the fxdesk process that runs it
        # (``store/locks.py`` InstanceLock): another live process only reads it.
        """
    CREATE TABLE background_task (
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        number INTEGER NOT NULL CHECK (number >= 1),
        stable_id TEXT NOT NULL CHECK (length(stable_id) = 32),
        workspace_id INTEGER NOT NULL,
        policy TEXT NOT NULL CHECK (policy IN ('durable', 'saved_headless')),
        origin TEXT NOT NULL CHECK (origin IN ('agent', 'person')),
        pid INTEGER NOT NULL,
        process_token TEXT,
        command TEXT NOT NULL,
        cwd TEXT NOT NULL,
        log_path TEXT NOT NULL,
        expect_url INTEGER NOT NULL CHECK (expect_url IN (0, 1)),
        server_url TEXT,
        exit_code INTEGER,
        state TEXT NOT NULL CHECK (state IN
            ('running', 'exited', 'failed', 'dead', 'stopped', 'stale')),
        diagnostic TEXT,
        owner_instance TEXT,
        started_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL,
        PRIMARY KEY (session_id, number),
        UNIQUE (session_id, stable_id)
    )""",
        # Start-up restores the running ones; the dock lists a workspace's.
        "CREATE INDEX background_task_running ON background_task (state) WHERE state = 'running'",
        "CREATE INDEX background_task_workspace ON background_task (workspace_id)",
    ],
)

_RUN_STATUSES = (
    "'queued','running','waiting_children','completed','failed','timed_out','cancelled',"
    "'interrupted'"
)

V7 = Migration(
    7,
    "agent runs, the root session's inbox and its counters",
    [
        # The process activation counter (spec agent-coordinator §4.4): every start takes the
        # next generation; runs record the one that accepted them.
        """
    CREATE TABLE runtime_meta (
        key TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    )""",
        # One delegated task, written before anything executes (spec §2.1). It runs as the
        # one-off child session ``child_session_id`` of ``caller_session_id``. ``tree_id`` is the
        # top run of its delegation tree, ``group_id``/``group_index`` its batch and place in it.
        f"""
    CREATE TABLE agent_run (
        id TEXT PRIMARY KEY,
        root_session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        caller_session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        child_session_id TEXT UNIQUE REFERENCES session(id) ON DELETE SET NULL,
        parent_run_id TEXT REFERENCES agent_run(id) ON DELETE CASCADE,
        tree_id TEXT NOT NULL,
        group_id TEXT NOT NULL,
        group_index INTEGER NOT NULL CHECK (group_index >= 0),
        caller_agent_id TEXT NOT NULL,
        root_turn_id TEXT,
        call_id TEXT,
        idempotency_key TEXT UNIQUE,
        agent_id TEXT NOT NULL CHECK (agent_id != ''),
        definition_hash TEXT NOT NULL DEFAULT '',
        provider_profile TEXT NOT NULL DEFAULT '',
        model_id TEXT NOT NULL DEFAULT '',
        mode TEXT NOT NULL CHECK (mode IN ('foreground', 'background')),
        depth INTEGER NOT NULL CHECK (depth >= 1),
        execution_id TEXT NOT NULL,
        runtime_generation INTEGER NOT NULL CHECK (runtime_generation >= 1),
        owner_instance TEXT,
        task TEXT NOT NULL,
        context TEXT,
        budget_json TEXT NOT NULL,
        signal_lane TEXT CHECK (signal_lane IS NULL OR signal_lane IN ('queue', 'steer')),
        deadline_at_ms INTEGER NOT NULL,
        completion_slot_reserved INTEGER NOT NULL CHECK (completion_slot_reserved IN (0, 1)),
        status TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ({_RUN_STATUSES})),
        created_at_ms INTEGER NOT NULL,
        started_at_ms INTEGER,
        finished_at_ms INTEGER,
        updated_at_ms INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        result TEXT,
        summary TEXT,
        error TEXT,
        tool_calls INTEGER,
        iterations INTEGER,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        cost REAL,
        signal_ids_json TEXT,
        timed_out_at_ms INTEGER,
        CHECK ((mode = 'background') = (completion_slot_reserved = 1))
    )""",
        "CREATE INDEX agent_run_session ON agent_run (root_session_id, created_at_ms, id)",
        "CREATE INDEX agent_run_parent ON agent_run (parent_run_id)",
        "CREATE INDEX agent_run_tree ON agent_run (tree_id)",
        "CREATE INDEX agent_run_group ON agent_run (group_id, group_index)",
        # Recovery and the deadline watch look only at unfinished runs.
        """
    CREATE INDEX agent_run_active ON agent_run (runtime_generation)
        WHERE status IN ('queued', 'running', 'waiting_children')""",
        # The root session's inbox (spec §2.7): completions and signals. The key is unique per
        # session: ``completion:<run id>`` makes one completion per run a constraint.
        """
    CREATE TABLE agent_inbox (
        id TEXT PRIMARY KEY,
        root_session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        run_id TEXT NOT NULL REFERENCES agent_run(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('completion', 'signal')),
        event_key TEXT NOT NULL,
        lane TEXT NOT NULL DEFAULT 'queue' CHECK (lane IN ('queue', 'steer')),
        status TEXT NOT NULL CHECK (status IN
            ('pending', 'claimed', 'consumed', 'superseded', 'dead')),
        requires_continuation INTEGER NOT NULL CHECK (requires_continuation IN (0, 1)),
        payload_json TEXT NOT NULL,
        severity TEXT CHECK (severity IS NULL OR severity IN
            ('info', 'warning', 'error', 'critical')),
        signal_key TEXT,
        dedupe_key TEXT,
        count INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1),
        revision INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        lease_owner TEXT,
        lease_expires_at_ms INTEGER,
        available_at_ms INTEGER NOT NULL,
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL,
        consumed_at_ms INTEGER,
        last_error TEXT,
        UNIQUE (root_session_id, event_key)
    )""",
        "CREATE INDEX agent_inbox_due ON agent_inbox (root_session_id, status, available_at_ms)",
        "CREATE INDEX agent_inbox_run ON agent_inbox (run_id)",
        """
    CREATE INDEX agent_inbox_dedupe ON agent_inbox (root_session_id, dedupe_key, created_at_ms)
        WHERE dedupe_key IS NOT NULL""",
        # Per root session: the capacity counters (a cache of the rows, spec §4.6) and the
        # revision every run or inbox change bumps, so views order projections.
        """
    CREATE TABLE agent_session_state (
        root_session_id TEXT PRIMARY KEY REFERENCES session(id) ON DELETE CASCADE,
        pending_count INTEGER NOT NULL DEFAULT 0 CHECK (pending_count >= 0),
        reserved_count INTEGER NOT NULL DEFAULT 0 CHECK (reserved_count >= 0),
        revision INTEGER NOT NULL DEFAULT 0 CHECK (revision >= 0),
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL
    )""",
    ],
)

# What full-text search indexes: what the person said and what the agents answered.
_SEARCHED = "('user', 'assistant')"

V8 = Migration(
    8,
    "full-text search of messages",
    [
        # An external-content FTS5 index over history_entry.content (the text is stored once),
        # kept in step by triggers: every write of the history updates it in the same
        # transaction, so a search never sees a message the history does not have, or misses
        # one it has (issue 18 item 4).
        """
    CREATE VIRTUAL TABLE history_fts USING fts5(
        content, content='history_entry', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2'
    )""",
        f"""
    CREATE TRIGGER history_fts_insert AFTER INSERT ON history_entry
    WHEN new.kind IN {_SEARCHED} BEGIN
        INSERT INTO history_fts (rowid, content) VALUES (new.id, new.content);
    END""",
        f"""
    CREATE TRIGGER history_fts_delete AFTER DELETE ON history_entry
    WHEN old.kind IN {_SEARCHED} BEGIN
        INSERT INTO history_fts (history_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
    END""",
        f"""
    CREATE TRIGGER history_fts_update AFTER UPDATE OF content, kind ON history_entry BEGIN
        INSERT INTO history_fts (history_fts, rowid, content)
        SELECT 'delete', old.id, old.content WHERE old.kind IN {_SEARCHED};
        INSERT INTO history_fts (rowid, content)
        SELECT new.id, new.content WHERE new.kind IN {_SEARCHED};
    END""",
        f"INSERT INTO history_fts (rowid, content) SELECT id, content FROM history_entry "
        f"WHERE kind IN {_SEARCHED}",
    ],
)

_PROFILE_COLUMNS = (
    "name, kind, base_url, model, script_path, settings_json, created_at_ms, updated_at_ms"
)

V9 = Migration(
    9,
    "external agents (ACP) as profiles",
    [
        # As V2's profile table, with 'acp' allowed (an Agent Client Protocol agent; its
        # command, arguments and environment live in settings_json). Nothing references it.
        """
    CREATE TABLE profile_new (
        name TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('scripted', 'openai', 'anthropic', 'acp')),
        base_url TEXT,
        model TEXT,
        script_path TEXT,
        settings_json TEXT NOT NULL DEFAULT '{}',
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL
    )""",
        f"INSERT INTO profile_new ({_PROFILE_COLUMNS}) SELECT {_PROFILE_COLUMNS} FROM profile",
        "DROP TABLE profile",
        "ALTER TABLE profile_new RENAME TO profile",
    ],
)

V10 = Migration(
    10,
    "images attached to messages",
    [
        # One row per image the person attached to a message, with its bytes: kept with the
        # message's work item (the history row of the message lists the image by id, issue 18
        # item 6). The bytes live in the database, not beside it, so a backup, an export or a
        # session's deletion takes them along in the same transaction as the rest.
        """
    CREATE TABLE image_attachment (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        work_id TEXT REFERENCES work_item(id) ON DELETE SET NULL,
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        media_type TEXT NOT NULL
            CHECK (media_type IN ('image/png', 'image/jpeg', 'image/gif', 'image/webp')),
        width INTEGER NOT NULL DEFAULT 0,
        height INTEGER NOT NULL DEFAULT 0,
        size INTEGER NOT NULL,
        data BLOB NOT NULL,
        created_at_ms INTEGER NOT NULL
    )""",
        "CREATE INDEX image_attachment_work ON image_attachment (work_id, position)",
        "CREATE INDEX image_attachment_session ON image_attachment (session_id)",
    ],
)

MIGRATIONS: tuple[Migration, ...] = (V1, V2, V3, V4, V5, V6, V7, V8, V9, V10)
LATEST_VERSION = MIGRATIONS[-1].version


def pending(current_version: int) -> list[Migration]:
    """The migrations still to run on a database at ``current_version``, in order."""
    return [m for m in MIGRATIONS if m.version > current_version]


def _check_order() -> None:
    for index, migration in enumerate(MIGRATIONS, start=1):
        if migration.version != index:
            raise AssertionError(
                f"migration {migration.name!r} is numbered {migration.version}, expected {index}"
            )


_check_order()
