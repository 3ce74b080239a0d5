//! The thread view's stored form: a head (checkpoint, clock) and one entry per thread
//! (`t` + the sequence of the event that opened it) and per packet (`p` + the sequence
//! of its `packet_sent`), big-endian. Keys follow the log, so new entries land at the
//! end of the store's key space, where a commit rewrites a few B-tree pages rather than
//! one page per entry at a random place (message ids). The global, sender and recipient orders
//! are rebuilt from the packets on load.
//!
//! Beside each entry, written once in the commit that first stores it, an index row
//! (`rows.rs`). A store written before index rows existed (its head says so) is
//! restored whole and written whole, rows included, at the next commit.

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::fields::opt_ts;
use serde::{Deserialize, Serialize};

use super::fold::index;
use super::rows::{
    packet_row_id, packet_row_key, row_sequence, thread_row_id, thread_row_key, PACKET_ROW,
    THREAD_ROW,
};
use super::{PacketState, ThreadState, ThreadView};
use crate::cold_ids::Rows;
use crate::stored::{self, Changes, StoredEntry, StoredError};
use crate::{Checkpoint, Restorer};

const THREAD: u8 = b't';
const PACKET: u8 = b'p';

/// The store key of the thread opened at `sequence`.
pub(super) fn thread_key(sequence: u64) -> Vec<u8> {
    stored::key(THREAD, &sequence.to_be_bytes())
}

/// The store key of the packet sent at `sequence`.
pub(super) fn packet_key(sequence: u64) -> Vec<u8> {
    stored::key(PACKET, &sequence.to_be_bytes())
}

/// The sequence of the event that opened `thread`: its place in the store.
pub(super) fn opened(thread: &ThreadState) -> u64 {
    thread.status_history.first().map_or(0, |t| t.sequence)
}

/// Which table a stored key belongs to.
pub(super) enum Kind {
    Thread,
    Packet,
    ThreadRow,
    PacketRow,
}

/// The table of stored key `key`, if it is one of the view's.
pub(super) fn kind(key: &[u8]) -> Option<Kind> {
    match key.first() {
        Some(&THREAD) => Some(Kind::Thread),
        Some(&PACKET) => Some(Kind::Packet),
        Some(&THREAD_ROW) => Some(Kind::ThreadRow),
        Some(&PACKET_ROW) => Some(Kind::PacketRow),
        _ => None,
    }
}

#[derive(Serialize, Deserialize)]
struct Head {
    checkpoint: Checkpoint,
    #[serde(with = "opt_ts")]
    clock: Option<DateTime<Utc>>,
    /// Whether the store holds an index row for each entry (absent, so `false`, in a
    /// head written before index rows existed).
    #[serde(default)]
    rows: bool,
}

impl ThreadView {
    pub(super) fn changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        let head = stored::encode(
            "thread view head",
            &Head {
                checkpoint: self.checkpoint.clone(),
                clock: self.clock,
                rows: true,
            },
        )?;
        let whole = all || self.rows.missing();
        if whole && !self.nothing_let_go() {
            return Err(StoredError::Encode {
                what: "thread view".into(),
                reason: format!(
                    "{} packets and {} threads are only in the store: the view cannot be written whole",
                    self.cold_packets.len(),
                    self.cold_threads.len()
                ),
            });
        }
        let rows = &self.rows;
        let row = |at: u64| at.to_be_bytes().to_vec();
        // Entries created since the last confirmed commit (and their rows) go last,
        // as the store's fresh ones; entries it holds already go first. Written whole,
        // every entry is fresh: the store is emptied first.
        let mut entries = Vec::new();
        let mut fresh = Vec::new();
        for thread in self.threads.changed(whole) {
            let value = stored::encode("thread", thread)?;
            let at = opened(thread);
            if whole || rows.new_at(at) {
                let id = thread.thread_id.as_str();
                fresh.push((thread_key(at), Some(value)));
                fresh.push((thread_row_key(at, id), Some(row(at))));
                self.cold_threads.row_written(id, at);
            } else {
                entries.push((thread_key(at), Some(value)));
            }
        }
        for packet in self.packets.changed(whole) {
            let value = stored::encode("packet", packet)?;
            let at = packet.sequence;
            if whole || rows.new_at(at) {
                let id = &packet.packet.message_id;
                fresh.push((packet_key(at), Some(value)));
                fresh.push((packet_row_key(at, id), Some(row(at))));
                self.cold_packets.row_written(id, at);
            } else {
                entries.push((packet_key(at), Some(value)));
            }
        }
        self.rows.taking(self.checkpoint.clone());
        let new = fresh.len();
        entries.append(&mut fresh);
        let mut changes = Changes::tracked(head, entries);
        changes.full = whole && !all;
        changes.fresh = new;
        Ok(changes)
    }

    /// The key of the entry an index row names: `row_key` as `Held::Indexed`
    /// (super::Held) named it, `row` the value stored under it.
    pub fn indexed_key(row_key: &[u8], row: &[u8]) -> Result<Vec<u8>, StoredError> {
        let at = row_sequence(row_key, row)?.ok_or_else(|| {
            StoredError::entry("thread view", format!("index row {row_key:?} is empty"))
        })?;
        match kind(row_key) {
            Some(Kind::PacketRow) => Ok(packet_key(at)),
            Some(Kind::ThreadRow) => Ok(thread_key(at)),
            _ => Err(StoredError::entry(
                "thread view",
                format!("{row_key:?} is not an index row"),
            )),
        }
    }

    /// Decodes a stored packet entry (what [`Held::Stored`](super::Held) names).
    pub fn decode_packet(bytes: &[u8]) -> Result<PacketState, StoredError> {
        stored::decode("packet", bytes)
    }

    /// Decodes a stored thread entry (what [`Held::Stored`](super::Held) names).
    pub fn decode_thread(bytes: &[u8]) -> Result<ThreadState, StoredError> {
        stored::decode("thread", bytes)
    }

    pub(super) fn restore(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        crate::view::restore_all(Restore::new(head, usize::MAX)?, entries)
    }
}

