//! Building commands: one constructor per [`CommandKind`], each with a fresh command id.
//!
//! ```no_run
//! # async fn demo(kernel: orchestrata::kernel::Kernel) -> Result<(), orchestrata::kernel::KernelError> {
//! use orchestrata::kernel::cmd;
//! use serde_json::json;
//! let ask = cmd::packet("U:Cx", "U:Ox", "build_feature", json!({"feature": "login"}));
//! let outcome = kernel.execute(cmd::send("U:Cx", ask.clone())).await?;
//! let answer = cmd::reply(&ask, "accepted", json!({}));   // same thread, in_reply_to
//! kernel.execute(cmd::send("U:Ox", answer)).await?;
//! # let _ = outcome; Ok(()) }
//! ```

use chrono::Utc;
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus, CURRENT_VERSION};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::{Command, CommandKind};
use uuid::Uuid;

use super::convert::SESSION_KEY;

/// A command with a fresh id, ordered by time (UUID v7): the kernel keeps every
/// executed id, and ids that arrive in order land at the right edge of its spill
/// table's B-tree (random v4 ids landed on a random page each).
pub fn command(issuer: &str, action: CommandKind) -> Command {
    Command {
        id: Uuid::now_v7(),
        principal: None,
        issuer: issuer.to_owned(),
        action,
    }
}

/// A new packet starting a new conversation (empty `thread_id`: the kernel gives it a
/// UUID thread), priority 5, created now, `queued` / `pending`. Its message id is
/// ordered by time (UUID v7), like [`command`]'s ids: message ids key the kernel's
/// spill table and the views' index rows.
pub fn packet(from: &str, to: &str, subject: &str, payload: serde_json::Value) -> Packet {
    Packet {
        message_id: Uuid::now_v7(),
        from_agent: from.to_owned(),
        to_agent: to.to_owned(),
        thread_id: String::new(),
        subject: subject.to_owned(),
        payload: PacketPayload::Json(payload.into()),
        created_at: Utc::now(),
        priority: 5,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: CURRENT_VERSION.to_string(),
        in_reply_to: None,
        metadata: Json(serde_json::json!({})),
    }
}

/// A reply to `to`: sender and recipient swapped, `in_reply_to` set, thread inherited.
pub fn reply(to: &Packet, subject: &str, payload: serde_json::Value) -> Packet {
    let mut p = packet(&to.to_agent, &to.from_agent, subject, payload);
    p.in_reply_to = Some(to.message_id);
    p
}

/// `packet` in session `session_id` (metadata `session_id`).
pub fn in_session(mut packet: Packet, session_id: &str) -> Packet {
    match &mut packet.metadata.0 {
        serde_json::Value::Object(map) => {
            map.insert(SESSION_KEY.into(), session_id.into());
        }
        other => *other = serde_json::json!({ SESSION_KEY: session_id }),
    }
    packet
}

/// Send (queue) `packet`.
pub fn send(issuer: &str, packet: Packet) -> Command {
    command(issuer, CommandKind::SendPacket { packet })
}

/// Mark `message_id` delivered.
pub fn mark_delivered(issuer: &str, message_id: Uuid) -> Command {
    command(issuer, CommandKind::MarkDelivered { message_id })
}

/// `by` acknowledges `message_id`.
pub fn acknowledge(by: &str, message_id: Uuid) -> Command {
    command(
        by,
        CommandKind::Acknowledge {
            message_id,
            by: by.to_owned(),
        },
    )
}

/// Mark the delivery of `message_id` failed.
pub fn fail(issuer: &str, message_id: Uuid, reason: &str) -> Command {
    command(
        issuer,
        CommandKind::Fail {
            message_id,
            reason: reason.to_owned(),
        },
    )
}

/// Queue a failed packet again.
pub fn retry(issuer: &str, message_id: Uuid) -> Command {
    command(issuer, CommandKind::Retry { message_id })
}

/// Move the work of `message_id` to `status`.
pub fn work(issuer: &str, message_id: Uuid, status: WorkStatus) -> Command {
    command(
        issuer,
        CommandKind::SetWorkStatus {
            message_id,
            status,
            assigned_to: None,
            resolution: None,
            notes: None,
        },
    )
}

/// Resolve the work of `message_id` with `result`.
pub fn resolve(issuer: &str, message_id: Uuid, result: serde_json::Value) -> Command {
    command(
        issuer,
        CommandKind::SetWorkStatus {
            message_id,
            status: WorkStatus::Resolved,
            assigned_to: None,
            resolution: Some(Json(result)),
            notes: None,
        },
    )
}

