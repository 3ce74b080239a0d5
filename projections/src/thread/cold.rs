//! Threads and packets that leave memory once stored, and come back when an event
//! needs them (issue 18: memory that follows the work, not the history).
//!
//! After a commit the store confirmed ([`View::committed`](crate::View::committed)),
//! the view keeps in memory the `keep_hot` threads and the `keep_hot` packets touched
//! most recently and lets the others go; of each it remembers ~2 bytes in a Bloom
//! filter, and the store holds an index row (id -> sequence of its key) beside it
//! (`cold_ids.rs`). An event about one of them — a late acknowledgement, a reply into an old
//! thread, a thread closed after a month — names it in
//! [`cold_keys`](crate::View::cold_keys); the runner reads its index row, then the
//! entry, from the store and hands them back through [`warm`](crate::View::warm)
//! before applying the event. So the fold
//! stays pure and folds exactly what a view that keeps everything folds; readers find a
//! let-go entry with [`ThreadView::find_packet`] and [`ThreadView::find_thread`].
//!
//! The view keeps its changes marked until the store confirms them
//! ([`View::RETAKES_UNCOMMITTED`](crate::View::RETAKES_UNCOMMITTED)): a view that let
//! entries go cannot be written whole, so a commit that fails is taken again.

use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::{Envelope, Event, Stream};
use uuid::Uuid;

use super::rows;
use super::stored::{kind, packet_key, thread_key, Kind};
use super::ThreadView;
use crate::cold_ids::Place;
use crate::stored::{Saved, StoredEntry, StoredError, PRESSING_ENTRIES};

impl ThreadView {
    /// Forgets the changes the store now holds and lets go of all but the `keep_hot`
    /// most recently touched threads and packets.
    pub(super) fn let_go(&mut self, keep_hot: usize) {
        self.rows.stored();
        // A store without index rows (written before them) could not find an entry
        // let go of: the view stays whole until a commit has written the rows.
        let keep_hot = if self.rows.missing() {
            usize::MAX
        } else {
            keep_hot
        };
        self.kept = Saved(keep_hot);
        self.threads.stored();
        self.packets.stored();
        self.cold_packets.settle();
        self.cold_threads.settle();
        for p in self.packets.evict(keep_hot) {
            self.cold_packets.let_go(&p.packet.message_id);
        }
        for t in self.threads.evict(keep_hot) {
            self.cold_threads.let_go(t.thread_id.as_str());
        }
        if !self.unindexed && !self.nothing_let_go() {
            // Searches need every entry, which a view that lets go no longer has.
            self.unindexed = true;
            self.by_sequence = Vec::new();
            self.by_sender.clear();
            self.by_recipient.clear();
        }
    }

    /// Whether more than [`PRESSING_ENTRIES`] threads or packets beyond those the last
    /// commit kept wait in memory for a commit.
    pub(super) fn pressing(&self) -> bool {
        let bound = self.kept.0.saturating_add(PRESSING_ENTRIES);
        self.packets.len() > bound || self.threads.len() > bound
    }

    /// The store keys of the let-go entries `envelope` changes.
    pub(super) fn wanted(&self, envelope: &Envelope, keys: &mut Vec<Vec<u8>>) {
        if envelope.stream != Stream::CxpTraffic
            || self.nothing_let_go()
            || self
                .checkpoint
                .has_passed(Stream::CxpTraffic, envelope.sequence)
        {
            return;
        }
        let (thread, packet): (&str, Option<&Uuid>) = match &envelope.record.event {
            Event::ThreadOpened(e) => (&e.thread_id, None),
            // A packet logged twice counts once: the fold needs to know it.
            Event::PacketSent(e) => (&e.packet.thread_id, Some(&e.packet.message_id)),
            Event::PacketDelivered(e) => (&e.thread_id, Some(&e.message_id)),
            Event::PacketAcknowledged(e) => (&e.thread_id, Some(&e.message_id)),
            Event::PacketFailed(e) => (&e.thread_id, Some(&e.message_id)),
            Event::PacketRetried(e) => (&e.thread_id, Some(&e.message_id)),
            Event::PriorityChanged(e) => (&e.thread_id, Some(&e.message_id)),
            Event::WorkStatusChanged(e) => {
                if e.new == WorkStatus::Archived {
                    // Whether the thread resolves reads the work of all its packets.
                    if let Some(t) = self.threads.get(e.thread_id.as_str()) {
                        for id in &t.packets {
                            self.want_packet(id, keys);
                        }
                    }
                }
                (&e.thread_id, Some(&e.message_id))
            }
            Event::ThreadClosed(e) => (&e.thread_id, None),
            Event::ThreadReopened(e) => (&e.thread_id, None),
            Event::ThreadArchived(e) => (&e.thread_id, None),
            _ => return,
        };
        if !self.threads.contains(thread) {
            match self.cold_threads.place(thread) {
                Place::Nowhere => {}
                Place::Row(g) => keys.push(rows::thread_row_in(g, thread)),
                Place::Stored(at) => keys.push(thread_key(at)),
            }
        }
        if let Some(id) = packet {
            self.want_packet(id, keys);
        }
    }

    fn want_packet(&self, id: &Uuid, keys: &mut Vec<Vec<u8>>) {
        if self.packets.contains(id) {
            return;
        }
        match self.cold_packets.place(id) {
            Place::Nowhere => {}
            Place::Row(g) => keys.push(rows::packet_row_in(g, id)),
            Place::Stored(at) => keys.push(packet_key(at)),
        }
    }

    /// Takes entries read back from the store into memory, as stored (unchanged), and
    /// index rows (a key the store does not hold comes back with an empty value).
    pub(super) fn take_back(&mut self, entries: Vec<StoredEntry>) -> Result<(), StoredError> {
        for (key, value) in entries {
            let Some(table) = kind(&key) else {
                return Err(StoredError::entry(
                    "thread view",
                    format!("unknown key {key:?}"),
                ));
            };
            if value.is_empty() && !matches!(table, Kind::PacketRow | Kind::ThreadRow) {
                return Err(StoredError::entry(
                    "thread view",
                    format!("entry {key:?} the view let go of is not stored"),
                ));
            }
            match table {
                Kind::Thread => {
                    let thread = Self::decode_thread(&value)?;
                    self.cold_threads.taken_back(thread.thread_id.as_str());
                    self.threads.insert_unmarked(thread);
                }
                Kind::Packet => {
                    let packet = Self::decode_packet(&value)?;
                    self.cold_packets.taken_back(&packet.packet.message_id);
                    self.packets.insert_unmarked(packet);
                }
                Kind::PacketRow => {
                    let (g, id) = rows::packet_row_id(&key)?;
                    let at = rows::row_sequence(&key, &value)?;
                    self.cold_packets.found(id, g, at);
                }
                Kind::ThreadRow => {
                    let (g, id) = rows::thread_row_id(&key)?;
                    let at = rows::row_sequence(&key, &value)?;
                    self.cold_threads.found(id, g, at);
                }
            }
        }
        Ok(())
    }

    /// Whether every entry is in memory.
    pub(super) fn nothing_let_go(&self) -> bool {
        self.cold_packets.is_empty() && self.cold_threads.is_empty()
    }

    /// How many packets are in memory (the rest are only in the store).
    pub fn packets_in_memory(&self) -> usize {
        self.packets.len()
    }

    /// How many threads are in memory.
    pub fn threads_in_memory(&self) -> usize {
        self.threads.len()
    }
}

#[cfg(test)]
mod row_tests;
#[cfg(test)]
mod tests;
