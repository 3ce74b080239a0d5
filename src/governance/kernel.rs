//! What the kernel asks governance before it appends: the mapping from a kernel
//! [`Command`] to a governance [`Request`].
//!
//! | command | subject | action | resource | context |
//! |---|---|---|---|---|
//! | `send_packet` | `volk(from_agent)` | `cxp.send` | `to_agent` | `session`, `subject`, `thread`, `priority` |
//! | `set_priority` | issuer | `cxp.priority` | message id | `priority` |
//! | `register_volk` | issuer | `volk.register` | alias | `parent`, `kind = senior` |
//! | `deregister_volk`, `terminate_volk` | issuer | `volk.deregister` | alias | |
//! | `spawn_volk` | `volk(parent)` | `volk.register` | alias | `parent`, `kind = junior` |
//! | `escalate_volk` | `volk(alias)` | `cxp.escalate` | target (`to`) | |
//! | `open_session` | issuer | `session.open` | session id | |
//! | `resume_session` | issuer | `session.resume` | session id | |
//! | `close_session` | issuer | `session.close` | session id | |
//!
//! The issuer is a Volk when it looks like an alias (`U:Xx`), a client otherwise.
//! Other commands (delivery bookkeeping by the Postman, work status, threads) are not
//! governed.

use orchestrata_schemas::events::types::SubjectKind;
use orchestrata_schemas::events::{Command, CommandKind};

use super::Request;

fn issuer(command: &Command, action: &str, resource: &str) -> Request {
    let looks_like_volk = command.issuer.starts_with("U:");
    let kind = if looks_like_volk {
        SubjectKind::Volk
    } else {
        SubjectKind::Client
    };
    let mut request = Request::client(&command.issuer, action, resource);
    request.subject_kind = kind;
    request
}

/// The governance request for `command`, or `None` if the command is not governed.
pub fn request_for(command: &Command) -> Option<Request> {
    Some(match &command.action {
        CommandKind::SendPacket { packet } => {
            let mut r = Request::volk(&packet.from_agent, "cxp.send", &packet.to_agent)
                .with("subject", packet.subject.clone())
                .with("thread", packet.thread_id.clone())
                .with("priority", packet.priority);
            if let Some(session) = packet.metadata.0.get("session_id").and_then(|v| v.as_str()) {
                r = r.with("session", session.to_owned());
            }
            r
        }
        CommandKind::SetPriority {
            message_id,
            priority,
            ..
        } => issuer(command, "cxp.priority", &message_id.to_string()).with("priority", *priority),
        CommandKind::RegisterVolk { alias, parent, .. } => issuer(command, "volk.register", alias)
            .with("parent", parent.clone().unwrap_or_else(|| "none".into()))
            .with("kind", "senior"),
        CommandKind::DeregisterVolk { alias, .. } => issuer(command, "volk.deregister", alias),
        CommandKind::SpawnVolk { alias, parent, .. } => {
            Request::volk(parent, "volk.register", alias)
                .with("parent", parent.clone())
                .with("kind", "junior")
        }
        CommandKind::TerminateVolk { alias, .. } => issuer(command, "volk.deregister", alias),
        CommandKind::EscalateVolk { alias, to, .. } => Request::volk(alias, "cxp.escalate", to),
        CommandKind::OpenSession { session_id, .. } => issuer(command, "session.open", session_id),
        CommandKind::ResumeSession { session_id } => issuer(command, "session.resume", session_id),
        CommandKind::CloseSession { session_id, .. } => {
            issuer(command, "session.close", session_id)
        }
        CommandKind::UpdateSessionContext { session_id, .. } => {
            issuer(command, "session.update", session_id)
        }
        CommandKind::AssertSessionFact {
            session_id,
            fact_type,
            ..
        } => issuer(command, "session.fact", session_id).with("fact_type", fact_type.clone()),
        CommandKind::ReportSessionError {
            session_id, code, ..
        } => issuer(command, "session.error", session_id).with("code", code.clone()),
        _ => return None,
    })
}
