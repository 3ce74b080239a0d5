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

/// The epoch marker: the first record (offset 0) of every Kafka topic, written by the
/// process that found the topic empty. Its `epoch` names this incarnation of the topic
/// (a recreated topic gets a new one); the log reads it to tell a topic it knows from a
/// recreated one, and never hands it out as an event of the stream. Written to every
/// topic (not only `kernel.events`), so that every record of every topic decodes with
/// the published schemas. The sled backend has no marker record (its epoch lives in
/// the database's metadata).
///
/// Stream `kernel.events`, event type `epoch_marked`, Avro `schemas/avro/kernel.events.EpochMarked.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochMarked {
    /// The stream whose topic this marker opens, e.g. `cxp.traffic`.
    pub stream: String,
    /// The topic's epoch (a UUID).
    pub epoch: String,
}
