//! [`WorkflowView`]: a workflow run's state as a pure fold of `workflow.events`
//! (what `workflow.get` answers). Time comes from event timestamps only.

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::types::TaskOutcome;
use orchestrata_schemas::events::{Event, EventRecord};
use serde::Serialize;

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepView {
    /// The step (`U:Cx`, `U:Vz`, ..., `HUMAN`).
    pub step: String,
    /// Who does it.
    pub assigned_to: Option<String>,
    /// `running`, `succeeded`, `failed`, `cancelled`.
    pub status: String,
    /// What it produced.
    pub output: serde_json::Value,
    /// When it started.
    pub started_at: DateTime<Utc>,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkflowView {
    /// The run id.
    pub workflow_id: String,
    /// The workflow's name.
    pub name: String,
    /// `running`, `paused`, `cancelled`, `completed`, `failed`.
    pub status: String,
    /// Who started it.
    pub started_by: String,
    /// Its steps in order.
    pub steps: Vec<StepView>,
    /// The result (completed) or the reason (cancelled / failed).
    pub result: serde_json::Value,
    /// Time of its latest event.
    pub updated_at: DateTime<Utc>,
}

impl WorkflowView {
    /// Folds `records` (any streams; other runs' and other streams' events are
    /// skipped) into the view of `workflow_id`, `None` if it never started.
    pub fn fold<'a>(
        workflow_id: &str,
        records: impl IntoIterator<Item = &'a EventRecord>,
    ) -> Option<Self> {
        let mut view: Option<WorkflowView> = None;
        for r in records {
            let at = r.timestamp;
            match &r.event {
                Event::WorkflowStarted(e) if e.workflow_id == workflow_id => {
                    view = Some(WorkflowView {
                        workflow_id: e.workflow_id.clone(),
                        name: e.name.clone(),
                        status: "running".into(),
                        started_by: e.started_by.clone(),
                        steps: Vec::new(),
                        result: serde_json::Value::Null,
                        updated_at: at,
                    })
                }
                _ => {
                    if let Some(v) = view.as_mut() {
                        v.apply(workflow_id, &r.event, at);
                    }
                }
            }
        }
        view
    }

    fn apply(&mut self, id: &str, event: &Event, at: DateTime<Utc>) {
        let mine = match event {
            Event::WorkflowPaused(e) if e.workflow_id == id => {
                self.status = "paused".into();
                true
            }
            Event::WorkflowResumed(e) if e.workflow_id == id => {
                self.status = "running".into();
                true
            }
            Event::WorkflowCancelled(e) if e.workflow_id == id => {
                self.status = "cancelled".into();
                self.result = serde_json::json!({ "reason": e.reason });
                true
            }
            Event::WorkflowCompleted(e) if e.workflow_id == id => {
                self.status = "completed".into();
                self.result = e.result.0.clone();
                true
            }
            Event::WorkflowFailed(e) if e.workflow_id == id => {
                self.status = "failed".into();
                self.result = serde_json::json!({ "error": e.error, "step": e.step });
                true
            }
            Event::WorkflowStepStarted(e) if e.workflow_id == id => {
                self.steps.push(StepView {
                    step: e.step.clone(),
                    assigned_to: e.assigned_to.clone(),
                    status: "running".into(),
                    output: serde_json::Value::Null,
                    started_at: at,
                });
                true
            }
            Event::WorkflowStepCompleted(e) if e.workflow_id == id => {
                if let Some(s) = self.steps.iter_mut().rev().find(|s| s.step == e.step) {
                    s.status = match e.outcome {
                        TaskOutcome::Succeeded => "succeeded",
                        TaskOutcome::Failed => "failed",
                        TaskOutcome::Cancelled => "cancelled",
                    }
                    .into();
                    s.output = e.output.0.clone();
                }
                true
            }
            _ => false,
        };
        if mine {
            self.updated_at = at;
        }
    }
}
