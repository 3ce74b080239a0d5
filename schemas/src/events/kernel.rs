//! Events of the `kernel.events` stream.
//!
//! Kernel lifecycle and the outcome of commands handed to it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The kernel started and owns the log's streams.
///
/// Stream `kernel.events`, event type `started`, Avro `schemas/avro/kernel.events.KernelStarted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelStarted {
    /// Which process (host name or configured id).
    pub node: String,
    /// Orchestrata version.
    pub version: String,
    /// Log backend: `sled` or `kafka`.
    pub backend: String,
}

/// The kernel stopped.
///
/// Stream `kernel.events`, event type `stopped`, Avro `schemas/avro/kernel.events.KernelStopped.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelStopped {
    /// Which process.
    pub node: String,
    /// Why.
    pub reason: String,
    /// False after a crash was detected.
    pub clean: bool,
}

/// A command was applied; its events carry the same `command_id` in the envelope.
///
/// Stream `kernel.events`, event type `command_applied`, Avro `schemas/avro/kernel.events.CommandApplied.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandApplied {
    /// The command.
    #[serde(with = "crate::events::fields::uuid")]
    pub command_id: Uuid,
    /// How many events it produced.
    pub event_count: i32,
}

/// A command was refused (validation or governance).
///
/// Stream `kernel.events`, event type `command_rejected`, Avro `schemas/avro/kernel.events.CommandRejected.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRejected {
    /// The command.
    #[serde(with = "crate::events::fields::uuid")]
    pub command_id: Uuid,
    /// Stable error code, e.g. `invalid_transition`.
    pub code: String,
    /// Human-readable reason.
    pub message: String,
}
