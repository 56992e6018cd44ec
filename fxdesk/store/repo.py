"""Repositories: queries that return domain snapshots, never live rows.

Functions here run *inside* a store job (``await store.read(repo.list_sessions)`` or as part of a
larger ``store.write`` transaction); they do no threading of their own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from fxdesk.domain import run_commands
from fxdesk.domain.model import (
    UNRESTRICTED_SETTING,
    KeySource,
    PermissionMode,
    Profile,
    Receipt,
    Session,
    SessionMode,
    SessionState,
    Workspace,
)
from fxdesk.domain.run_commands import RunCommand
from fxdesk.domain.sandbox_settings import WorkspaceSandbox
from fxdesk.domain.sandbox_settings import setting_key as sandbox_setting_key
from fxdesk.domain.work import ControlRecord
from fxdesk.store.schema import (
    ControlEventRow,
    OperationRow,
    ProfileRow,
    SessionRow,
    SettingRow,
    WorkspaceRow,
    database_proxy,
)


def now_ms() -> int:
    """The wall clock, for rows the store stamps itself (settings, profiles). The engine
    passes its injected clock's time instead wherever it has one."""
    return time.time_ns() // 1_000_000


def workspace_from_row(row: WorkspaceRow) -> Workspace:
    return Workspace(id=row.id, path=row.path, name=row.name, created_at_ms=row.created_at_ms)


def session_from_row(row: SessionRow) -> Session:
    return Session(
        id=row.id,
        workspace_id=row.workspace_id,
        parent_id=row.parent_id,
        root_id=row.root_id,
        is_child=bool(row.is_child),
        name=row.name,
        mode=SessionMode(row.mode),
        profile=row.profile,
        model=row.model,
        effort=row.effort,
        permission_mode=PermissionMode(row.permission_mode),
        state=SessionState(row.state),
        archived_from=SessionState(row.archived_from) if row.archived_from else None,
        generation=row.generation,
        next_event_sequence=row.next_event_sequence,
        last_work_id=row.last_work_id,
        created_at_ms=row.created_at_ms,
        updated_at_ms=row.updated_at_ms,
        config_json=row.config_json or "{}",
    )


def list_workspaces() -> list[Workspace]:
    return [workspace_from_row(r) for r in WorkspaceRow.select().order_by(WorkspaceRow.name)]


def ensure_workspace(path: str, name: str, at_ms: int) -> tuple[Workspace, bool]:
    """The workspace for ``path`` and whether it was created now (call inside a write)."""
    row = WorkspaceRow.get_or_none(WorkspaceRow.path == path)
    created = row is None
    if row is None:
        row = WorkspaceRow.create(path=path, name=name, created_at_ms=at_ms)
    return workspace_from_row(row), created


SESSION_COLUMNS = (
    "id, workspace_id, parent_id, root_id, is_child, name, mode, profile, model, effort, "
    "permission_mode, state, archived_from, generation, next_event_sequence, last_work_id, "
    "created_at_ms, updated_at_ms, config_json"
)


def session_from_columns(row: Sequence[Any]) -> Session:
    # Plain SQL: sessions are read on every transition, and peewee's query building costs
    # ~0.5 ms per lookup there.
    return Session(
        id=row[0],
        workspace_id=row[1],
        parent_id=row[2],
        root_id=row[3],
        is_child=bool(row[4]),
        name=row[5],
        mode=SessionMode(row[6]),
        profile=row[7],
        model=row[8],
        effort=row[9],
        permission_mode=PermissionMode(row[10]),
        state=SessionState(row[11]),
        archived_from=SessionState(row[12]) if row[12] else None,
        generation=row[13],
        next_event_sequence=row[14],
        last_work_id=row[15],
        created_at_ms=row[16],
        updated_at_ms=row[17],
        config_json=row[18] or "{}",
    )


# ``PermissionMode(value)`` goes through ``EnumType.__call__`` (~0.4 µs); the snapshot after a
# change is built on every transition.
_PERMISSION_MODES = {mode.value: mode for mode in PermissionMode}


def session_after_change(row: Sequence[Any], record: ControlRecord) -> Session:
    """The session of ``row`` (``SESSION_COLUMNS``) with the columns ``control.save_change``
    writes taken from ``record``: the snapshot after a change, without reading the row again
    or building the one before (issue 17: durable transitions)."""
    return Session(
        id=row[0],
        workspace_id=row[1],
        parent_id=row[2],
        root_id=row[3],
        is_child=bool(row[4]),
        name=row[5],
        mode=record.mode,
        profile=row[7],
        model=row[8],
        effort=row[9],
        permission_mode=_PERMISSION_MODES[row[10]],
        state=record.state,
        archived_from=record.archived_from,
        generation=record.generation,
        next_event_sequence=record.next_event_sequence,
        last_work_id=row[15],
        created_at_ms=row[16],
        updated_at_ms=record.updated_at_ms,
        config_json=row[18] or "{}",
    )


