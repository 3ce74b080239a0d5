//! Events of the `session.events` stream.
//!
//! Session lifecycle, context and facts (REQ-014-056..060).

use super::fields::Json;
use serde::{Deserialize, Serialize};

/// A work session started.
///
/// Stream `session.events`, event type `opened`, Avro `schemas/avro/session.events.SessionOpened.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionOpened {
    /// The session.
    pub session_id: String,
    /// The portfolio it works on.
    pub portfolio_id: String,
    /// What it should achieve.
    pub goals: Vec<String>,
    /// Who opened it.
    pub opened_by: String,
}

/// A session ended.
///
/// Stream `session.events`, event type `closed`, Avro `schemas/avro/session.events.SessionClosed.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionClosed {
    /// The session.
    pub session_id: String,
    /// What was done.
    pub summary: String,
    /// Tasks carried over to the next session.
    pub carryover: Vec<String>,
}

/// A session was resumed after an interruption.
///
/// Stream `session.events`, event type `recovered`, Avro `schemas/avro/session.events.SessionRecovered.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecovered {
    /// The session.
    pub session_id: String,
    /// Who resumed it.
    pub recovered_by: String,
    /// What interrupted it.
    pub reason: Option<String>,
}

/// Keys of a session's context were set (a JSON merge patch).
///
/// Stream `session.events`, event type `context_updated`, Avro `schemas/avro/session.events.SessionContextUpdated.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionContextUpdated {
    /// The session.
    pub session_id: String,
    /// JSON merge patch applied to the context.
    pub patch: Json,
    /// Who updated it.
    pub updated_by: String,
}

/// A fact was emitted in a session (REQ-014-060).
///
/// Stream `session.events`, event type `fact_asserted`, Avro `schemas/avro/session.events.SessionFactAsserted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionFactAsserted {
    /// The session.
    pub session_id: String,
    /// Kind of fact.
    pub fact_type: String,
    /// The fact.
    pub data: Json,
    /// Who asserted it.
    pub asserted_by: String,
}

/// An error happened in a session.
///
/// Stream `session.events`, event type `error_occurred`, Avro `schemas/avro/session.events.SessionErrorOccurred.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionErrorOccurred {
    /// The session.
    pub session_id: String,
    /// Stable error code.
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// Whether the session can go on.
    pub recoverable: bool,
}
