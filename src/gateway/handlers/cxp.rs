//! `cxp.send`, `cxp.status`, and our additions `cxp.ack` and `cxp.work` (REQ-014-011..015, REQ-014-071..075).
//!
//! Every mutation is a kernel command (validated as a CXP packet, governed, routed by
//! the Postman), answered only once the thread view has applied it; `cxp.status` reads
//! the thread view. External agents use `cxp.ack` to acknowledge a delivered packet and
//! `cxp.work` to move its work status, exactly as in-process Volks do.

use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::PacketPayload;
use orchestrata_schemas::events::{CommandKind, Stream};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::gateway::backends::{self, settle, Views};
use crate::gateway::error::RpcError;
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;
use crate::kernel::cmd;

/// The alias a packet is sent from when the caller names none.
pub const GATEWAY_ALIAS: &str = "U:GW";

/// The subject of a packet sent without one.
pub const DEFAULT_SUBJECT: &str = "message";

#[derive(Deserialize)]
struct SendParams {
    target: String,
    from: Option<String>,
    #[serde(default)]
    payload: Value,
    subject: Option<String>,
    priority: Option<i32>,
    thread_id: Option<String>,
    in_reply_to: Option<Uuid>,
}

/// One packet's state as answered by `cxp.*`: the view's state, serialized.
fn packet_json(views: &Views, message_id: &Uuid) -> RpcResult {
    let threads = views.threads.read();
    let state = threads.packet(message_id).ok_or_else(|| {
        RpcError::invalid_params("unknown_packet", format!("no packet `{message_id}`"))
    })?;
    serde_json::to_value(state).map_err(|e| RpcError::internal("encoding_failed", e))
}

/// Sends a packet through the kernel; answers its delivery status, thread, message id
/// and `routed_via` once the thread view holds it.
pub async fn send(call: Call) -> RpcResult {
    let p: SendParams = call.parse()?;
    let views = backends::views(&call)?;
    let from = p.from.as_deref().unwrap_or(GATEWAY_ALIAS);
    let subject = p.subject.as_deref().unwrap_or(DEFAULT_SUBJECT);
    let mut packet = cmd::packet(from, &p.target, subject, Value::Null);
    packet.payload = PacketPayload::Json(p.payload.into());
    if let Some(priority) = p.priority {
        packet.priority = priority;
    }
    if let Some(thread_id) = p.thread_id {
        packet.thread_id = thread_id;
    }
    packet.in_reply_to = p.in_reply_to;
    let message_id = packet.message_id;
    let outcome = backends::execute(&call, cmd::send(from, packet)).await?;
    settle(&views.threads, &outcome, Stream::CxpTraffic).await?;
    let state = packet_json(&views, &message_id)?;
    tracing::info!(
        %message_id,
        thread_id = %state["packet"]["thread_id"].as_str().unwrap_or_default(),
        from,
        to = %p.target,
        status = %state["delivery_status"].as_str().unwrap_or_default(),
        "packet sent"
    );
    Ok(json!({
        "status": state["delivery_status"],
        "work_status": state["work_status"],
        "thread_id": state["packet"]["thread_id"],
        "message_id": message_id,
        "routed_via": "postman",
        "sequence": outcome.last_sequence(Stream::CxpTraffic),
        "events": outcome.event_types(),
    }))
}

/// A thread's packets with their delivery and work status and every transition;
/// an unknown thread is -32602 `unknown_thread`.
pub async fn status(call: Call) -> RpcResult {
    let thread_id = call.params["thread_id"].as_str().unwrap_or_default();
    let views = backends::views(&call)?;
    let threads = views.threads.read();
    let thread = threads.thread(thread_id).ok_or_else(|| {
        RpcError::invalid_params("unknown_thread", format!("no thread `{thread_id}`"))
            .with("field", "thread_id")
    })?;
    let packets: Vec<_> = threads.thread_packets(thread_id).collect();
    Ok(json!({
        "thread_id": thread_id,
        "thread": thread,
        "packets": packets,
        "total": packets.len(),
    }))
}

#[derive(Deserialize)]
struct AckParams {
    message_id: Uuid,
    by: String,
}

/// `by` (the packet's recipient) acknowledges a delivered packet.
pub async fn ack(call: Call) -> RpcResult {
    let p: AckParams = call.parse()?;
    let views = backends::views(&call)?;
    let outcome = backends::execute(&call, cmd::acknowledge(&p.by, p.message_id)).await?;
    settle(&views.threads, &outcome, Stream::CxpTraffic).await?;
    let state = packet_json(&views, &p.message_id)?;
    tracing::info!(
        message_id = %p.message_id,
        thread_id = %state["packet"]["thread_id"].as_str().unwrap_or_default(),
        by = %p.by,
        "packet acknowledged"
    );
    Ok(json!({
        "message_id": p.message_id,
        "status": state["delivery_status"],
        "sequence": outcome.last_sequence(Stream::CxpTraffic),
    }))
}

#[derive(Deserialize)]
struct WorkParams {
    message_id: Uuid,
    status: WorkStatus,
    assigned_to: Option<String>,
    resolution: Option<Value>,
    notes: Option<String>,
}

/// Moves a packet's work status (with assignee, resolution and notes when given).
pub async fn work(call: Call) -> RpcResult {
    let p: WorkParams = call.parse()?;
    let views = backends::views(&call)?;
    let issuer = p.assigned_to.clone().unwrap_or_else(|| call.client_id());
    let command = cmd::command(
        &issuer,
        CommandKind::SetWorkStatus {
            message_id: p.message_id,
            status: p.status,
            assigned_to: p.assigned_to,
            resolution: p.resolution.map(Json),
            notes: p.notes,
        },
    );
    let outcome = backends::execute(&call, command).await?;
    settle(&views.threads, &outcome, Stream::CxpTraffic).await?;
    let state = packet_json(&views, &p.message_id)?;
    tracing::info!(
        message_id = %p.message_id,
        thread_id = %state["packet"]["thread_id"].as_str().unwrap_or_default(),
        work_status = %state["work_status"].as_str().unwrap_or_default(),
        "work status moved"
    );
    Ok(json!({
        "message_id": p.message_id,
        "work_status": state["work_status"],
        "assigned_to": state["assigned_to"],
        "sequence": outcome.last_sequence(Stream::CxpTraffic),
    }))
}
