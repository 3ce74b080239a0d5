//! Packet commands: send, delivery moves (deliver, acknowledge, fail, retry), work
//! status and priority. The CXP crate's state machines decide what may move.

use orchestrata_schemas::cxp::{DeliveryStatus, Priority, VolkAlias, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::{
    PacketAcknowledged, PacketDelivered, PacketFailed, PacketRetried, PacketSent, PriorityChanged,
    ThreadOpened, WorkStatusChanged,
};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, TaskOutcome};
use orchestrata_schemas::events::volk_lifecycle::{VolkTaskCompleted, VolkTaskStarted};
use orchestrata_schemas::events::{Event, EventRecord};
use uuid::Uuid;

use super::{non_empty, Ctx};
use crate::kernel::convert;
use crate::kernel::state::{PacketState, SessionStatus, ThreadStatus};
use crate::kernel::KernelError;

fn delivery_refused(p: &PacketState, to: DeliveryStatus) -> KernelError {
    KernelError::InvalidTransition {
        entity: format!("packet {}", p.packet.message_id()),
        field: "delivery_status",
        from: p.packet.delivery_status().to_string(),
        to: to.to_string(),
    }
}

fn check_delivery(p: &PacketState, to: DeliveryStatus) -> Result<(), KernelError> {
    if p.packet.delivery_status().can_transition_to(to) {
        Ok(())
    } else {
        Err(delivery_refused(p, to))
    }
}

/// A packet's target must be a known Volk (`unknown_target_volk`, spec 014 ERR-006).
/// Also checked before governance is asked ([`super::Precheck`]).
pub(crate) fn check_target(
    state: &crate::kernel::state::KernelState,
    to: &str,
) -> Result<(), KernelError> {
    if state.volk(to).is_none() {
        return Err(KernelError::UnknownTargetVolk {
            alias: to.to_owned(),
        });
    }
    Ok(())
}

/// `send_packet`: validates the packet, its addresses, its thread and its session.
///
/// Thread rules (US-008): a reply (`in_reply_to`) joins the thread of the packet it
/// answers; a packet with an empty `thread_id` starts a new conversation with a fresh
/// UUID; a named thread that exists must be active. Session rules (Articles I, III):
/// the session (metadata `session_id`) must be open, and a thread stays in its session
/// unless that session closed and carried the thread over (continuation, INTG-009).
pub(super) fn send(cx: &Ctx<'_>, packet: &Packet) -> Result<Vec<EventRecord>, KernelError> {
    if cx.state.has_packet(&packet.message_id) {
        return Err(KernelError::DuplicatePacket {
            message_id: packet.message_id,
        });
    }
    let mut packet = packet.clone();
    packet.created_at = crate::kernel::writer::log_time(packet.created_at);
    if let Some(parent) = packet.in_reply_to {
        let parent = cx.packet(parent)?;
        let inherited = parent.packet.thread_id();
        if !packet.thread_id.is_empty() && packet.thread_id != inherited {
            return Err(KernelError::ThreadMismatch {
                in_reply_to: parent.packet.message_id(),
                expected: inherited.to_owned(),
                found: packet.thread_id,
            });
        }
        packet.thread_id = inherited.to_owned();
    } else if packet.thread_id.is_empty() {
        packet.thread_id = cx.fresh_id().to_string();
    }
    let cxp = convert::to_cxp(&packet, cx.state.max_retries())?;
    if cxp.delivery_status() != DeliveryStatus::Queued {
        return Err(KernelError::invalid(
            "delivery_status",
            format!(
                "a sent packet starts `queued`, not `{}`",
                cxp.delivery_status()
            ),
        ));
    }
    if cxp.work_status() != WorkStatus::Pending {
        return Err(KernelError::invalid(
            "work_status",
            format!(
                "a sent packet starts `pending`, not `{}`",
                cxp.work_status()
            ),
        ));
    }
    if !cx
        .state
        .volk(&packet.from_agent)
        .is_some_and(|v| v.registered)
    {
        return Err(KernelError::UnknownSenderVolk {
            alias: packet.from_agent.clone(),
        });
    }
    check_target(cx.state, &packet.to_agent)?;
    let session = convert::session_of(&cxp);
    if let Some(s) = &session {
        let state = cx
            .state
            .session(s)
            .ok_or_else(|| KernelError::UnknownSession {
                session_id: s.clone(),
            })?;
        if state.status == SessionStatus::Closed {
            return Err(KernelError::SessionClosed {
                session_id: s.clone(),
            });
        }
    }
    let thread_id = packet.thread_id.clone();
    let mut records = Vec::with_capacity(2);
    match cx.state.thread(&thread_id) {
        Some(thread) => {
            if thread.status != ThreadStatus::Active {
                return Err(KernelError::ThreadNotActive {
                    thread_id,
                    status: thread.status.as_str(),
                });
            }
            if thread.session != session
                && !continues(
                    cx,
                    &thread_id,
                    thread.session.as_deref(),
                    session.as_deref(),
                )
            {
                return Err(KernelError::CrossSession {
                    thread_id,
                    owner: thread.session.clone().unwrap_or_else(|| "none".into()),
                    asked: session.unwrap_or_else(|| "none".into()),
                });
            }
        }
        None => records.push(cx.record(
            &thread_id,
            ThreadOpened {
                thread_id: thread_id.clone(),
                subject: packet.subject.clone(),
                opened_by: packet.from_agent.clone(),
                participants: vec![packet.from_agent.clone(), packet.to_agent.clone()],
            },
        )),
    }
    records.push(cx.record(&thread_id, PacketSent { packet }));
    Ok(records)
}