def list_sessions(*, include_archived: bool = False) -> list[Session]:
    where = "" if include_archived else "WHERE state != 'archived' "
    rows = database_proxy.execute_sql(
        f"SELECT {SESSION_COLUMNS} FROM session {where}ORDER BY created_at_ms, id"
    ).fetchall()
    return [session_from_columns(row) for row in rows]


def get_session(session_id: str) -> Session | None:
    row = database_proxy.execute_sql(
        f"SELECT {SESSION_COLUMNS} FROM session WHERE id = ?", (session_id,)
    ).fetchone()
    return session_from_columns(row) if row is not None else None


def set_session_config(session_id: str, key: str, value: Any) -> Session | None:
    """Set (or, with None, remove) one key of a session's config; the session after."""
    session = get_session(session_id)
    if session is None:
        return None
    config = session.config
    if value is None:
        config.pop(key, None)
    else:
        config[key] = value
    (
        SessionRow.update(config_json=json.dumps(config, sort_keys=True), updated_at_ms=now_ms())
        .where(SessionRow.id == session_id)
        .execute()
    )
    return get_session(session_id)


def get_setting(key: str, default: Any = None) -> Any:
    row = SettingRow.get_or_none(SettingRow.key == key)
    return json.loads(row.value_json) if row is not None else default


def set_setting(key: str, value: Any) -> None:
    payload = json.dumps(value, sort_keys=True)
    (
        SettingRow.insert(key=key, value_json=payload, updated_at_ms=now_ms())
        .on_conflict_replace()
        .execute()
    )


def unrestricted_enabled() -> bool:
    """Whether the person turned on ``unrestricted`` mode (yolo without the sandbox)."""
    return get_setting(UNRESTRICTED_SETTING) is True


def get_workspace_sandbox(workspace_id: int) -> WorkspaceSandbox:
    """One workspace's sandbox settings (the defaults when none are saved)."""
    return WorkspaceSandbox.from_value(get_setting(sandbox_setting_key(workspace_id)))


def set_workspace_sandbox(workspace_id: int, settings: WorkspaceSandbox) -> None:
    set_setting(sandbox_setting_key(workspace_id), settings.to_value())


def get_run_commands(workspace_id: int) -> tuple[RunCommand, ...]:
    """The person's saved commands of one workspace, in their order (none when none saved)."""
    return run_commands.from_value(get_setting(run_commands.setting_key(workspace_id)))


def set_run_commands(workspace_id: int, commands: tuple[RunCommand, ...]) -> None:
    set_setting(run_commands.setting_key(workspace_id), run_commands.to_value(commands))


def append_event(
    session_id: str,
    *,
    revision: int,
    kind: str,
    at_ms: int,
    work_id: str | None = None,
    previous: str | None = None,
    current: str | None = None,
    reason: str | None = None,
    data: dict[str, Any] | None = None,
) -> int:
    """Append one control event at the session's next sequence; returns that sequence."""
    row = SessionRow.get_by_id(session_id)
    sequence = row.next_event_sequence
    ControlEventRow.create(
        session=session_id,
        sequence=sequence,
        revision=revision,
        kind=kind,
        work_id=work_id,
        previous=previous,
        current=current,
        reason=reason,
        data_json=json.dumps(data, sort_keys=True) if data else None,
        created_at_ms=at_ms,
    )
    (
        SessionRow.update(next_event_sequence=sequence + 1)
        .where(SessionRow.id == session_id)
        .execute()
    )
    return int(sequence)


def create_session(
    *,
    session_id: str,
    workspace: Workspace,
    name: str,
    mode: SessionMode,
    permission_mode: PermissionMode,
    at_ms: int,
    parent: Session | None = None,
    profile: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    config: dict[str, Any] | None = None,
) -> Session:
    """Insert a root (``parent`` None) or child session with its ``created`` event."""
    SessionRow.create(
        id=session_id,
        workspace=workspace.id,
        parent=parent.id if parent else None,
        root_id=parent.root_id if parent else session_id,
        is_child=parent is not None,
        name=name,
        mode=mode.value,
        profile=profile,
        model=model,
        effort=effort,
        permission_mode=permission_mode.value,
        config_json=json.dumps(config or {}, sort_keys=True),
        state=SessionState.IDLE.value,
        generation=1,
        next_event_sequence=1,
        created_at_ms=at_ms,
        updated_at_ms=at_ms,
    )
    append_event(
        session_id,
        revision=1,
        kind="created",
        at_ms=at_ms,
        data={"name": name, "parent_id": parent.id if parent else None},
    )
    created = get_session(session_id)
    assert created is not None
    return created


