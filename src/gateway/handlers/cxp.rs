//! `cxp.send`, `cxp.status`, and our additions `cxp.ack` and `cxp.work` (REQ-014-011..015, REQ-014-071..075).
//!
//! Every mutation is a kernel command (validated as a CXP packet, governed, routed by
//! the Postman), answered only once the thread view has applied it; `cxp.status` reads
//! the thread view. External agents use `cxp.ack` to acknowledge a delivered packet and
//! `cxp.work` to move its work status, exactly as in-process Volks do.

use orchestrata_projections::thread::PacketState;
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::{CommandKind, Stream};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::gateway::acting;
use crate::gateway::backends::{self, Views};
use crate::gateway::error::RpcError;
use crate::gateway::idempotency::{self, IdempotencyKey};
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;
use crate::kernel::cmd;

/// The Volk every packet is routed through: the Postman (the contract's `routed_via`).
pub const POSTMAN_ALIAS: &str = "U:PS";

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
    let state = packet_state(views, message_id)?.ok_or_else(|| {
        RpcError::invalid_params("unknown_packet", format!("no packet `{message_id}`"))
    })?;
    serde_json::to_value(state).map_err(|e| RpcError::internal("encoding_failed", e))
}

/// The packet as the thread view holds it, in memory or (an old one) in its store.
fn packet_state(views: &Views, message_id: &Uuid) -> Result<Option<PacketState>, RpcError> {
    views
        .threads
        .packet_state(message_id)
        .map_err(|e| RpcError::internal("projections_unavailable", e))
}

/// Sends a packet through the kernel; answers its delivery status, thread, message id
/// and `routed_via` once the thread view holds it.
///
/// The packet is sent as `from` when the caller's principal may act as that Volk
/// (else -32001 `not_acting_as`), or as the principal's default Volk when `from` is
/// absent (the spec's example: the operator token sends as `U:GW`).
pub async fn send(call: Call) -> RpcResult {
    let p: SendParams = call.parse()?;
    let views = backends::views(&call)?;
    let from = acting::sender(&call, p.from.as_deref()).await?;
    let from = from.as_str();
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
    let key = IdempotencyKey::of(&call)?;
    if let Some(key) = key {
        packet.message_id = key.derive("message_id");
    }
    let message_id = packet.message_id;
    let sent = packet.clone();
    let outcome = backends::execute(&call, cmd::send(from, packet)).await?;
    views
        .settle(&views.threads, &outcome, Stream::CxpTraffic)
        .await?;
    if outcome.duplicate {
        same_packet(&views, &sent)?;
    }
    // The few fields the answer names, not the whole state (payload and histories)
    // rendered as JSON and picked from.
    let state = packet_state(&views, &message_id)?.ok_or_else(|| {
        RpcError::invalid_params("unknown_packet", format!("no packet `{message_id}`"))
    })?;
    let delivery_status = json!(state.delivery_status);
    let mut answer = json!({
        "status": contract_send_status(&delivery_status),
        "delivery_status": delivery_status,
        "work_status": state.work_status,
        "thread_id": state.packet.thread_id,
        "message_id": message_id,
        "routed_via": POSTMAN_ALIAS,
        "sequence": outcome.last_sequence(Stream::CxpTraffic),
        "events": outcome.event_types(),
    });
    if outcome.duplicate {
        tracing::debug!(%message_id, from, to = %p.target, "packet send repeated (idempotency key): nothing sent now");
        // The first attempt's packet as it stands now; `sequence` is its `packet_sent`.
        answer["sequence"] = json!(state.sequence);
        answer["duplicate"] = json!(true);
        return Ok(answer);
    }
    tracing::debug!(
        %message_id,
        thread_id = %state.packet.thread_id,
        from,
        to = %p.target,
        status = %delivery_status.as_str().unwrap_or_default(),
        "packet sent"
    );
    Ok(answer)
}

