//! Events of the `gateway.presence` stream.
//!
//! Gateway client presence (REQ-014-114..119).

use super::fields::Json;
use super::types::DisconnectReason;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A client connected and authenticated (REQ-014-113).
///
/// Stream `gateway.presence`, event type `connected`, Avro `schemas/avro/gateway.presence.ClientConnected.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientConnected {
    /// The connection's client id.
    pub client_id: String,
    /// Name the client gave.
    pub client_name: Option<String>,
    /// Version the client gave.
    pub client_version: Option<String>,
    /// Purpose the client gave.
    pub purpose: Option<String>,
    /// Granted scope: read_only, read_write or admin.
    pub auth_scope: String,
    /// Peer address.
    pub remote_addr: Option<String>,
}

/// A client went away (REQ-014-118, REQ-014-119).
///
/// Stream `gateway.presence`, event type `disconnected`, Avro `schemas/avro/gateway.presence.ClientDisconnected.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientDisconnected {
    /// The client.
    pub client_id: String,
    /// Why.
    pub reason: DisconnectReason,
    /// More about it.
    pub detail: Option<String>,
    /// How long it was connected.
    pub connected_ms: i64,
}

/// A client missed its heartbeats.
///
/// Stream `gateway.presence`, event type `timeout`, Avro `schemas/avro/gateway.presence.ClientTimedOut.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientTimedOut {
    /// The client.
    pub client_id: String,
    /// When it was last heard from.
    #[serde(with = "crate::events::fields::ts")]
    pub last_activity: DateTime<Utc>,
    /// Heartbeats missed.
    pub missed_heartbeats: i32,
}

/// A client changed its metadata.
///
/// Stream `gateway.presence`, event type `metadata_updated`, Avro `schemas/avro/gateway.presence.ClientMetadataUpdated.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientMetadataUpdated {
    /// The client.
    pub client_id: String,
    /// The new metadata object.
    pub metadata: Json,
}
