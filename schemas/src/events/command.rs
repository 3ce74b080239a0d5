//! Commands: what the kernel is asked to do, in-process or through the `commands`
//! stream. One type for both paths: the gateway builds a [`Command`], hands it to an
//! in-process kernel directly, or appends it as `Event::Command` for a kernel in
//! another process; the kernel answers with `CommandApplied` / `CommandRejected`
//! (stream `kernel.events`) and every event it appends carries the `command_id` and
//! the command's `principal` in its envelope.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::fields::Json;
use super::types::Packet;
use crate::cxp::WorkStatus;

/// A command for the kernel; the kernel answers with `CommandApplied` or `CommandRejected` carrying `command_id`.
///
/// Stream `commands`, event type `command_submitted`, Avro `schemas/avro/commands.Command.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Command {
    /// Unique command id; the record's envelope `command_id` equals it, and every event the command causes carries it there too.
    #[serde(with = "crate::events::fields::uuid")]
    pub id: Uuid,
    /// Who issued it: a client id or Volk alias.
    pub issuer: String,
    /// What to do.
    pub action: CommandKind,
    /// Who acts: the name of the authenticated principal that submitted it (see
    /// `EventRecord::principal`). The kernel stamps it on every event the command
    /// causes. `None` for commands no principal submitted (the kernel's own agents).
    ///
    /// Not part of the payload encoding: on the `commands` stream it travels in the
    /// record's envelope `principal` (as the id travels in `command_id`), and the codec
    /// and the flat JSON envelope put it back here when they read a command. An Avro
    /// record cannot hold two fields of one name, so the payload has no second copy.
    #[serde(skip)]
    pub principal: Option<String>,
}

impl Command {
    /// The same command, submitted by principal `name`.
    pub fn with_principal(mut self, name: impl Into<String>) -> Self {
        self.principal = Some(name.into());
        self
    }
}

