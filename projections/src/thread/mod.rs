//! [`ThreadView`]: every CXP packet and conversation thread, with status histories.
//!
//! Folds `cxp.traffic`. For each packet it keeps the packet as sent, its delivery and
//! work status with full transition histories, its priority, retries and failure
//! reason. For each thread it keeps the packets in send order, participants, message
//! count, creation time, subject, and status.
//!
//! ## Thread status (REQ-004-US-008-014, -018, -019, -020)
//!
//! - A thread is **active** from its first packet (or `thread_opened`).
//! - It becomes **resolved** (closed) on `thread_closed`, or when the work of *every*
//!   packet in it has been archived (`work_status_changed` to `archived`).
//! - It becomes **active** again on `thread_reopened`, or when a new packet is sent into
//!   a resolved thread.
//! - It becomes **archived** on `thread_archived`, or by the **age rule**: a thread
//!   with no event for more than [`ARCHIVE_AFTER_DAYS`] days is archived. Time is event
//!   time, never the wall clock: the view's clock is the latest event timestamp it has
//!   folded, and a thread whose `last_activity + 30 days < clock` reads as archived
//!   ([`ThreadView::thread_status`]); [`ThreadView::thread_status_at`] asks the same
//!   "as of" any instant. When a late event about such a thread arrives, the archive is
//!   recorded in its history first (at `last_activity + 30 days`, by `age_rule`).
//!   A packet sent into an archived thread is recorded but leaves it archived; only
//!   `thread_reopened` revives it.

mod cold;
mod fold;
mod query;
mod rows;
mod stored;
mod table;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::fields::{opt_ts, ts, Json};
use orchestrata_schemas::events::types::Packet;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::cold_ids::ColdIds;
use crate::{Checkpoint, Transition};
use table::{Keyed, Table};

pub use query::{LetGo, PacketQuery, ThreadQuery};

/// Days without any event after which a thread counts as archived.
pub const ARCHIVE_AFTER_DAYS: i64 = 30;

/// Who the age rule's archive transition is attributed to.
pub const AGE_RULE: &str = "age_rule";

/// The status of a conversation thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// Conversation ongoing.
    Active,
    /// Closed: work done (can be reopened).
    Resolved,
    /// Archived: explicitly, or after 30 days without activity.
    Archived,
}

/// One packet with everything that happened to it.
///
/// Its times are serialized like the log's (`ts`): RFC 3339 in JSON, microseconds in
/// binary formats such as the view store's MessagePack, which is cheaper to write and
/// read than formatting a date.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketState {
    /// The packet as sent (headers and payload).
    pub packet: Packet,
    /// Sequence of its `packet_sent` event: its position and pagination cursor.
    pub sequence: u64,
    /// Event time of `packet_sent`.
    #[serde(with = "ts")]
    pub sent_at: DateTime<Utc>,
    /// Current priority (0-10), after any escalation or demotion.
    pub priority: i32,
    /// Current delivery status.
    pub delivery_status: DeliveryStatus,
    /// Every delivery status it went through, first `queued`.
    pub delivery_history: Vec<Transition<DeliveryStatus>>,
    /// Current work status.
    pub work_status: WorkStatus,
    /// Every work status it went through, first `pending`.
    pub work_history: Vec<Transition<WorkStatus>>,
    /// Every priority it had, first the original one.
    pub priority_history: Vec<Transition<i32>>,
    /// The Volk working on it (last `assigned_to` given).
    pub assigned_to: Option<String>,
    /// The work's result (last `resolution` given).
    pub resolution: Option<Json>,
    /// Reason of the last delivery failure.
    pub failure_reason: Option<String>,
    /// Retries spent so far.
    pub retry_count: i32,
    /// Event time of its last change.
    #[serde(with = "ts")]
    pub updated_at: DateTime<Utc>,
}

