"""peewee models of the newest schema, bound through one ``DatabaseProxy``.

The tables are created by ``migrations.py``, never by ``create_tables``; these classes only describe
them for queries. ``Store.open`` points ``database_proxy`` at its database.
"""

from __future__ import annotations

import peewee as pw

database_proxy = pw.DatabaseProxy()


class BaseModel(pw.Model):
    class Meta:
        database = database_proxy
        legacy_table_names = False


class WorkspaceRow(BaseModel):
    id = pw.AutoField()
    path = pw.TextField(unique=True)
    name = pw.TextField()
    created_at_ms = pw.IntegerField()

    class Meta:
        table_name = "workspace"


class SessionRow(BaseModel):
    id = pw.TextField(primary_key=True)
    workspace = pw.ForeignKeyField(WorkspaceRow, column_name="workspace_id", on_delete="RESTRICT")
    parent = pw.ForeignKeyField(
        "self", column_name="parent_id", null=True, on_delete="RESTRICT", backref="children"
    )
    workspace_id: int  # the raw foreign keys peewee adds beside the related-object fields
    parent_id: str | None
    root_id = pw.TextField()
    is_child = pw.BooleanField()
    name = pw.TextField()
    mode = pw.TextField()
    profile = pw.TextField(null=True)
    model = pw.TextField(null=True)
    effort = pw.TextField(null=True)
    permission_mode = pw.TextField()
    config_json = pw.TextField(default="{}")
    state = pw.TextField()
    archived_from = pw.TextField(null=True)
    generation = pw.IntegerField(default=0)
    next_event_sequence = pw.IntegerField(default=1)
    last_work_id = pw.TextField(null=True)
    created_at_ms = pw.IntegerField()
    updated_at_ms = pw.IntegerField()

    class Meta:
        table_name = "session"


class WorkItemRow(BaseModel):
    id = pw.TextField(primary_key=True)
    session = pw.ForeignKeyField(SessionRow, column_name="session_id", on_delete="CASCADE")
    session_id: str
    position = pw.IntegerField()
    source_id = pw.TextField()
    kind = pw.TextField()
    content = pw.TextField()
    status = pw.TextField()
    reason = pw.TextField(null=True)
    admission_json = pw.TextField(null=True)
    created_at_ms = pw.IntegerField()
    updated_at_ms = pw.IntegerField()
    owner_instance = pw.TextField(null=True)

    class Meta:
        table_name = "work_item"


class HistoryEntryRow(BaseModel):
    id = pw.AutoField()
    session = pw.ForeignKeyField(SessionRow, column_name="session_id", on_delete="CASCADE")
    seq = pw.IntegerField()
    work = pw.ForeignKeyField(WorkItemRow, column_name="work_id", null=True, on_delete="SET NULL")
    step = pw.IntegerField(default=0)
    kind = pw.TextField()
    call_id = pw.TextField(null=True)
    tool_name = pw.TextField(null=True)
    content = pw.TextField(default="")
    full_text = pw.TextField(null=True)
    data_json = pw.TextField(null=True)
    created_at_ms = pw.IntegerField()

    class Meta:
        table_name = "history_entry"


class ControlEventRow(BaseModel):
    id = pw.AutoField()
    session = pw.ForeignKeyField(SessionRow, column_name="session_id", on_delete="CASCADE")
    sequence = pw.IntegerField()
    revision = pw.IntegerField()
    kind = pw.TextField()
    work_id = pw.TextField(null=True)
    previous = pw.TextField(null=True)
    current = pw.TextField(null=True)
    reason = pw.TextField(null=True)
    data_json = pw.TextField(null=True)
    created_at_ms = pw.IntegerField()

    class Meta:
        table_name = "control_event"


class SettingRow(BaseModel):
    key = pw.TextField(primary_key=True)
    value_json = pw.TextField()
    updated_at_ms = pw.IntegerField()

    class Meta:
        table_name = "setting"


class DeliveryRow(BaseModel):
    id = pw.TextField(primary_key=True)
    session = pw.ForeignKeyField(SessionRow, column_name="session_id", on_delete="CASCADE")
    target_id = pw.TextField()
    work_id = pw.TextField(null=True)
    kind = pw.TextField()
    payload_json = pw.TextField()
    created_at_ms = pw.IntegerField()

    class Meta:
        table_name = "delivery"


