//! [`WorkflowView`]: every workflow run's state, folded from `workflow.events` — what
//! `workflow.get` answers. Time comes from event timestamps only.
//!
//! A `workflow_started` (re)starts its run's state; the other workflow events change
//! the run they name and are ignored for a run never started. A run that is cancelled
//! or fails shows no step `running` afterwards.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::TaskOutcome;
use orchestrata_schemas::events::{Envelope, Event, EventRecord, Stream};
use serde::{Deserialize, Serialize};

use crate::{Checkpoint, View, ViewName};

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepView {
    /// The step (`U:Cx`, `U:Vz`, ..., `HUMAN`).
    pub step: String,
    /// Who does it.
    pub assigned_to: Option<String>,
    /// `running`, `succeeded`, `failed`, `cancelled`.
    pub status: String,
    /// What it produced.
    pub output: Json,
    /// When it started.
    #[serde(with = "orchestrata_schemas::events::fields::ts")]
    pub started_at: DateTime<Utc>,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    /// The run id.
    pub workflow_id: String,
    /// The workflow's name.
    pub name: String,
    /// `running`, `paused`, `cancelled`, `completed`, `failed`.
    pub status: String,
    /// Who started it.
    pub started_by: String,
    /// The principal that started it (on the `started` event's envelope), its owner:
    /// only it or an admin may pause, resume or cancel it. `None` for a run started
    /// by no principal.
    #[serde(default)]
    pub owner: Option<String>,
    /// Its steps in order.
    pub steps: Vec<StepView>,
    /// The result (completed) or the reason (cancelled / failed).
    pub result: Json,
    /// Time of its latest event.
    #[serde(with = "orchestrata_schemas::events::fields::ts")]
    pub updated_at: DateTime<Utc>,
}

/// Every run of the log by id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowView {
    checkpoint: Checkpoint,
    runs: BTreeMap<String, RunView>,
}

impl WorkflowView {
    /// Run `workflow_id`, if it started.
    pub fn run(&self, workflow_id: &str) -> Option<&RunView> {
        self.runs.get(workflow_id)
    }

    /// Number of runs.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether no run started.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    fn record(&mut self, r: &EventRecord) {
        let at = r.timestamp;
        if let Event::WorkflowStarted(e) = &r.event {
            self.runs.insert(
                e.workflow_id.clone(),
                RunView {
                    workflow_id: e.workflow_id.clone(),
                    name: e.name.clone(),
                    status: "running".into(),
                    started_by: e.started_by.clone(),
                    owner: r.principal.clone(),
                    steps: Vec::new(),
                    result: Json::default(),
                    updated_at: at,
                },
            );
            return;
        }
        let Some(id) = run_of(&r.event) else { return };
        if let Some(run) = self.runs.get_mut(id) {
            run.apply(&r.event, at);
        }
    }
}

/// The run a workflow event (other than `workflow_started`) is about.
fn run_of(event: &Event) -> Option<&str> {
    Some(match event {
        Event::WorkflowPaused(e) => &e.workflow_id,
        Event::WorkflowResumed(e) => &e.workflow_id,
        Event::WorkflowCancelled(e) => &e.workflow_id,
        Event::WorkflowCompleted(e) => &e.workflow_id,
        Event::WorkflowFailed(e) => &e.workflow_id,
        Event::WorkflowStepStarted(e) => &e.workflow_id,
        Event::WorkflowStepCompleted(e) => &e.workflow_id,
        _ => return None,
    })
}

impl RunView {
    /// Folds `records` (any streams; other runs' and other streams' events are
    /// skipped) into the state of run `workflow_id`, `None` if it never started.
    pub fn fold<'a>(
        workflow_id: &str,
        records: impl IntoIterator<Item = &'a EventRecord>,
    ) -> Option<Self> {
        let mut view = WorkflowView::default();
        for r in records {
            let mine = match &r.event {
                Event::WorkflowStarted(e) => e.workflow_id == workflow_id,
                other => run_of(other) == Some(workflow_id),
            };
            if mine {
                view.record(r);
            }
        }
        view.runs.remove(workflow_id)
    }

    fn apply(&mut self, event: &Event, at: DateTime<Utc>) {
        match event {
            Event::WorkflowPaused(_) => self.status = "paused".into(),
            Event::WorkflowResumed(_) => self.status = "running".into(),
            Event::WorkflowCancelled(e) => {
                self.status = "cancelled".into();
                self.result = serde_json::json!({ "reason": e.reason }).into();
                self.end_running_steps(None);
            }
            Event::WorkflowCompleted(e) => {
                self.status = "completed".into();
                self.result = e.result.clone();
            }
            Event::WorkflowFailed(e) => {
                self.status = "failed".into();
                self.result = serde_json::json!({ "error": e.error, "step": e.step }).into();
                self.end_running_steps(e.step.as_deref());
            }
            Event::WorkflowStepStarted(e) => self.steps.push(StepView {
                step: e.step.clone(),
                assigned_to: e.assigned_to.clone(),
                status: "running".into(),
                output: Json::default(),
                started_at: at,
            }),
            Event::WorkflowStepCompleted(e) => {
                if let Some(s) = self.steps.iter_mut().rev().find(|s| s.step == e.step) {
                    s.status = match e.outcome {
                        TaskOutcome::Succeeded => "succeeded",
                        TaskOutcome::Failed => "failed",
                        TaskOutcome::Cancelled => "cancelled",
                    }
                    .into();
                    s.output = e.output.clone();
                }
            }
            _ => return,
        }
        self.updated_at = at;
    }
}

impl RunView {
    /// A run that ends leaves no step `running`: the step named as the failure (if
    /// any) is `failed`, every other step still running is `cancelled`.
    fn end_running_steps(&mut self, failed: Option<&str>) {
        for s in self.steps.iter_mut().filter(|s| s.status == "running") {
            s.status = if failed == Some(s.step.as_str()) {
                "failed"
            } else {
                "cancelled"
            }
            .into();
        }
    }
}

impl View for WorkflowView {
    const NAME: ViewName = ViewName::Workflow;
    const STREAMS: &'static [Stream] = &[Stream::WorkflowEvents];

    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    fn apply(&mut self, envelope: &Envelope) -> bool {
        if !Self::STREAMS.contains(&envelope.stream)
            || !self.checkpoint.admit(envelope.stream, envelope.sequence)
        {
            return false;
        }
        self.record(&envelope.record);
        true
    }
}