/// INTG-009: a thread of a closed session that carried it over continues in `to`.
fn continues(cx: &Ctx<'_>, thread_id: &str, from: Option<&str>, to: Option<&str>) -> bool {
    let (Some(from), Some(_)) = (from, to) else {
        return false;
    };
    cx.state.session(from).is_some_and(|s| {
        s.status == SessionStatus::Closed
            && s.carryover
                .iter()
                .any(|c| c == &format!("thread:{thread_id}"))
    })
}

/// `mark_delivered`: queued -> delivered.
pub(super) fn mark_delivered(cx: &Ctx<'_>, id: Uuid) -> Result<Vec<EventRecord>, KernelError> {
    let p = cx.packet(id)?;
    let p = &*p;
    check_delivery(p, DeliveryStatus::Delivered)?;
    Ok(vec![delivered(cx, p)])
}

/// The `packet_delivered` record for `p` (shared with the Postman's inbox pull).
pub(crate) fn delivered(cx: &Ctx<'_>, p: &PacketState) -> EventRecord {
    let event = PacketDelivered {
        message_id: p.packet.message_id(),
        thread_id: p.packet.thread_id().to_owned(),
        to_agent: p.packet.to_agent().to_string(),
    };
    cx.record_at(p.packet.thread_id(), event, cx.at_for(p))
}

/// `acknowledge`: delivered -> acknowledged, by the recipient only (INTG-017).
pub(super) fn acknowledge(
    cx: &Ctx<'_>,
    id: Uuid,
    by: &str,
) -> Result<Vec<EventRecord>, KernelError> {
    let p = cx.packet(id)?;
    let p = &*p;
    if p.packet.to_agent().as_str() != by {
        return Err(KernelError::NotRecipient {
            message_id: id,
            by: by.to_owned(),
            recipient: p.packet.to_agent().to_string(),
        });
    }
    check_delivery(p, DeliveryStatus::Acknowledged)?;
    let event = PacketAcknowledged {
        message_id: id,
        thread_id: p.packet.thread_id().to_owned(),
        acknowledged_by: by.to_owned(),
    };
    Ok(vec![cx.record_at(
        p.packet.thread_id(),
        event,
        cx.at_for(p),
    )])
}

/// `fail`: queued|delivered -> failed with a reason; the Postman retries within budget.
pub(super) fn fail(cx: &Ctx<'_>, id: Uuid, reason: &str) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("reason", reason)?;
    let p = cx.packet(id)?;
    let p = &*p;
    check_delivery(p, DeliveryStatus::Failed)?;
    Ok(vec![failed(cx, p, reason)])
}

/// The `packet_failed` record for `p` (shared with the Postman).
pub(crate) fn failed(cx: &Ctx<'_>, p: &PacketState, reason: &str) -> EventRecord {
    failed_with(cx, p, reason, true)
}

/// The `packet_failed` record for `p`, which the Postman will retry on its timer only if
/// `retry` and the packet has retries left. A full inbox passes `retry: false`: timed
/// retries into a mailbox nobody drains fail again, each failure costing two more
/// events and a `delivery_failed` notice at the end (see docs/kernel.md, "The Postman").
pub(crate) fn failed_with(cx: &Ctx<'_>, p: &PacketState, reason: &str, retry: bool) -> EventRecord {
    let used = p.packet.retry_count();
    let event = PacketFailed {
        message_id: p.packet.message_id(),
        thread_id: p.packet.thread_id().to_owned(),
        reason: reason.to_owned(),
        retry_count: i32::try_from(used).unwrap_or(i32::MAX),
        will_retry: retry && used < p.packet.max_retries(),
    };
    cx.record_at(p.packet.thread_id(), event, cx.at_for(p))
}

/// `retry`: failed -> queued, within the retry budget.
pub(super) fn retry(cx: &Ctx<'_>, id: Uuid) -> Result<Vec<EventRecord>, KernelError> {
    let p = cx.packet(id)?;
    let p = &*p;
    check_delivery(p, DeliveryStatus::Queued)?;
    if p.packet.retry_count() >= p.packet.max_retries() {
        return Err(KernelError::RetryLimitReached {
            message_id: id,
            max: p.packet.max_retries(),
        });
    }
    Ok(vec![retried(cx, p)])
}

