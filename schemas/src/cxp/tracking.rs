//! Per-packet tracking state carried next to the headers: status histories, failure and
//! retry bookkeeping, assignment, resolution, notes and time in progress.
//!
//! Keeping it inside the packet lets the state machines (see `transitions`) live
//! in this pure crate: the kernel replays a packet's events through them to validate a
//! command before appending its event.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::alias::VolkAlias;
use super::status::{DeliveryStatus, WorkStatus};

/// Default number of delivery retries a failed packet may use.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// One recorded status transition: the status entered and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChange<S> {
    /// The status the packet moved into.
    pub status: S,
    /// The event time of the transition.
    pub at: DateTime<Utc>,
}

/// The outcome recorded when work is resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    /// What the work produced (free-form JSON: a summary, a link, a result object).
    pub result: serde_json::Value,
    /// When the work was resolved.
    pub at: DateTime<Utc>,
}

/// A comment on the work, attributed to a Volk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkNote {
    /// Who wrote it.
    pub author: VolkAlias,
    /// The note itself.
    pub text: String,
    /// When it was written.
    pub at: DateTime<Utc>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}
fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}
fn is_default_max(v: &u32) -> bool {
    *v == DEFAULT_MAX_RETRIES
}
fn default_max() -> u32 {
    DEFAULT_MAX_RETRIES
}

/// Tracking state of one packet. Serialized under `tracking`, omitted while it is the
/// default (a freshly created packet), so plain spec-004 packets stay byte-identical.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tracking {
    /// Every delivery-status transition, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delivery_history: Vec<StatusChange<DeliveryStatus>>,
    /// Every work-status transition, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub work_history: Vec<StatusChange<WorkStatus>>,
    /// Why the last delivery failed; present only while `delivery_status` is `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// How many times a failed delivery was re-queued.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_count: u32,
    /// Retry budget; a failed packet with `retry_count == max_retries` cannot be re-queued.
    #[serde(default = "default_max", skip_serializing_if = "is_default_max")]
    pub max_retries: u32,
    /// The Volk working on the packet (set on `in_progress`, kept after resolution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_to: Option<VolkAlias>,
    /// Result and time of resolution; present only once resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    /// Work notes, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<WorkNote>,
    /// Start of the current `in_progress` stint, if the work is in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress_since: Option<DateTime<Utc>>,
    /// Accumulated milliseconds spent in `in_progress` over finished stints.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub time_in_progress_ms: i64,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            delivery_history: Vec::new(),
            work_history: Vec::new(),
            failure_reason: None,
            retry_count: 0,
            max_retries: DEFAULT_MAX_RETRIES,
            assigned_to: None,
            resolution: None,
            notes: Vec::new(),
            in_progress_since: None,
            time_in_progress_ms: 0,
        }
    }
}

impl Tracking {
    /// True when nothing has been tracked yet (the state is omitted from the wire).
    pub fn is_default(&self) -> bool {
        *self == Tracking::default()
    }

    /// Bytes this tracking state holds on the heap (histories, strings, notes); the
    /// `result` JSON of a resolution is counted by its compact encoded length.
    pub fn heap_bytes(&self) -> usize {
        self.delivery_history.capacity() * std::mem::size_of::<StatusChange<DeliveryStatus>>()
            + self.work_history.capacity() * std::mem::size_of::<StatusChange<WorkStatus>>()
            + self.failure_reason.as_ref().map_or(0, |s| s.capacity())
            + self.notes.capacity() * std::mem::size_of::<WorkNote>()
            + self.notes.iter().map(|n| n.text.capacity()).sum::<usize>()
            + self
                .resolution
                .as_ref()
                .map_or(0, |r| r.result.to_string().len())
    }
}
