//! Workflow runs: started -> paused <-> running -> cancelled / completed / failed, with
//! step progress recorded while running. `failed` comes from the runner (a step's
//! junior failed after its retries) or from recovery at start (the run was in progress
//! when the server stopped).

use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::TaskOutcome;
use orchestrata_schemas::events::workflow::{
    WorkflowCancelled, WorkflowCompleted, WorkflowFailed, WorkflowPaused, WorkflowResumed,
    WorkflowStarted, WorkflowStepCompleted, WorkflowStepStarted,
};
use orchestrata_schemas::events::EventRecord;

use super::{non_empty, Ctx};
use crate::kernel::state::{SessionStatus, WorkflowStatus};
use crate::kernel::KernelError;

fn status(cx: &Ctx<'_>, id: &str) -> Result<WorkflowStatus, KernelError> {
    cx.state
        .workflow(id)
        .ok_or_else(|| KernelError::invalid("workflow_id", format!("no workflow `{id}`")))
}

fn refuse(id: &str, from: WorkflowStatus, to: &str) -> KernelError {
    KernelError::InvalidTransition {
        entity: format!("workflow {id}"),
        field: "status",
        from: from.as_str().into(),
        to: to.into(),
    }
}

/// `start_workflow`: a new run id, optionally in an open session.
pub(super) fn start(
    cx: &Ctx<'_>,
    id: &str,
    name: &str,
    params: &Json,
    session: Option<&str>,
) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("workflow_id", id)?;
    non_empty("name", name)?;
    if cx.state.workflow(id).is_some() {
        return Err(KernelError::invalid(
            "workflow_id",
            format!("workflow `{id}` exists already"),
        ));
    }
    if let Some(s) = session {
        match cx.state.session(s) {
            None => {
                return Err(KernelError::UnknownSession {
                    session_id: s.to_owned(),
                })
            }
            Some(state) if state.status == SessionStatus::Closed => {
                return Err(KernelError::SessionClosed {
                    session_id: s.to_owned(),
                })
            }
            Some(_) => {}
        }
    }
    let event = WorkflowStarted {
        workflow_id: id.to_owned(),
        name: name.to_owned(),
        params: params.clone(),
        started_by: cx.issuer.to_owned(),
        session_id: session.map(str::to_owned),
    };
    Ok(vec![cx.record(id, event)])
}

/// `pause_workflow`: running -> paused.
pub(super) fn pause(
    cx: &Ctx<'_>,
    id: &str,
    reason: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    let s = status(cx, id)?;
    if s != WorkflowStatus::Running {
        return Err(refuse(id, s, "paused"));
    }
    let event = WorkflowPaused {
        workflow_id: id.to_owned(),
        paused_by: cx.issuer.to_owned(),
        reason,
    };
    Ok(vec![cx.record(id, event)])
}

/// `resume_workflow`: paused -> running.
pub(super) fn resume(cx: &Ctx<'_>, id: &str) -> Result<Vec<EventRecord>, KernelError> {
    let s = status(cx, id)?;
    if s != WorkflowStatus::Paused {
        return Err(refuse(id, s, "running"));
    }
    let event = WorkflowResumed {
        workflow_id: id.to_owned(),
        resumed_by: cx.issuer.to_owned(),
    };
    Ok(vec![cx.record(id, event)])
}

/// `cancel_workflow`: running or paused -> finished.
pub(super) fn cancel(
    cx: &Ctx<'_>,
    id: &str,
    reason: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    let s = status(cx, id)?;
    if s == WorkflowStatus::Finished {
        return Err(refuse(id, s, "cancelled"));
    }
    let event = WorkflowCancelled {
        workflow_id: id.to_owned(),
        cancelled_by: cx.issuer.to_owned(),
        reason,
    };
    Ok(vec![cx.record(id, event)])
}

/// `fail_workflow`: running or paused -> finished (failed).
pub(super) fn fail(
    cx: &Ctx<'_>,
    id: &str,
    error: &str,
    step: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    let s = status(cx, id)?;
    if s == WorkflowStatus::Finished {
        return Err(refuse(id, s, "failed"));
    }
    non_empty("error", error)?;
    let event = WorkflowFailed {
        workflow_id: id.to_owned(),
        error: error.to_owned(),
        step,
    };
    Ok(vec![cx.record(id, event)])
}

/// `record_workflow_step`: progress of a running workflow; `completed` finishes it.
pub(super) fn step(
    cx: &Ctx<'_>,
    id: &str,
    step: &str,
    phase: &str,
    assigned_to: Option<&str>,
    output: &Json,
) -> Result<Vec<EventRecord>, KernelError> {
    let s = status(cx, id)?;
    if s != WorkflowStatus::Running {
        return Err(refuse(id, s, phase));
    }
    non_empty("step", step)?;
    let record = match phase {
        "started" => cx.record(
            id,
            WorkflowStepStarted {
                workflow_id: id.to_owned(),
                step: step.to_owned(),
                assigned_to: assigned_to.map(str::to_owned),
            },
        ),
        "succeeded" | "failed" => cx.record(
            id,
            WorkflowStepCompleted {
                workflow_id: id.to_owned(),
                step: step.to_owned(),
                outcome: if phase == "succeeded" {
                    TaskOutcome::Succeeded
                } else {
                    TaskOutcome::Failed
                },
                output: output.clone(),
            },
        ),
        "completed" => cx.record(
            id,
            WorkflowCompleted {
                workflow_id: id.to_owned(),
                result: output.clone(),
            },
        ),
        other => {
            return Err(KernelError::invalid(
                "phase",
                format!("`{other}` is not one of started, succeeded, failed, completed"),
            ))
        }
    };
    Ok(vec![record])
}