class WorkPolicyRow(BaseModel):
    work = pw.ForeignKeyField(
        WorkItemRow, column_name="work_id", primary_key=True, on_delete="CASCADE"
    )
    session = pw.ForeignKeyField(SessionRow, column_name="session_id", on_delete="CASCADE")
    policy_json = pw.TextField()
    started_at_ms = pw.IntegerField()
    next_due_ms = pw.IntegerField(null=True)
    stopped_at_ms = pw.IntegerField(null=True)

    class Meta:
        table_name = "work_policy"


class OperationRow(BaseModel):
    id = pw.TextField(primary_key=True)
    actor_id = pw.TextField()
    session_id = pw.TextField(null=True)
    code = pw.TextField()
    generation = pw.IntegerField()
    event_sequence = pw.IntegerField()
    fingerprint = pw.TextField()
    command_hash = pw.TextField()
    created_at_ms = pw.IntegerField()

    class Meta:
        table_name = "operation"


class ProfileRow(BaseModel):
    name = pw.TextField(primary_key=True)
    kind = pw.TextField()
    base_url = pw.TextField(null=True)
    model = pw.TextField(null=True)
    script_path = pw.TextField(null=True)
    settings_json = pw.TextField(default="{}")
    created_at_ms = pw.IntegerField()
    updated_at_ms = pw.IntegerField()

    class Meta:
        table_name = "profile"


class PermissionRuleRow(BaseModel):
    id = pw.AutoField()
    tool = pw.TextField()
    pattern = pw.TextField()
    match = pw.TextField()
    action = pw.TextField()
    scope = pw.TextField()
    scope_key = pw.TextField(default="")
    note = pw.TextField(default="")
    created_at_ms = pw.IntegerField()

    class Meta:
        table_name = "permission_rule"


class ApprovalRow(BaseModel):
    id = pw.TextField(primary_key=True)
    session = pw.ForeignKeyField(SessionRow, column_name="session_id", on_delete="CASCADE")
    root_id = pw.TextField()
    work_id = pw.TextField()
    call_id = pw.TextField()
    fingerprint = pw.TextField()
    tool = pw.TextField()
    label = pw.TextField()
    explanation = pw.TextField(default="")
    detail_json = pw.TextField(default="{}")
    status = pw.TextField()
    resolution_json = pw.TextField(default="{}")
    created_at_ms = pw.IntegerField()
    resolved_at_ms = pw.IntegerField(null=True)

    class Meta:
        table_name = "approval"


class BackgroundTaskRow(BaseModel):
    session = pw.ForeignKeyField(SessionRow, column_name="session_id", on_delete="CASCADE")
    number = pw.IntegerField()
    stable_id = pw.TextField()
    workspace_id = pw.IntegerField()
    policy = pw.TextField()
    origin = pw.TextField()
    pid = pw.IntegerField()
    process_token = pw.TextField(null=True)
    command = pw.TextField()
    cwd = pw.TextField()
    log_path = pw.TextField()
    expect_url = pw.BooleanField()
    server_url = pw.TextField(null=True)
    exit_code = pw.IntegerField(null=True)
    state = pw.TextField()
    diagnostic = pw.TextField(null=True)
    owner_instance = pw.TextField(null=True)
    started_at_ms = pw.IntegerField()
    updated_at_ms = pw.IntegerField()

    class Meta:
        table_name = "background_task"
        primary_key = pw.CompositeKey("session", "number")


class RuntimeMetaRow(BaseModel):
    key = pw.TextField(primary_key=True)
    value = pw.IntegerField()

    class Meta:
        table_name = "runtime_meta"