/// The thread view's [`Restorer`]: entries decoded one at a time; past twice
/// `keep_hot` (or `keep_hot` + 1,024) threads or packets in memory, the oldest are let
/// go of as [`View::committed`](crate::View::committed) would.
pub(super) struct Restore {
    view: ThreadView,
    keep_hot: usize,
    /// The sequence of the last packet read (entries come in key order).
    last_packet: Option<u64>,
}

impl Restore {
    pub(super) fn new(head: &[u8], keep_hot: usize) -> Result<Self, StoredError> {
        let head: Head = stored::decode("thread view head", head)?;
        let rows = Rows::restored(head.checkpoint.clone(), head.rows);
        let mut view = ThreadView {
            checkpoint: head.checkpoint,
            rows,
            ..ThreadView::default()
        };
        // The stored clock, as folding set it (the let-go ids' included).
        if let Some(clock) = head.clock {
            view.tick(clock);
        }
        Ok(Restore {
            view,
            // Without index rows nothing could be found once let go: the view stays
            // whole until its next commit has written them.
            keep_hot: if head.rows { keep_hot } else { usize::MAX },
            last_packet: None,
        })
    }

    fn bound(&self) -> usize {
        self.keep_hot.saturating_add(self.keep_hot.max(1024))
    }
}

impl Restorer<ThreadView> for Restore {
    fn entry(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), StoredError> {
        let bound = self.bound();
        let view = &mut self.view;
        match kind(&key) {
            Some(Kind::Thread) => {
                view.threads
                    .insert_unmarked(ThreadView::decode_thread(&value)?);
            }
            Some(Kind::Packet) => {
                let packet = ThreadView::decode_packet(&value)?;
                let (sequence, id) = (packet.sequence, packet.packet.message_id);
                if self.last_packet.is_some_and(|s| s >= sequence) {
                    return Err(StoredError::entry(
                        "thread view",
                        format!("packet at sequence {sequence} read out of order"),
                    ));
                }
                self.last_packet = Some(sequence);
                if !view.unindexed {
                    index(&mut view.by_sender, &packet.packet.from_agent, sequence);
                    index(&mut view.by_recipient, &packet.packet.to_agent, sequence);
                    view.by_sequence.push((sequence, id));
                }
                view.packets.insert_unmarked(packet);
            }
            Some(Kind::PacketRow) => {
                let (_, id) = packet_row_id(&key)?;
                if let Some(at) = row_sequence(&key, &value)? {
                    view.cold_packets.row_written(&id, at);
                }
                return Ok(());
            }
            Some(Kind::ThreadRow) => {
                let (_, id) = thread_row_id(&key)?;
                if let Some(at) = row_sequence(&key, &value)? {
                    view.cold_threads.row_written(id.as_str(), at);
                }
                return Ok(());
            }
            None => {
                return Err(StoredError::entry(
                    "thread view",
                    format!("unknown key {key:?}"),
                ))
            }
        }
        if view.threads.len() > bound || view.packets.len() > bound {
            view.let_go(self.keep_hot);
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<ThreadView, StoredError> {
        let mut view = self.view;
        view.let_go(self.keep_hot);
        Ok(view)
    }
}

/// `head` as written before index rows existed (a test of the upgrade).
#[cfg(test)]
pub(super) fn head_without_rows(head: &[u8]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Earlier {
        checkpoint: Checkpoint,
        #[serde(with = "opt_ts")]
        clock: Option<DateTime<Utc>>,
    }
    let head: Head = stored::decode("thread view head", head).expect("a head");
    let earlier = Earlier {
        checkpoint: head.checkpoint,
        clock: head.clock,
    };
    stored::encode("thread view head", &earlier).expect("encodes")
}