/// What a command asks the kernel to do. In Avro a union of records, branch order = declaration order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandKind {
    /// Send (queue) a packet.
    SendPacket {
        /// The packet.
        packet: Packet,
    },
    /// Mark a packet delivered.
    MarkDelivered {
        /// The packet.
        #[serde(with = "crate::events::fields::uuid")]
        message_id: Uuid,
    },
    /// Acknowledge a delivered packet.
    Acknowledge {
        /// The packet.
        #[serde(with = "crate::events::fields::uuid")]
        message_id: Uuid,
        /// The acknowledging Volk.
        by: String,
    },
    /// Mark a delivery failed.
    Fail {
        /// The packet.
        #[serde(with = "crate::events::fields::uuid")]
        message_id: Uuid,
        /// Why.
        reason: String,
    },
    /// Queue a failed packet again.
    Retry {
        /// The packet.
        #[serde(with = "crate::events::fields::uuid")]
        message_id: Uuid,
    },
    /// Move a packet's work to another status.
    SetWorkStatus {
        /// The packet.
        #[serde(with = "crate::events::fields::uuid")]
        message_id: Uuid,
        /// The new status.
        status: WorkStatus,
        /// Assignee (for `in_progress`).
        assigned_to: Option<String>,
        /// Result (for `resolved`).
        resolution: Option<Json>,
        /// A note.
        notes: Option<String>,
    },
    /// Change a packet's priority.
    SetPriority {
        /// The packet.
        #[serde(with = "crate::events::fields::uuid")]
        message_id: Uuid,
        /// New priority (0-10).
        priority: i32,
        /// Why.
        reason: Option<String>,
    },
    /// Close a thread.
    CloseThread {
        /// The thread.
        thread_id: String,
        /// Why.
        reason: Option<String>,
    },
    /// Reopen a closed thread.
    ReopenThread {
        /// The thread.
        thread_id: String,
        /// Why.
        reason: Option<String>,
    },
    /// Archive a thread.
    ArchiveThread {
        /// The thread.
        thread_id: String,
        /// Why.
        reason: Option<String>,
    },
    /// Open a session.
    OpenSession {
        /// The session.
        session_id: String,
        /// Its portfolio.
        portfolio_id: String,
        /// Its goals.
        goals: Vec<String>,
    },
    /// Close a session.
    CloseSession {
        /// The session.
        session_id: String,
        /// What was done.
        summary: String,
        /// Tasks carried over.
        carryover: Vec<String>,
    },
    /// Resume an interrupted session.
    ResumeSession {
        /// The session.
        session_id: String,
    },
    /// Register a Volk.
    RegisterVolk {
        /// Its alias.
        alias: String,
        /// What it can do.
        capabilities: Vec<String>,
        /// Its parent.
        parent: Option<String>,
        /// Protocols it speaks.
        protocols: Vec<String>,
        /// Details.
        metadata: Json,
    },
    /// Deregister a Volk.
    DeregisterVolk {
        /// Its alias.
        alias: String,
        /// Why.
        reason: String,
    },
    /// Spawn a junior Volk under a parent (spec 005 US-001): lightweight state, no
    /// process. Exactly one lifespan binding is expected: `lifespan_ms`, `task_id` or
    /// `session_id`.
    SpawnVolk {
        /// The junior's alias.
        alias: String,
        /// The senior Volk that spawns it.
        parent: String,
        /// What runs it: `cli`, `api`, `browser`.
        driver: String,
        /// What it is for.
        purpose: String,
        /// Capabilities it may use; a subset of its parent's.
        scope: Vec<String>,
        /// Deadline: it dies this long after spawning.
        lifespan_ms: Option<i64>,
        /// Task-bound: it dies when this task completes.
        task_id: Option<String>,
        /// Session-bound: it dies when this session closes.
        session_id: Option<String>,
    },
    /// Terminate a spawned Volk and its whole subtree.
    TerminateVolk {
        /// The Volk.
        alias: String,
        /// Why (task_completed, deadline, violation...).
        reason: String,
    },
    /// Escalate a matter from a Volk to the next party on its escalation path.
    EscalateVolk {
        /// The Volk escalating.
        alias: String,
        /// The resolved target: a Volk alias or `human`.
        to: String,
        /// The full path, first party to last.
        path: Vec<String>,
        /// Why.
        reason: String,
        /// The thread concerned.
        thread_id: Option<String>,
        /// What the target needs to decide.
        context: Json,
    },
    /// Start a workflow run.
    StartWorkflow {
        /// The run.
        workflow_id: String,
        /// Which workflow.
        name: String,
        /// Its parameters.
        params: Json,
        /// The session it runs in.
        session_id: Option<String>,
    },
    /// Pause a running workflow.
    PauseWorkflow {
        /// The run.
        workflow_id: String,
        /// Why.
        reason: Option<String>,
    },
    /// Resume a paused workflow.
    ResumeWorkflow {
        /// The run.
        workflow_id: String,
    },
    /// Cancel a workflow.
    CancelWorkflow {
        /// The run.
        workflow_id: String,
        /// Why.
        reason: Option<String>,
    },
    /// Record progress of a running workflow: a step starts, or a step ends (and with
    /// it maybe the run).
    RecordWorkflowStep {
        /// The run.
        workflow_id: String,
        /// The step.
        step: String,
        /// `started`, `succeeded`, `failed`, or `completed` (the run is done).
        phase: String,
        /// The Volk doing it.
        assigned_to: Option<String>,
        /// What it produced.
        output: Json,
    },
    /// Close a running or paused workflow as failed: a step's junior failed after its
    /// retries, or the run was in progress when the server stopped (closed at start).
    FailWorkflow {
        /// The run.
        workflow_id: String,
        /// What went wrong.
        error: String,
        /// The step that failed, if one did.
        step: Option<String>,
    },
    /// Record a registered Volk's observed health (from its driver's liveness or its
    /// connection's heartbeats); no event when it is unchanged.
    SetVolkHealth {
        /// The Volk.
        alias: String,
        /// Its health now.
        health: crate::events::types::Health,
        /// What was observed.
        details: Option<String>,
    },
    /// Resolve an entry of the human escalation queue with a decision.
    ResolveEscalation {
        /// The queue entry.
        escalation_id: String,
        /// What was decided.
        decision: String,
        /// Anything the escalating Volk should know besides.
        notes: Option<String>,
    },
    /// Merge a JSON merge patch (RFC 7396) into an open session's context.
    UpdateSessionContext {
        /// The session.
        session_id: String,
        /// The patch: an object; `null` members remove keys.
        patch: Json,
    },
    /// Record a fact emitted in an open session (REQ-014-060).
    AssertSessionFact {
        /// The session.
        session_id: String,
        /// Kind of fact.
        fact_type: String,
        /// The fact.
        data: Json,
    },
    /// Record an error that happened in an open session.
    ReportSessionError {
        /// The session.
        session_id: String,
        /// Stable error code.
        code: String,
        /// What went wrong.
        message: String,
        /// Whether the session can go on.
        recoverable: bool,
    },
    /// Make a provider known (or change its models or quota): `registered`, nothing
    /// when the last registration said the same.
    RegisterProvider {
        /// Provider name.
        provider: String,
        /// Its protocol, e.g. `openai` (chat completions).
        kind: String,
        /// Models it serves.
        models: Vec<String>,
        /// Tokens it may use in total (`None`: unlimited).
        quota_tokens: Option<i64>,
    },
    /// A provider answered a junior's request: `request_completed`, and
    /// `quota_exhausted` when the tokens counted reach its quota.
    RecordProviderUsage {
        /// Provider name (registered).
        provider: String,
        /// The request.
        request_id: String,
        /// Model.
        model: String,
        /// Tokens sent.
        input_tokens: i64,
        /// Tokens received.
        output_tokens: i64,
        /// Time to the full answer.
        latency_ms: i64,
    },
    /// A provider request failed: `request_failed`, with `rate_limited` when the
    /// provider asked us to wait and `quota_exhausted` when it said its quota is gone.
    RecordProviderFailure {
        /// Provider name (registered).
        provider: String,
        /// The request.
        request_id: String,
        /// Model.
        model: String,
        /// What went wrong.
        error: String,
        /// Whether retrying may help.
        retryable: bool,
        /// What the provider asked us to wait (HTTP 429 `Retry-After`).
        retry_after_ms: Option<i64>,
        /// The provider reported its quota used up.
        quota_exhausted: bool,
    },
}