class AgentRunRow(BaseModel):
    id = pw.TextField(primary_key=True)
    root_session_id = pw.TextField()
    caller_session_id = pw.TextField()
    child_session_id = pw.TextField(null=True, unique=True)
    parent_run_id = pw.TextField(null=True)
    tree_id = pw.TextField()
    group_id = pw.TextField()
    group_index = pw.IntegerField()
    caller_agent_id = pw.TextField()
    root_turn_id = pw.TextField(null=True)
    call_id = pw.TextField(null=True)
    idempotency_key = pw.TextField(null=True, unique=True)
    agent_id = pw.TextField()
    definition_hash = pw.TextField(default="")
    provider_profile = pw.TextField(default="")
    model_id = pw.TextField(default="")
    mode = pw.TextField()
    depth = pw.IntegerField()
    execution_id = pw.TextField()
    runtime_generation = pw.IntegerField()
    owner_instance = pw.TextField(null=True)
    task = pw.TextField()
    context = pw.TextField(null=True)
    budget_json = pw.TextField()
    signal_lane = pw.TextField(null=True)
    deadline_at_ms = pw.IntegerField()
    completion_slot_reserved = pw.BooleanField()
    status = pw.TextField(default="queued")
    created_at_ms = pw.IntegerField()
    started_at_ms = pw.IntegerField(null=True)
    finished_at_ms = pw.IntegerField(null=True)
    updated_at_ms = pw.IntegerField()
    revision = pw.IntegerField()
    result = pw.TextField(null=True)
    summary = pw.TextField(null=True)
    error = pw.TextField(null=True)
    tool_calls = pw.IntegerField(null=True)
    iterations = pw.IntegerField(null=True)
    prompt_tokens = pw.IntegerField(null=True)
    completion_tokens = pw.IntegerField(null=True)
    cost = pw.FloatField(null=True)
    signal_ids_json = pw.TextField(null=True)
    timed_out_at_ms = pw.IntegerField(null=True)

    class Meta:
        table_name = "agent_run"


class AgentInboxRow(BaseModel):
    id = pw.TextField(primary_key=True)
    root_session_id = pw.TextField()
    run_id = pw.TextField()
    kind = pw.TextField()
    event_key = pw.TextField()
    lane = pw.TextField(default="queue")
    status = pw.TextField()
    requires_continuation = pw.BooleanField()
    payload_json = pw.TextField()
    severity = pw.TextField(null=True)
    signal_key = pw.TextField(null=True)
    dedupe_key = pw.TextField(null=True)
    count = pw.IntegerField(default=1)
    revision = pw.IntegerField()
    attempts = pw.IntegerField(default=0)
    lease_owner = pw.TextField(null=True)
    lease_expires_at_ms = pw.IntegerField(null=True)
    available_at_ms = pw.IntegerField()
    created_at_ms = pw.IntegerField()
    updated_at_ms = pw.IntegerField()
    consumed_at_ms = pw.IntegerField(null=True)
    last_error = pw.TextField(null=True)

    class Meta:
        table_name = "agent_inbox"


class AgentSessionStateRow(BaseModel):
    root_session_id = pw.TextField(primary_key=True)
    pending_count = pw.IntegerField(default=0)
    reserved_count = pw.IntegerField(default=0)
    revision = pw.IntegerField(default=0)
    created_at_ms = pw.IntegerField()
    updated_at_ms = pw.IntegerField()

    class Meta:
        table_name = "agent_session_state"


class ImageAttachmentRow(BaseModel):
    id = pw.AutoField()
    session = pw.ForeignKeyField(SessionRow, column_name="session_id", on_delete="CASCADE")
    work = pw.ForeignKeyField(WorkItemRow, column_name="work_id", null=True, on_delete="SET NULL")
    position = pw.IntegerField()
    name = pw.TextField()
    media_type = pw.TextField()
    width = pw.IntegerField(default=0)
    height = pw.IntegerField(default=0)
    size = pw.IntegerField()
    data = pw.BlobField()
    created_at_ms = pw.IntegerField()

    class Meta:
        table_name = "image_attachment"


ALL_MODELS: tuple[type[BaseModel], ...] = (
    WorkspaceRow,
    SessionRow,
    WorkItemRow,
    HistoryEntryRow,
    ControlEventRow,
    SettingRow,
    DeliveryRow,
    WorkPolicyRow,
    OperationRow,
    ProfileRow,
    PermissionRuleRow,
    ApprovalRow,
    BackgroundTaskRow,
    RuntimeMetaRow,
    AgentRunRow,
    AgentInboxRow,
    AgentSessionStateRow,
    ImageAttachmentRow,
)