/// One conversation thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadState {
    /// The thread id (a UUID for threads the kernel created).
    pub thread_id: String,
    /// Subject of its first packet.
    pub subject: String,
    /// Sender of its first packet.
    pub opened_by: String,
    /// Event time of its first event (REQ-004-US-008-011).
    #[serde(with = "ts")]
    pub created_at: DateTime<Utc>,
    /// Every sender and recipient seen in it (REQ-004-US-008-012).
    pub participants: BTreeSet<String>,
    /// Its packets' ids in send order (REQ-004-US-008-006).
    pub packets: Vec<Uuid>,
    /// Number of packets (REQ-004-US-008-013).
    pub message_count: u64,
    /// Status as recorded by events (see the module docs for the age rule, which
    /// [`ThreadView::thread_status`] also applies).
    pub status: ThreadStatus,
    /// Every status it went through, first `active`.
    pub status_history: Vec<Transition<ThreadStatus>>,
    /// Event time of the last event about it.
    #[serde(with = "ts")]
    pub last_activity: DateTime<Utc>,
}

/// The packets-and-threads view. See the module docs for the status rules and the
/// query methods (in `query.rs`) for what it answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadView {
    checkpoint: Checkpoint,
    /// Latest event time folded: the view's notion of "now".
    #[serde(with = "opt_ts")]
    clock: Option<DateTime<Utc>>,
    /// By thread id; serialized as a map sorted by id (see [`Table`]).
    threads: Table<ThreadState>,
    /// By message id; serialized as a map sorted by id.
    packets: Table<PacketState>,
    /// (send sequence, packet) in send order: the global packet order. The view folds
    /// one stream whose checkpoint admits only increasing sequences, so this and the
    /// sender/recipient lists below are appended to and stay sorted (binary search).
    by_sequence: Vec<(u64, Uuid)>,
    by_sender: BTreeMap<String, Vec<u64>>,
    by_recipient: BTreeMap<String, Vec<u64>>,
    /// Packets the view let go of once stored ([`View::committed`](crate::View)),
    /// found through their index rows in the store (`cold_ids.rs`). None in a view
    /// folded or restored whole; never serialized.
    #[serde(skip)]
    cold_packets: ColdIds<Uuid>,
    /// Threads the view let go of, likewise.
    #[serde(skip)]
    cold_threads: ColdIds<String>,
    /// Which entries the store holds index rows for (`rows.rs`).
    #[serde(skip)]
    rows: crate::cold_ids::Rows,
    /// Whether the view dropped its search orders (`by_sequence`, `by_sender`,
    /// `by_recipient`) when it first let entries go. Only a view holding every entry
    /// searches ([`ThreadView::whole`]); a live view answers single packets and threads,
    /// so it keeps no order of all packets (40 bytes a packet, following the history).
    #[serde(skip)]
    unindexed: bool,
    /// How many threads and packets the last commit let the view keep in memory
    /// (bookkeeping for [`View::needs_commit`](crate::View)).
    #[serde(skip)]
    kept: crate::stored::Saved,
}

/// Where an entry of the view is: in memory, or only in the view store under this key
/// (read it there and decode it with [`ThreadView::decode_packet`] or
/// [`ThreadView::decode_thread`]), or perhaps in the store, as its index row says.
#[derive(Debug, Clone, PartialEq)]
pub enum Held<'a, T> {
    /// In memory.
    Memory(&'a T),
    /// Let go of; stored under this key of the view.
    Stored(Vec<u8>),
    /// Perhaps let go of: read the index rows under these keys of the view, in this
    /// order, until one is stored; [`ThreadView::indexed_key`] turns it into the
    /// entry's key. None stored: the view does not hold the entry.
    Indexed(Vec<Vec<u8>>),
}

impl Keyed for ThreadState {
    type Key = str;
    fn key(&self) -> &str {
        &self.thread_id
    }
}

impl Keyed for PacketState {
    type Key = Uuid;
    fn key(&self) -> &Uuid {
        &self.packet.message_id
    }
}
