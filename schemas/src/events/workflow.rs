//! Events of the `workflow.events` stream.
//!
//! Workflow lifecycle (REQ-014-076..080).

use super::fields::Json;
use super::types::TaskOutcome;
use serde::{Deserialize, Serialize};

/// A workflow was started.
///
/// Stream `workflow.events`, event type `started`, Avro `schemas/avro/workflow.events.WorkflowStarted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowStarted {
    /// The workflow run.
    pub workflow_id: String,
    /// Which workflow.
    pub name: String,
    /// Its parameters.
    pub params: Json,
    /// Who started it.
    pub started_by: String,
    /// The session it runs in, if any.
    pub session_id: Option<String>,
}

/// A workflow was paused.
///
/// Stream `workflow.events`, event type `paused`, Avro `schemas/avro/workflow.events.WorkflowPaused.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowPaused {
    /// The run.
    pub workflow_id: String,
    /// Who paused it.
    pub paused_by: String,
    /// Why.
    pub reason: Option<String>,
}

/// A paused workflow was resumed.
///
/// Stream `workflow.events`, event type `resumed`, Avro `schemas/avro/workflow.events.WorkflowResumed.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowResumed {
    /// The run.
    pub workflow_id: String,
    /// Who resumed it.
    pub resumed_by: String,
}

/// A workflow was cancelled.
///
/// Stream `workflow.events`, event type `cancelled`, Avro `schemas/avro/workflow.events.WorkflowCancelled.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowCancelled {
    /// The run.
    pub workflow_id: String,
    /// Who cancelled it.
    pub cancelled_by: String,
    /// Why.
    pub reason: Option<String>,
}

/// A workflow step began.
///
/// Stream `workflow.events`, event type `step_started`, Avro `schemas/avro/workflow.events.WorkflowStepStarted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowStepStarted {
    /// The run.
    pub workflow_id: String,
    /// The step.
    pub step: String,
    /// The Volk doing it.
    pub assigned_to: Option<String>,
}

/// A workflow step ended.
///
/// Stream `workflow.events`, event type `step_completed`, Avro `schemas/avro/workflow.events.WorkflowStepCompleted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowStepCompleted {
    /// The run.
    pub workflow_id: String,
    /// The step.
    pub step: String,
    /// How it ended.
    pub outcome: TaskOutcome,
    /// What it produced.
    pub output: Json,
}

/// A workflow finished successfully.
///
/// Stream `workflow.events`, event type `completed`, Avro `schemas/avro/workflow.events.WorkflowCompleted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowCompleted {
    /// The run.
    pub workflow_id: String,
    /// Its result.
    pub result: Json,
}

/// A workflow stopped on an error.
///
/// Stream `workflow.events`, event type `failed`, Avro `schemas/avro/workflow.events.WorkflowFailed.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowFailed {
    /// The run.
    pub workflow_id: String,
    /// What went wrong.
    pub error: String,
    /// The step that failed, if any.
    pub step: Option<String>,
}
