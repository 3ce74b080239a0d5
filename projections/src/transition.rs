//! [`Transition`]: one entry of a status history.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A status change as the log recorded it: the new status, when (event time), at which
/// sequence of the view's stream, by whom and why. Histories are `Vec<Transition<_>>`
/// in log order; the first entry is the initial status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transition<S> {
    /// The status entered.
    pub status: S,
    /// Event time of the change (microseconds in binary formats, like the log).
    #[serde(with = "orchestrata_schemas::events::fields::ts")]
    pub at: DateTime<Utc>,
    /// Sequence of the event that recorded it.
    pub sequence: u64,
    /// Who made the change, when the event says.
    pub by: Option<String>,
    /// Why, or other detail (failure reason, note, retry attempt...).
    pub note: Option<String>,
}
