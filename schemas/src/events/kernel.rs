//! Events of the `kernel.events` stream.
//!
//! Kernel lifecycle and the outcome of commands handed to it.

use serde::{Deserialize, Serialize};

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

/// A command was applied. Its id is the envelope `command_id`, as on every event it caused.
///
/// Stream `kernel.events`, event type `command_applied`, Avro `schemas/avro/kernel.events.CommandApplied.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandApplied {
    /// How many events it produced.
    pub event_count: i32,
}

/// A command was refused (validation or governance). Its id is the envelope `command_id`.
///
/// Stream `kernel.events`, event type `command_rejected`, Avro `schemas/avro/kernel.events.CommandRejected.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRejected {
    /// Stable error code, e.g. `invalid_transition`.
    pub code: String,
    /// Human-readable reason.
    pub message: String,
}
