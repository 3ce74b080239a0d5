//! `session.update_context`, `session.assert_fact`, `session.report_error`: writing
//! into an open session. Spec 014 names the events (`context_updated`,
//! `error_occurred` on `session.events`, REQ-014-057; fact events with `fact_type`,
//! `session_id`, `data`, REQ-014-060) and `session.get` shows context, facts and errors
//! (REQ-014-054), but names no method that produces them; these three are our
//! additions (docs/gateway.md).
//!
//! Each is one kernel command issued by the caller (governed: `session.update`,
//! `session.fact`, `session.error`; a junior may only report errors), answered once the
//! sessions view has folded it, so a `session.get` right after sees it. A write into a
//! closed or unknown session is denied by the default policy (-32001
//! `governance_denied`, rule `session_not_open`); an ungoverned kernel refuses it as
//! -32602 `session_closed` / `unknown_session`. Context and facts are the session
//! owner's (the principal that opened it) or an admin's to write (-32001 `not_owner`);
//! errors anyone acting in the session may report.

use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::{CommandKind, Stream};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::session::{find, owned};
use crate::gateway::backends;
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;
use crate::kernel::cmd;

/// Runs `action` as the caller and waits until the sessions view folded it; returns
/// the sequence of its event.
async fn write(
    call: &Call,
    action: CommandKind,
) -> Result<Option<u64>, crate::gateway::error::RpcError> {
    let views = backends::views(call)?;
    let outcome = backends::execute(call, cmd::command(&call.client_id(), action)).await?;
    views
        .settle(&views.sessions, &outcome, Stream::SessionEvents)
        .await?;
    Ok(outcome.last_sequence(Stream::SessionEvents))
}

#[derive(Deserialize)]
struct ContextParams {
    session_id: String,
    context: Map<String, Value>,
}

/// Merges `context` (a JSON merge patch) into the session's context; answers the
/// context after it.
pub async fn update_context(call: Call) -> RpcResult {
    let p: ContextParams = call.parse()?;
    owned(&call, &backends::views(&call)?, &p.session_id).await?;
    let action = CommandKind::UpdateSessionContext {
        session_id: p.session_id.clone(),
        patch: Json(Value::Object(p.context)),
    };
    let sequence = write(&call, action).await?;
    let views = backends::views(&call)?;
    let sessions = views.sessions.read();
    let s = find(&sessions, &p.session_id)?;
    Ok(json!({ "session_id": s.session_id, "context": s.context, "sequence": sequence }))
}

#[derive(Deserialize)]
struct FactParams {
    session_id: String,
    fact_type: String,
    data: Value,
}

/// Records a fact in the session; answers how many it holds now.
pub async fn assert_fact(call: Call) -> RpcResult {
    let p: FactParams = call.parse()?;
    owned(&call, &backends::views(&call)?, &p.session_id).await?;
    let action = CommandKind::AssertSessionFact {
        session_id: p.session_id.clone(),
        fact_type: p.fact_type.clone(),
        data: Json(p.data),
    };
    let sequence = write(&call, action).await?;
    let views = backends::views(&call)?;
    let sessions = views.sessions.read();
    let s = find(&sessions, &p.session_id)?;
    Ok(json!({
        "session_id": s.session_id, "fact_type": p.fact_type,
        "facts": s.facts.len(), "sequence": sequence,
    }))
}

#[derive(Deserialize)]
struct ErrorParams {
    session_id: String,
    code: String,
    message: String,
    #[serde(default = "recoverable")]
    recoverable: bool,
}

fn recoverable() -> bool {
    true
}

/// Records an error in the session; answers how many it holds now.
pub async fn report_error(call: Call) -> RpcResult {
    let p: ErrorParams = call.parse()?;
    let action = CommandKind::ReportSessionError {
        session_id: p.session_id.clone(),
        code: p.code.clone(),
        message: p.message,
        recoverable: p.recoverable,
    };
    let sequence = write(&call, action).await?;
    let views = backends::views(&call)?;
    let sessions = views.sessions.read();
    let s = find(&sessions, &p.session_id)?;
    Ok(json!({
        "session_id": s.session_id, "code": p.code,
        "errors": s.errors.len(), "sequence": sequence,
    }))
}