/// A repeated `cxp.send` (same idempotency key) must ask for the packet the first one
/// sent: same sender, recipient, subject, payload, priority and reply; else -32602
/// `idempotency_key_reused` (the key names another call, which this one cannot undo).
fn same_packet(views: &Views, asked: &Packet) -> Result<(), RpcError> {
    let first = packet_state(views, &asked.message_id)?.map(|s| s.packet);
    let same = first.is_some_and(|first| {
        first.from_agent == asked.from_agent
            && first.to_agent == asked.to_agent
            && first.subject == asked.subject
            && first.payload == asked.payload
            && first.priority == asked.priority
            && first.in_reply_to == asked.in_reply_to
            && (asked.thread_id.is_empty() || first.thread_id == asked.thread_id)
    });
    if same {
        return Ok(());
    }
    Err(RpcError::invalid_params(
        "idempotency_key_reused",
        format!(
            "params.{}: this key already sent a different packet ({}); use a new key for a new packet",
            idempotency::FIELD,
            asked.message_id
        ),
    )
    .with("field", format!("params.{}", idempotency::FIELD))
    .with("message_id", asked.message_id.to_string()))
}

/// The contract's `cxp.send` status (`sent | failed | queued`) for a delivery status:
/// `queued` stays `queued`, `delivered` and `acknowledged` are `sent`, `failed` is
/// `failed` (the real status is answered too, as `delivery_status`).
pub fn contract_send_status(delivery_status: &Value) -> &'static str {
    match delivery_status.as_str() {
        Some("delivered" | "acknowledged") => "sent",
        Some("failed") => "failed",
        _ => "queued",
    }
}

/// One entry of `cxp.status`'s `transitions`: the contract's `{status, timestamp}`
/// plus which history (`kind`), packet, sequence, actor and note.
fn transition_json<S: serde::Serialize>(
    kind: &str,
    message_id: Uuid,
    t: &orchestrata_projections::Transition<S>,
) -> Value {
    json!({
        "status": t.status,
        "timestamp": t.at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "kind": kind,
        "message_id": message_id,
        "sequence": t.sequence,
        "by": t.by,
        "note": t.note,
    })
}

/// A thread's status as the contract's `cxp.status` result has it (spec 014): the
/// `delivery_status` and `work_status` of the thread's latest packet, and
/// `transitions`, every delivery and work transition of the thread's packets in log
/// order (`{status, timestamp, kind, message_id, sequence, by, note}`). The thread and
/// its packets come along as the extras `thread`, `packets` and `total`. An unknown
/// thread is -32602 `unknown_thread`.
pub async fn status(call: Call) -> RpcResult {
    let thread_id = call.params["thread_id"].as_str().unwrap_or_default();
    let views = backends::views(&call)?;
    let (thread, packets) = views
        .threads
        .thread_state(thread_id)
        .map_err(|e| RpcError::internal("projections_unavailable", e))?
        .ok_or_else(|| {
            RpcError::invalid_params("unknown_thread", format!("no thread `{thread_id}`"))
                .with("field", "thread_id")
        })?;
    let latest = packets.last();
    let word = |v: Value| v.as_str().map(str::to_owned);
    // A thread opened without packets yet has no packet status: `none`.
    let delivery_status = latest
        .and_then(|p| word(json!(p.delivery_status)))
        .unwrap_or_else(|| "none".to_owned());
    let work_status = latest
        .and_then(|p| word(json!(p.work_status)))
        .unwrap_or_else(|| "none".to_owned());
    // (sequence, 0 = delivery / 1 = work, order within the packet) keeps log order.
    let mut transitions: Vec<(u64, u8, usize, Value)> = Vec::new();
    for p in &packets {
        let id = p.packet.message_id;
        for (i, t) in p.delivery_history.iter().enumerate() {
            transitions.push((t.sequence, 0, i, transition_json("delivery", id, t)));
        }
        for (i, t) in p.work_history.iter().enumerate() {
            transitions.push((t.sequence, 1, i, transition_json("work", id, t)));
        }
    }
    transitions.sort_by_key(|(seq, kind, i, _)| (*seq, *kind, *i));
    let transitions: Vec<Value> = transitions.into_iter().map(|(_, _, _, v)| v).collect();
    Ok(json!({
        "thread_id": thread_id,
        "delivery_status": delivery_status,
        "work_status": work_status,
        "transitions": transitions,
        "thread": thread,
        "packets": packets,
        "total": packets.len(),
    }))
}