/// The `packet_retried` record for `p` (shared with the Postman's timers).
pub(crate) fn retried(cx: &Ctx<'_>, p: &PacketState) -> EventRecord {
    let event = PacketRetried {
        message_id: p.packet.message_id(),
        thread_id: p.packet.thread_id().to_owned(),
        attempt: i32::try_from(p.packet.retry_count() + 1).unwrap_or(i32::MAX),
    };
    cx.record_at(p.packet.thread_id(), event, cx.at_for(p))
}

/// `set_work_status`: along the work state machine; `assigned_to` only for
/// `in_progress` (a registered Volk), `resolution` only for `resolved`.
pub(super) fn set_work_status(
    cx: &Ctx<'_>,
    id: Uuid,
    status: WorkStatus,
    assigned_to: Option<&str>,
    resolution: Option<Json>,
    notes: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    let p = cx.packet(id)?;
    let p = &*p;
    let old = p.packet.work_status();
    if !old.can_transition_to(status) {
        return Err(KernelError::InvalidTransition {
            entity: format!("packet {id}"),
            field: "work_status",
            from: old.to_string(),
            to: status.to_string(),
        });
    }
    if let Some(who) = assigned_to {
        if status != WorkStatus::InProgress {
            return Err(KernelError::invalid(
                "assigned_to",
                "only for `in_progress`",
            ));
        }
        VolkAlias::parse_field(who, "assigned_to")?;
        if !cx.state.volk(who).is_some_and(|v| v.registered) {
            return Err(KernelError::UnknownVolk {
                field: "assigned_to",
                alias: who.to_owned(),
            });
        }
    }
    if resolution.is_some() && status != WorkStatus::Resolved {
        return Err(KernelError::invalid("resolution", "only for `resolved`"));
    }
    if notes.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return Err(KernelError::invalid(
            "notes",
            "must not be empty when given",
        ));
    }
    let at = cx.at_for(p);
    let assignee = assigned_to
        .map(str::to_owned)
        .or_else(|| (status == WorkStatus::InProgress).then(|| p.packet.to_agent().to_string()));
    let task = task_event(p, old, status, assignee.as_deref(), notes.as_deref(), at);
    let event = WorkStatusChanged {
        message_id: id,
        thread_id: p.packet.thread_id().to_owned(),
        old,
        new: status,
        changed_by: cx.issuer.to_owned(),
        assigned_to: assignee,
        resolution,
        notes,
    };
    let mut records = vec![cx.record_at(p.packet.thread_id(), event, at)];
    if let Some((alias, task)) = task {
        records.push(cx.record_at(&alias, task, at));
    }
    Ok(records)
}

/// The Volk's side of a work move (spec 014 REQ-014-017, 022): `in_progress` starts a
/// task of its assignee (the task id is the message id, its description the subject);
/// leaving `in_progress` completes it — `succeeded` when resolved, `cancelled` when put
/// back to `pending` — with the time spent in progress. Keyed by the Volk's alias.
fn task_event(
    p: &PacketState,
    old: WorkStatus,
    new: WorkStatus,
    assignee: Option<&str>,
    notes: Option<&str>,
    at: chrono::DateTime<chrono::Utc>,
) -> Option<(String, Event)> {
    let packet = &p.packet;
    let task_id = packet.message_id().to_string();
    if new == WorkStatus::InProgress {
        let alias = assignee.map_or_else(|| packet.to_agent().to_string(), str::to_owned);
        let started = VolkTaskStarted {
            alias: alias.clone(),
            task_id,
            thread_id: Some(packet.thread_id().to_owned()),
            description: packet.subject().to_owned(),
        };
        return Some((alias, started.into()));
    }
    if old != WorkStatus::InProgress {
        return None;
    }
    let alias = packet
        .assigned_to()
        .unwrap_or(packet.to_agent())
        .to_string();
    let outcome = match new {
        WorkStatus::Resolved => TaskOutcome::Succeeded,
        _ => TaskOutcome::Cancelled,
    };
    let completed = VolkTaskCompleted {
        alias: alias.clone(),
        task_id,
        outcome,
        summary: notes.map(str::to_owned),
        duration_ms: packet.time_in_progress(at).num_milliseconds(),
    };
    Some((alias, completed.into()))
}

/// `set_priority`: 0..=10 (US-009); a queued packet moves in its recipient's queue.
pub(super) fn set_priority(
    cx: &Ctx<'_>,
    id: Uuid,
    priority: i32,
    reason: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    let p = cx.packet(id)?;
    let p = &*p;
    let new = Priority::new(i64::from(priority))?;
    let event = PriorityChanged {
        message_id: id,
        thread_id: p.packet.thread_id().to_owned(),
        old: i32::from(p.packet.priority().value()),
        new: i32::from(new.value()),
        changed_by: cx.issuer.to_owned(),
        reason,
    };
    Ok(vec![cx.record_at(
        p.packet.thread_id(),
        event,
        cx.at_for(p),
    )])
}
