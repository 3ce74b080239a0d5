//! Events of the `cxp.traffic` stream.
//!
//! CXP packets, their delivery and work status transitions, and thread lifecycle (spec 004).
//!
//! The envelope timestamp of each event is the time of the transition it records
//! (REQ-004-US-004-012): history is the sequence of these events.

use super::fields::Json;
use super::types::Packet;
use crate::cxp::WorkStatus;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A packet was accepted and queued for delivery (delivery status `queued`).
///
/// Stream `cxp.traffic`, event type `packet_sent`, Avro `schemas/avro/cxp.traffic.PacketSent.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketSent {
    /// The whole packet, headers and payload.
    pub packet: Packet,
}

/// A packet was handed to its recipient (`queued -> delivered`).
///
/// Stream `cxp.traffic`, event type `packet_delivered`, Avro `schemas/avro/cxp.traffic.PacketDelivered.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketDelivered {
    /// The packet.
    #[serde(with = "crate::events::fields::uuid")]
    pub message_id: Uuid,
    /// Its thread.
    pub thread_id: String,
    /// The recipient it reached.
    pub to_agent: String,
}

/// The recipient confirmed receipt (`delivered -> acknowledged`).
///
/// Stream `cxp.traffic`, event type `packet_acknowledged`, Avro `schemas/avro/cxp.traffic.PacketAcknowledged.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketAcknowledged {
    /// The packet.
    #[serde(with = "crate::events::fields::uuid")]
    pub message_id: Uuid,
    /// Its thread.
    pub thread_id: String,
    /// The Volk that acknowledged.
    pub acknowledged_by: String,
}

/// Delivery failed (`queued|delivered -> failed`).
///
/// Stream `cxp.traffic`, event type `packet_failed`, Avro `schemas/avro/cxp.traffic.PacketFailed.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketFailed {
    /// The packet.
    #[serde(with = "crate::events::fields::uuid")]
    pub message_id: Uuid,
    /// Its thread.
    pub thread_id: String,
    /// Why delivery failed.
    pub reason: String,
    /// Retries already spent on this packet.
    pub retry_count: i32,
    /// Whether the Postman will retry within the budget.
    pub will_retry: bool,
}

/// A failed packet was queued again (`failed -> queued`).
///
/// Stream `cxp.traffic`, event type `packet_retried`, Avro `schemas/avro/cxp.traffic.PacketRetried.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketRetried {
    /// The packet.
    #[serde(with = "crate::events::fields::uuid")]
    pub message_id: Uuid,
    /// Its thread.
    pub thread_id: String,
    /// This retry's number, starting at 1.
    pub attempt: i32,
}

/// The work a packet carries moved to another status.
///
/// Stream `cxp.traffic`, event type `work_status_changed`, Avro `schemas/avro/cxp.traffic.WorkStatusChanged.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkStatusChanged {
    /// The packet.
    #[serde(with = "crate::events::fields::uuid")]
    pub message_id: Uuid,
    /// Its thread.
    pub thread_id: String,
    /// Status before.
    pub old: WorkStatus,
    /// Status after.
    pub new: WorkStatus,
    /// Who made the change (Volk alias or client id).
    pub changed_by: String,
    /// The Volk now working on it (for `in_progress`).
    pub assigned_to: Option<String>,
    /// The result (for `resolved`), JSON text in Avro.
    pub resolution: Option<Json>,
    /// A note explaining the change.
    pub notes: Option<String>,
}

/// A packet's priority was raised (escalation) or lowered (demotion).
///
/// Stream `cxp.traffic`, event type `priority_changed`, Avro `schemas/avro/cxp.traffic.PriorityChanged.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorityChanged {
    /// The packet.
    #[serde(with = "crate::events::fields::uuid")]
    pub message_id: Uuid,
    /// Its thread.
    pub thread_id: String,
    /// Priority before (0-10).
    pub old: i32,
    /// Priority after (0-10).
    pub new: i32,
    /// Who changed it.
    pub changed_by: String,
    /// Why.
    pub reason: Option<String>,
}

/// A conversation started with its first packet.
///
/// Stream `cxp.traffic`, event type `thread_opened`, Avro `schemas/avro/cxp.traffic.ThreadOpened.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadOpened {
    /// The thread.
    pub thread_id: String,
    /// Subject of the first packet.
    pub subject: String,
    /// Sender of the first packet.
    pub opened_by: String,
    /// Volks in the thread so far.
    pub participants: Vec<String>,
}

/// A thread was closed (its work is done).
///
/// Stream `cxp.traffic`, event type `thread_closed`, Avro `schemas/avro/cxp.traffic.ThreadClosed.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadClosed {
    /// The thread.
    pub thread_id: String,
    /// Who closed it.
    pub closed_by: String,
    /// Why.
    pub reason: Option<String>,
}

/// A closed thread was reopened.
///
/// Stream `cxp.traffic`, event type `thread_reopened`, Avro `schemas/avro/cxp.traffic.ThreadReopened.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadReopened {
    /// The thread.
    pub thread_id: String,
    /// Who reopened it.
    pub reopened_by: String,
    /// Why.
    pub reason: Option<String>,
}

/// A thread was archived (terminal; e.g. after 30 days).
///
/// Stream `cxp.traffic`, event type `thread_archived`, Avro `schemas/avro/cxp.traffic.ThreadArchived.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadArchived {
    /// The thread.
    pub thread_id: String,
    /// Who archived it (`kernel` for the age rule).
    pub archived_by: String,
    /// Why.
    pub reason: Option<String>,
}
