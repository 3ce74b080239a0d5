//! Sessions (Articles I and III): open; close archives resolved packets and carries
//! unresolved packets and active threads over; resume restores them. While open, a
//! session's context is patched, and facts and errors are recorded in it
//! (REQ-014-054, REQ-014-057, REQ-014-060).

use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::cxp_traffic::WorkStatusChanged;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::session::{
    SessionClosed, SessionContextUpdated, SessionErrorOccurred, SessionFactAsserted, SessionOpened,
    SessionRecovered,
};
use orchestrata_schemas::events::EventRecord;

use super::{non_empty, Ctx};
use crate::kernel::state::{SessionState, SessionStatus, ThreadStatus};
use crate::kernel::KernelError;

fn session<'a>(cx: &'a Ctx<'_>, id: &str) -> Result<&'a SessionState, KernelError> {
    cx.state
        .session(id)
        .ok_or_else(|| KernelError::UnknownSession {
            session_id: id.to_owned(),
        })
}

/// `open_session`: a new id with a portfolio.
pub(super) fn open(
    cx: &Ctx<'_>,
    id: &str,
    portfolio: &str,
    goals: &[String],
) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("session_id", id)?;
    non_empty("portfolio_id", portfolio)?;
    if cx.state.session(id).is_some() {
        return Err(KernelError::SessionExists {
            session_id: id.to_owned(),
        });
    }
    let event = SessionOpened {
        session_id: id.to_owned(),
        portfolio_id: portfolio.to_owned(),
        goals: goals.to_vec(),
        opened_by: cx.issuer.to_owned(),
    };
    Ok(vec![cx.record(id, event)])
}

/// `close_session`: every resolved packet of the session is archived (a
/// `work_status_changed` resolved -> archived); the carryover list is the closer's own
/// entries, then `packet:<id>` for each unresolved packet (pending, in progress — failed
/// deliveries included, for retry) and `thread:<id>` for each thread still active in it.
pub(super) fn close(
    cx: &Ctx<'_>,
    id: &str,
    summary: &str,
    carryover: &[String],
) -> Result<Vec<EventRecord>, KernelError> {
    let s = session(cx, id)?;
    if s.status == SessionStatus::Closed {
        return Err(KernelError::SessionClosed {
            session_id: id.to_owned(),
        });
    }
    let mut records = Vec::new();
    let mut carried: Vec<String> = carryover.to_vec();
    for pid in &s.packets {
        let Some(p) = cx.state.packet(pid) else {
            continue;
        };
        match p.packet.work_status() {
            WorkStatus::Resolved => {
                let event = WorkStatusChanged {
                    message_id: *pid,
                    thread_id: p.packet.thread_id().to_owned(),
                    old: WorkStatus::Resolved,
                    new: WorkStatus::Archived,
                    changed_by: cx.issuer.to_owned(),
                    assigned_to: None,
                    resolution: None,
                    notes: Some(format!("archived at the close of session {id}")),
                };
                records.push(cx.record_at(p.packet.thread_id(), event, cx.at_for(&p)));
            }
            WorkStatus::Pending | WorkStatus::InProgress => carried.push(format!("packet:{pid}")),
            WorkStatus::Archived => {}
        }
    }
    for tid in &s.threads {
        let active = cx
            .state
            .thread(tid)
            .is_some_and(|t| t.status == ThreadStatus::Active && t.session.as_deref() == Some(id));
        if active {
            carried.push(format!("thread:{tid}"));
        }
    }
    records.push(cx.record(
        id,
        SessionClosed {
            session_id: id.to_owned(),
            summary: summary.to_owned(),
            carryover: carried,
        },
    ));
    Ok(records)
}

/// `resume_session`: closed -> open; its carried-over packets and threads are its own
/// again (the carryover list stays readable in the session).
pub(super) fn resume(cx: &Ctx<'_>, id: &str) -> Result<Vec<EventRecord>, KernelError> {
    let s = session(cx, id)?;
    if s.status == SessionStatus::Open {
        return Err(KernelError::InvalidTransition {
            entity: format!("session {id}"),
            field: "status",
            from: "open".into(),
            to: "open".into(),
        });
    }
    let event = SessionRecovered {
        session_id: id.to_owned(),
        recovered_by: cx.issuer.to_owned(),
        reason: None,
    };
    Ok(vec![cx.record(id, event)])
}

/// The session `id`, which must be open (`session_closed` otherwise).
fn open_session<'a>(cx: &'a Ctx<'_>, id: &str) -> Result<&'a SessionState, KernelError> {
    let s = session(cx, id)?;
    if s.status == SessionStatus::Closed {
        return Err(KernelError::SessionClosed {
            session_id: id.to_owned(),
        });
    }
    Ok(s)
}

/// `update_session_context`: a JSON merge patch (an object) of an open session's
/// context.
pub(super) fn update_context(
    cx: &Ctx<'_>,
    id: &str,
    patch: &Json,
) -> Result<Vec<EventRecord>, KernelError> {
    open_session(cx, id)?;
    if !patch.0.is_object() {
        return Err(KernelError::invalid(
            "context",
            "a JSON object (a merge patch: `null` members remove keys) is required",
        ));
    }
    let event = SessionContextUpdated {
        session_id: id.to_owned(),
        patch: patch.clone(),
        updated_by: cx.issuer.to_owned(),
    };
    Ok(vec![cx.record(id, event)])
}

/// `assert_session_fact`: a fact of `fact_type` emitted in an open session.
pub(super) fn assert_fact(
    cx: &Ctx<'_>,
    id: &str,
    fact_type: &str,
    data: &Json,
) -> Result<Vec<EventRecord>, KernelError> {
    open_session(cx, id)?;
    non_empty("fact_type", fact_type)?;
    let event = SessionFactAsserted {
        session_id: id.to_owned(),
        fact_type: fact_type.to_owned(),
        data: data.clone(),
        asserted_by: cx.issuer.to_owned(),
    };
    Ok(vec![cx.record(id, event)])
}

/// `report_session_error`: an error that happened in an open session.
pub(super) fn report_error(
    cx: &Ctx<'_>,
    id: &str,
    code: &str,
    message: &str,
    recoverable: bool,
) -> Result<Vec<EventRecord>, KernelError> {
    open_session(cx, id)?;
    non_empty("code", code)?;
    non_empty("message", message)?;
    let event = SessionErrorOccurred {
        session_id: id.to_owned(),
        code: code.to_owned(),
        message: message.to_owned(),
        recoverable,
    };
    Ok(vec![cx.record(id, event)])
}
