//! Thread lifecycle: active -> closed -> active (reopen); active|closed -> archived.

use orchestrata_schemas::events::cxp_traffic::{ThreadArchived, ThreadClosed, ThreadReopened};
use orchestrata_schemas::events::EventRecord;

use super::Ctx;
use crate::kernel::state::{ThreadState, ThreadStatus};
use crate::kernel::KernelError;

fn thread<'a>(cx: &'a Ctx<'_>, id: &str) -> Result<std::borrow::Cow<'a, ThreadState>, KernelError> {
    cx.state
        .thread(id)
        .ok_or_else(|| KernelError::UnknownThread {
            thread_id: id.to_owned(),
        })
}

fn refuse(id: &str, from: ThreadStatus, to: ThreadStatus) -> KernelError {
    KernelError::InvalidTransition {
        entity: format!("thread {id}"),
        field: "status",
        from: from.as_str().into(),
        to: to.as_str().into(),
    }
}

/// `close_thread`: active -> closed.
pub(super) fn close(
    cx: &Ctx<'_>,
    id: &str,
    reason: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    let t = thread(cx, id)?;
    if t.status != ThreadStatus::Active {
        return Err(refuse(id, t.status, ThreadStatus::Closed));
    }
    let event = ThreadClosed {
        thread_id: id.to_owned(),
        closed_by: cx.issuer.to_owned(),
        reason,
    };
    Ok(vec![cx.record(id, event)])
}

/// `reopen_thread`: closed -> active.
pub(super) fn reopen(
    cx: &Ctx<'_>,
    id: &str,
    reason: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    let t = thread(cx, id)?;
    if t.status != ThreadStatus::Closed {
        return Err(refuse(id, t.status, ThreadStatus::Active));
    }
    let event = ThreadReopened {
        thread_id: id.to_owned(),
        reopened_by: cx.issuer.to_owned(),
        reason,
    };
    Ok(vec![cx.record(id, event)])
}

/// `archive_thread`: active or closed -> archived (terminal).
pub(super) fn archive(
    cx: &Ctx<'_>,
    id: &str,
    reason: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    let t = thread(cx, id)?;
    if t.status == ThreadStatus::Archived {
        return Err(refuse(id, t.status, ThreadStatus::Archived));
    }
    let event = ThreadArchived {
        thread_id: id.to_owned(),
        archived_by: cx.issuer.to_owned(),
        reason,
    };
    Ok(vec![cx.record(id, event)])
}