_PROFILE_SETTINGS = (
    "effort",
    "max_tokens",
    "connect_timeout_s",
    "read_timeout_s",
    "price_in_per_mtok",
    "price_out_per_mtok",
    "key_source",
    "key_env",
    "command",
    "args",
    "env",
    "accepts_images",
    "secret_env",
    "preset",
    "sandbox",
)


def _profile(row: ProfileRow) -> Profile:
    settings = json.loads(row.settings_json or "{}")
    extra = {key: settings[key] for key in _PROFILE_SETTINGS if key in settings}
    if "key_source" in extra:
        extra["key_source"] = KeySource(extra["key_source"])
    if "args" in extra:  # JSON keeps them as lists; the snapshot is immutable
        extra["args"] = tuple(str(a) for a in extra["args"])
    if "env" in extra:
        extra["env"] = tuple((str(k), str(v)) for k, v in extra["env"])
    if "secret_env" in extra:
        extra["secret_env"] = tuple(str(n) for n in extra["secret_env"])
    return Profile(
        name=row.name,
        kind=row.kind,
        base_url=row.base_url,
        model=row.model,
        script_path=row.script_path,
        created_at_ms=row.created_at_ms,
        **extra,
    )


def get_profile(name: str) -> Profile | None:
    row = ProfileRow.get_or_none(ProfileRow.name == name)
    return _profile(row) if row is not None else None


def list_profiles() -> list[Profile]:
    return [_profile(row) for row in ProfileRow.select().order_by(ProfileRow.name)]


def save_profile(profile: Profile) -> None:
    at = now_ms()
    (
        ProfileRow.insert(
            name=profile.name,
            kind=profile.kind,
            base_url=profile.base_url,
            model=profile.model,
            script_path=profile.script_path,
            settings_json=json.dumps(
                {
                    key: (value.value if isinstance(value, KeySource) else value)
                    for key in _PROFILE_SETTINGS
                    if (value := getattr(profile, key)) is not None
                },
                sort_keys=True,
            ),
            created_at_ms=profile.created_at_ms or at,
            updated_at_ms=at,
        )
        .on_conflict_replace()
        .execute()
    )


def remove_profile(name: str) -> bool:
    return bool(ProfileRow.delete().where(ProfileRow.name == name).execute())


def rename_session(session_id: str, name: str, at_ms: int) -> None:
    SessionRow.update(name=name, updated_at_ms=at_ms).where(SessionRow.id == session_id).execute()


def set_parent(session_id: str, parent_id: str | None, root_id: str) -> None:
    """Move a session (and everything under it) to ``parent_id`` in the tree of ``root_id``."""
    SessionRow.update(parent=parent_id).where(SessionRow.id == session_id).execute()
    pending = [session_id]
    while pending:
        current = pending.pop()
        SessionRow.update(root_id=root_id).where(SessionRow.id == current).execute()
        pending.extend(
            row.id for row in SessionRow.select(SessionRow.id).where(SessionRow.parent == current)
        )


def get_operation(operation_id: str) -> tuple[str, str, Receipt] | None:
    """(actor, command hash, receipt) of a recorded operation."""
    row = OperationRow.get_or_none(OperationRow.id == operation_id)
    if row is None:
        return None
    receipt = Receipt(
        row.code, row.session_id or "", row.generation, row.event_sequence, row.fingerprint
    )
    return row.actor_id, row.command_hash, receipt


def save_operation(
    operation_id: str,
    actor_id: str,
    command_hash: str,
    receipt: Receipt,
    at_ms: int | None = None,
) -> None:
    """Record an idempotent operation's receipt; ``at_ms`` is the engine clock's time."""
    OperationRow.create(
        id=operation_id,
        actor_id=actor_id,
        session_id=receipt.session_id,
        code=receipt.code,
        generation=receipt.generation,
        event_sequence=receipt.event_sequence,
        fingerprint=receipt.fingerprint,
        command_hash=command_hash,
        created_at_ms=now_ms() if at_ms is None else at_ms,
    )


def configure_session(
    session_id: str,
    *,
    profile: str | None,
    permission_mode: PermissionMode | None,
    model: str | None,
    effort: str | None,
    at_ms: int,
) -> None:
    """Set the given fields (None leaves a field as it is; "" clears model/effort/profile)."""
    changes: dict[Any, Any] = {SessionRow.updated_at_ms: at_ms}
    if profile is not None:
        changes[SessionRow.profile] = profile or None
    if permission_mode is not None:
        changes[SessionRow.permission_mode] = permission_mode.value
    if model is not None:
        changes[SessionRow.model] = model or None
    if effort is not None:
        changes[SessionRow.effort] = effort or None
    SessionRow.update(changes).where(SessionRow.id == session_id).execute()