/// Change the priority of `message_id`.
pub fn priority(issuer: &str, message_id: Uuid, priority: i32) -> Command {
    command(
        issuer,
        CommandKind::SetPriority {
            message_id,
            priority,
            reason: None,
        },
    )
}

/// Close, reopen or archive a thread: `kind` builds the action from the id.
pub fn thread(
    issuer: &str,
    kind: fn(String, Option<String>) -> CommandKind,
    thread_id: &str,
) -> Command {
    command(issuer, kind(thread_id.to_owned(), None))
}

/// [`CommandKind::CloseThread`] as a function for [`thread`].
pub fn close_thread(thread_id: String, reason: Option<String>) -> CommandKind {
    CommandKind::CloseThread { thread_id, reason }
}

/// [`CommandKind::ReopenThread`] as a function for [`thread`].
pub fn reopen_thread(thread_id: String, reason: Option<String>) -> CommandKind {
    CommandKind::ReopenThread { thread_id, reason }
}

/// [`CommandKind::ArchiveThread`] as a function for [`thread`].
pub fn archive_thread(thread_id: String, reason: Option<String>) -> CommandKind {
    CommandKind::ArchiveThread { thread_id, reason }
}

/// Open session `session_id` on `portfolio_id`.
pub fn open_session(issuer: &str, session_id: &str, portfolio_id: &str) -> Command {
    command(
        issuer,
        CommandKind::OpenSession {
            session_id: session_id.to_owned(),
            portfolio_id: portfolio_id.to_owned(),
            goals: Vec::new(),
        },
    )
}

/// Close session `session_id`.
pub fn close_session(issuer: &str, session_id: &str, summary: &str) -> Command {
    command(
        issuer,
        CommandKind::CloseSession {
            session_id: session_id.to_owned(),
            summary: summary.to_owned(),
            carryover: Vec::new(),
        },
    )
}

/// Resume session `session_id`.
pub fn resume_session(issuer: &str, session_id: &str) -> Command {
    command(
        issuer,
        CommandKind::ResumeSession {
            session_id: session_id.to_owned(),
        },
    )
}

/// Register Volk `alias` under `parent`.
pub fn register(issuer: &str, alias: &str, parent: Option<&str>) -> Command {
    command(
        issuer,
        CommandKind::RegisterVolk {
            alias: alias.to_owned(),
            capabilities: Vec::new(),
            parent: parent.map(str::to_owned),
            protocols: vec!["cxp/1.0".into()],
            metadata: Json(serde_json::json!({})),
        },
    )
}

/// Deregister Volk `alias`.
pub fn deregister(issuer: &str, alias: &str, reason: &str) -> Command {
    command(
        issuer,
        CommandKind::DeregisterVolk {
            alias: alias.to_owned(),
            reason: reason.to_owned(),
        },
    )
}

/// The ids a command concerns, for log lines: `(message_id, thread_id, session_id)`,
/// each `None` when the command does not name one. A packet's session is read from
/// its metadata.
pub fn ids(command: &Command) -> (Option<String>, Option<String>, Option<String>) {
    let Ok(value) = serde_json::to_value(&command.action) else {
        return (None, None, None);
    };
    // {"send_packet": {"packet": {...}}} or {"acknowledge": {"message_id": ...}}
    let body = value
        .as_object()
        .and_then(|o| o.values().next())
        .cloned()
        .unwrap_or_default();
    let packet = body.get("packet");
    let field = |name: &str| -> Option<String> {
        body.get(name)
            .or_else(|| packet.and_then(|p| p.get(name)))
            .and_then(|v| v.as_str().map(str::to_owned))
    };
    let session = field("session_id").or_else(|| {
        packet
            .and_then(|p| p.get("metadata"))
            .and_then(|m| m.get(SESSION_KEY))
            .and_then(|v| v.as_str().map(str::to_owned))
    });
    (field("message_id"), field("thread_id"), session)
}

#[cfg(test)]
mod tests {
    use super::*;

    // ISSUE-18: the ids the kernel keeps for the server's life arrive in order
    #[test]
    fn commands_and_packets_get_ids_in_time_order() {
        let ids: Vec<Uuid> = (0..2_000)
            .flat_map(|i| {
                let p = packet("U:Ox", "U:Vz", &format!("s{i}"), serde_json::json!({}));
                [p.message_id, send("U:Ox", p).id]
            })
            .collect();
        assert!(ids.iter().all(|id| id.get_version_num() == 7));
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "strictly increasing");
    }
}
