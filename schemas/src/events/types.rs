//! Named Avro types shared by several events (enums, the packet record).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::fields::Json;
use crate::cxp::{DeliveryStatus, JsonPayload, WorkStatus};

/// Health of a Volk or a provider.
///
/// Avro enum `orchestrata.types.Health`; symbol order = declaration order, never reorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// Working normally.
    Healthy,
    /// Working, but slow or partially failing.
    Degraded,
    /// Not able to do work.
    Unhealthy,
    /// No recent signal (e.g. missed heartbeats).
    Unknown,
}

/// How a task or workflow step ended.
///
/// Avro enum `orchestrata.types.TaskOutcome`; symbol order = declaration order, never reorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    /// Finished and produced its result.
    Succeeded,
    /// Finished without a result.
    Failed,
    /// Stopped before finishing.
    Cancelled,
}

/// Who asked governance for a decision.
///
/// Avro enum `orchestrata.types.SubjectKind`; symbol order = declaration order, never reorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectKind {
    /// A gateway client (dashboard, CLI, external agent).
    Client,
    /// A Volk.
    Volk,
}

/// What governance decided.
///
/// Avro enum `orchestrata.types.DecisionResult`; symbol order = declaration order, never reorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionResult {
    /// The action may proceed.
    Allow,
    /// The action is refused.
    Deny,
    /// A higher authority must decide.
    Escalate,
}

/// Why a gateway client went away (REQ-014-119).
///
/// Avro enum `orchestrata.types.DisconnectReason`; symbol order = declaration order, never reorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DisconnectReason {
    /// The client closed the connection.
    CleanClose,
    /// Heartbeats stopped.
    Timeout,
    /// A protocol or transport error.
    Error,
    /// The gateway is shutting down.
    ServerShutdown,
}

/// An opaque binary packet payload.
///
/// Avro record `orchestrata.cxp.BinaryPayload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinaryPayload {
    /// MIME type of `data`, e.g. `application/octet-stream`.
    pub content_type: String,
    /// The bytes themselves (base64 in JSON).
    #[serde(with = "crate::events::fields::bytes")]
    pub data: Vec<u8>,
}

/// A CXP packet as recorded in the log: every header plus the payload (spec 004).
///
/// Avro record `orchestrata.cxp.Packet`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Packet {
    /// Unique packet id.
    #[serde(with = "crate::events::fields::uuid")]
    pub message_id: Uuid,
    /// Sender Volk alias, e.g. `U:Ox`.
    pub from_agent: String,
    /// Recipient Volk alias.
    pub to_agent: String,
    /// Conversation the packet belongs to.
    pub thread_id: String,
    /// Subject line (at most 200 characters).
    pub subject: String,
    /// The content: JSON or binary.
    pub payload: PacketPayload,
    /// When the sender created the packet.
    #[serde(with = "crate::events::fields::ts")]
    pub created_at: DateTime<Utc>,
    /// 0 (lowest) to 10 (urgent); 5 is normal.
    pub priority: i32,
    /// Delivery status when recorded (normally `queued`).
    pub delivery_status: DeliveryStatus,
    /// Work status when recorded (normally `pending`).
    pub work_status: WorkStatus,
    /// CXP protocol version, semver (e.g. `1.0.0`).
    pub protocol_version: String,
    /// The packet this one answers, if any.
    #[serde(with = "crate::events::fields::opt_uuid")]
    pub in_reply_to: Option<Uuid>,
    /// Free-form metadata object (JSON text in Avro).
    pub metadata: Json,
}

/// A packet's content. In Avro a union `[string, BinaryPayload]` whose string branch holds JSON text.
///
/// The JSON branch is the CXP packet's own [`JsonPayload`]: decoding a record checks the
/// text's syntax and keeps it, without building a `Value` tree, and a packet moves between
/// the log and the kernel without re-encoding its payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacketPayload {
    /// A JSON object or array, as text (`PacketPayload::Json(json!({..}).into())`).
    Json(JsonPayload),
    /// Opaque bytes with their content type.
    Binary(BinaryPayload),
}