#[derive(Deserialize)]
struct AckParams {
    message_id: Uuid,
    by: Option<String>,
}

/// The recipient of `message_id` (-32602 `unknown_packet` when the view has none).
fn recipient(views: &Views, message_id: &Uuid) -> Result<String, RpcError> {
    packet_state(views, message_id)?
        .map(|state| state.packet.to_agent)
        .ok_or_else(|| {
            RpcError::invalid_params("unknown_packet", format!("no packet `{message_id}`"))
                .with("field", "message_id")
        })
}

/// The packet's recipient acknowledges a packet; `by`, when given, must be that
/// recipient, and the caller's principal must act as it.
///
/// An external agent receives its packets over its subscription, not through the
/// Postman's inbox pull, so a packet it acknowledges may still be `queued`: the
/// recipient then takes delivery first ([`take_delivery`]), and the log records both
/// transitions of the CXP machine, queued -> delivered -> acknowledged.
pub async fn ack(call: Call) -> RpcResult {
    let p: AckParams = call.parse()?;
    let views = backends::views(&call)?;
    let to = recipient(&views, &p.message_id)?;
    let by = p.by.unwrap_or_else(|| to.clone());
    acting::act_as(&call, &to).await?;
    acting::act_as(&call, &by).await?;
    if by == to {
        take_delivery(&call, &views, &to, p.message_id).await?;
    }
    let outcome = backends::execute(&call, cmd::acknowledge(&by, p.message_id)).await?;
    views
        .settle(&views.threads, &outcome, Stream::CxpTraffic)
        .await?;
    let state = packet_json(&views, &p.message_id)?;
    tracing::debug!(
        message_id = %p.message_id,
        thread_id = %state["packet"]["thread_id"].as_str().unwrap_or_default(),
        by = %by,
        "packet acknowledged"
    );
    Ok(json!({
        "message_id": p.message_id,
        "status": state["delivery_status"],
        "sequence": outcome.last_sequence(Stream::CxpTraffic),
    }))
}

/// Delivers a still-`queued` packet to its recipient `to` (a `packet_delivered` by the
/// recipient). A packet the Postman delivered meanwhile is left as it is; any other
/// refusal is the caller's answer. A retried call with the same idempotency key
/// derives the same delivery command, so it is executed once.
async fn take_delivery(call: &Call, views: &Views, to: &str, id: Uuid) -> Result<(), RpcError> {
    let queued = packet_state(views, &id)?
        .is_some_and(|state| state.delivery_status == DeliveryStatus::Queued);
    if !queued {
        return Ok(());
    }
    let mut deliver = cmd::mark_delivered(to, id);
    if let Some(key) = IdempotencyKey::of(call)? {
        deliver.id = key.derive("take_delivery");
    }
    match backends::execute_as(call, deliver).await {
        Ok(outcome) => {
            views
                .settle(&views.threads, &outcome, Stream::CxpTraffic)
                .await
        }
        Err(e) if e.reason == "invalid_transition" => Ok(()),
        Err(e) => Err(e),
    }
}

#[derive(Deserialize)]
struct WorkParams {
    message_id: Uuid,
    status: WorkStatus,
    assigned_to: Option<String>,
    resolution: Option<Value>,
    notes: Option<String>,
}

/// Moves a packet's work status (with assignee, resolution and notes when given), as
/// the packet's recipient: the caller's principal must act as it.
pub async fn work(call: Call) -> RpcResult {
    let p: WorkParams = call.parse()?;
    let views = backends::views(&call)?;
    let issuer = recipient(&views, &p.message_id)?;
    acting::act_as(&call, &issuer).await?;
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
    views
        .settle(&views.threads, &outcome, Stream::CxpTraffic)
        .await?;
    let state = packet_json(&views, &p.message_id)?;
    tracing::debug!(
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
