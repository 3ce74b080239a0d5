//! [`id_at`]: the ids Orchestrata makes up for packets, threads and commands.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// A fresh UUID v7 at `at` (random below the millisecond). Generated ids are in time
/// order: the server keys tables by them (the kernel's spill tables, the views' index
/// rows), where ids in order fill pages at the right edge instead of landing on a
/// random page each. A time before 1970 counts as 1970.
pub fn id_at(at: DateTime<Utc>) -> Uuid {
    let secs = u64::try_from(at.timestamp()).unwrap_or(0);
    let stamp = uuid::Timestamp::from_unix(uuid::NoContext, secs, at.timestamp_subsec_nanos());
    Uuid::new_v7(stamp)
}
