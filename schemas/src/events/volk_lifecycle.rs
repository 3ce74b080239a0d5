//! Events of the `volk.lifecycle` stream.
//!
//! Volk registration, health, tasks, junior Volks and escalation (REQ-014-021..023).

use super::fields::Json;
use super::types::{Health, TaskOutcome};
use serde::{Deserialize, Serialize};

/// A Volk joined the registry.
///
/// Stream `volk.lifecycle`, event type `registered`, Avro `schemas/avro/volk.lifecycle.VolkRegistered.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolkRegistered {
    /// The Volk's alias, e.g. `U:Ox`.
    pub alias: String,
    /// What it can do.
    pub capabilities: Vec<String>,
    /// The Volk it reports to, if any.
    pub parent: Option<String>,
    /// Protocols it speaks, e.g. `cxp/1.0`.
    pub protocols: Vec<String>,
    /// The session it belongs to, if any.
    pub session_id: Option<String>,
    /// Free-form details.
    pub metadata: Json,
}

/// A Volk left the registry.
///
/// Stream `volk.lifecycle`, event type `deregistered`, Avro `schemas/avro/volk.lifecycle.VolkDeregistered.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolkDeregistered {
    /// The Volk.
    pub alias: String,
    /// Why it left.
    pub reason: String,
}

/// A Volk's health changed.
///
/// Stream `volk.lifecycle`, event type `health_changed`, Avro `schemas/avro/volk.lifecycle.VolkHealthChanged.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolkHealthChanged {
    /// The Volk.
    pub alias: String,
    /// Health before.
    pub old: Health,
    /// Health after.
    pub new: Health,
    /// What was observed.
    pub details: Option<String>,
}

/// A Volk started a task.
///
/// Stream `volk.lifecycle`, event type `task_started`, Avro `schemas/avro/volk.lifecycle.VolkTaskStarted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolkTaskStarted {
    /// The Volk.
    pub alias: String,
    /// The task.
    pub task_id: String,
    /// The thread that asked for it.
    pub thread_id: Option<String>,
    /// What the task is.
    pub description: String,
}

/// A Volk finished a task.
///
/// Stream `volk.lifecycle`, event type `task_completed`, Avro `schemas/avro/volk.lifecycle.VolkTaskCompleted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolkTaskCompleted {
    /// The Volk.
    pub alias: String,
    /// The task.
    pub task_id: String,
    /// How it ended.
    pub outcome: TaskOutcome,
    /// What came of it.
    pub summary: Option<String>,
    /// How long it took.
    pub duration_ms: i64,
}

/// A junior Volk was spawned by a senior one.
///
/// Stream `volk.lifecycle`, event type `spawned`, Avro `schemas/avro/volk.lifecycle.VolkSpawned.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolkSpawned {
    /// The new junior Volk.
    pub alias: String,
    /// The Volk that spawned it.
    pub parent: String,
    /// What runs it (e.g. an LLM provider/model).
    pub driver: String,
    /// What it is for.
    pub purpose: String,
    /// How long it may live, if bounded.
    pub lifespan_ms: Option<i64>,
}

/// A junior Volk was terminated.
///
/// Stream `volk.lifecycle`, event type `terminated`, Avro `schemas/avro/volk.lifecycle.VolkTerminated.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolkTerminated {
    /// The junior Volk.
    pub alias: String,
    /// Its parent.
    pub parent: String,
    /// Why (done, lifespan over, error...).
    pub reason: String,
}

/// A Volk escalated a matter up its hierarchy (REQ-014-034).
///
/// Stream `volk.lifecycle`, event type `escalated`, Avro `schemas/avro/volk.lifecycle.VolkEscalated.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolkEscalated {
    /// The Volk escalating.
    pub alias: String,
    /// Who must decide now.
    pub escalated_to: String,
    /// The full escalation path, from the first party to the last.
    pub path: Vec<String>,
    /// Why.
    pub reason: String,
    /// The thread concerned, if any.
    pub thread_id: Option<String>,
}

/// An escalation went beyond the root of the hierarchy: it now waits in the human
/// queue with the context it was escalated with (spec 005 US-005). The gateway lists
/// the queue; nothing in the hierarchy decides it any more.
///
/// Stream `volk.lifecycle`, event type `human_escalation_queued`, Avro `schemas/avro/volk.lifecycle.HumanEscalationQueued.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanEscalationQueued {
    /// The queue entry's id (the escalating command's id, or a fresh UUID).
    pub escalation_id: String,
    /// The Volk escalating (the root that could not decide).
    pub alias: String,
    /// The full escalation path, from the first party to `human`.
    pub path: Vec<String>,
    /// Why.
    pub reason: String,
    /// The thread concerned, if any.
    pub thread_id: Option<String>,
    /// What the human needs to decide, as escalated.
    pub context: Json,
}

/// A human decided an entry of the human queue; the entry leaves the queue with the
/// decision (spec 005: the human is the last hop of every escalation path).
///
/// Stream `volk.lifecycle`, event type `human_escalation_resolved`, Avro `schemas/avro/volk.lifecycle.HumanEscalationResolved.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanEscalationResolved {
    /// The queue entry.
    pub escalation_id: String,
    /// Who decided (the client or principal that resolved it).
    pub resolved_by: String,
    /// What was decided.
    pub decision: String,
    /// Anything the escalating Volk should know besides.
    pub notes: Option<String>,
}
