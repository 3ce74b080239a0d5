//! [`PacketIndex`]: who and what each packet concerns, by message id — what
//! subscription and replay filters need to match a packet's later transitions.
//!
//! Only `packet_sent` carries the whole packet; `packet_delivered`,
//! `packet_acknowledged`, `packet_failed`, `packet_retried`, `work_status_changed` and
//! `priority_changed` carry its message id alone. A `volk_id` or `subject` filter must
//! still match them, so the gateway looks the packet up here. The index folds
//! `cxp.traffic` once per event, like every view, and covers the **whole** log: a
//! filter's answer never depends on which events some cache happened to hold
//! ([`facts_of`] is a pure function of the log).
//!
//! Compact by construction: per packet its message id, the sequence of its first
//! `packet_sent`, two indices into a table of the Volk names seen, and its subject.
//!
//! **Memory follows the work, not the history.** A packet's parties never change once
//! sent, so once a commit has put a packet in the view store, the runner may let it go
//! ([`View::committed`]); the newest `keep_hot` stay whole, and of the others only the
//! message id and the sequence of the `packet_sent` (its store key) stay, in 24 bytes
//! (`packet/cold.rs`). A reader asks [`PacketIndex::lookup`] and reads a let-go packet from the
//! store ([`PacketIndex::decode_stored`]); the fold needs nothing back from the store:
//! a repeated send of a let-go packet is known by its id and changes nothing.
//!
//! ```
//! use orchestrata_projections::{packet::facts_of, PacketIndex, View};
//! # use orchestrata_schemas::events::Envelope;
//! # fn demo(log: &[Envelope]) {
//! let mut index = PacketIndex::default();
//! for envelope in log {
//!     index.apply(envelope);
//! }
//! // Every event's filterable facts, complete for packet transitions too.
//! let facts: Vec<_> = log.iter().map(|e| facts_of(e, &index)).collect();
//! # let _ = facts; }
//! ```

#[cfg(test)]
mod cold_tests;
mod facts;
mod stored;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use orchestrata_schemas::events::{Envelope, Event, Stream};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

pub use facts::{facts_of, facts_with, transition_of, Facts};

use crate::cold_ids::{ColdIds, Place, Rows};
use crate::stored::{Saved, StoredEntry};
use crate::{Changes, Checkpoint, StoredError, View, ViewName};

/// One packet as the index keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    /// Sequence of its first `packet_sent` on `cxp.traffic`.
    sequence: u64,
    /// Sender: position in [`PacketIndex::volks`].
    from: u32,
    /// Recipient: position in [`PacketIndex::volks`].
    to: u32,
    /// Subject line.
    subject: Box<str>,
}

/// Who a packet concerns, as its first `packet_sent` recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parties<'a> {
    /// Sequence of that `packet_sent` on `cxp.traffic`.
    pub sequence: u64,
    /// Sender alias.
    pub from: &'a str,
    /// Recipient alias.
    pub to: &'a str,
    /// Subject line.
    pub subject: &'a str,
}

/// A packet's parties as stored, owned: what [`PacketIndex::decode_stored`] reads
/// for a packet the index let go of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredParties {
    /// Sequence of its first `packet_sent` on `cxp.traffic`.
    pub sequence: u64,
    /// Sender alias.
    pub from: String,
    /// Recipient alias.
    pub to: String,
    /// Subject line.
    pub subject: String,
}

impl StoredParties {
    /// Borrowed, as [`PacketIndex::lookup`] answers for a packet in memory.
    pub fn as_parties(&self) -> Parties<'_> {
        Parties {
            sequence: self.sequence,
            from: &self.from,
            to: &self.to,
            subject: &self.subject,
        }
    }
}

impl From<Parties<'_>> for StoredParties {
    fn from(p: Parties<'_>) -> Self {
        StoredParties {
            sequence: p.sequence,
            from: p.from.to_owned(),
            to: p.to.to_owned(),
            subject: p.subject.to_owned(),
        }
    }
}

/// Where [`PacketIndex::lookup`] finds a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// In memory.
    Memory(Parties<'a>),
    /// Let go: read this key from the view store.
    Store(Vec<u8>),
    /// Perhaps let go: read these index rows from the view store, in order, until one
    /// is stored; [`PacketIndex::indexed_key`] turns it into the packet's key. None
    /// stored: the folded log did not send it.
    Indexed(Vec<Vec<u8>>),
    /// The folded log did not send it.
    Unknown,
}

/// Every packet of the log by message id: sender, recipient and subject of its first
/// `packet_sent` (a repeated `packet_sent` of the same id changes nothing, so what a
/// packet concerns is fixed once the log has sent it).
#[derive(Debug, Clone, Default)]
pub struct PacketIndex {
    checkpoint: Checkpoint,
    /// Volk names, each once, in order of first appearance.
    volks: Vec<Box<str>>,
    /// Positions in `volks` by name (rebuilt on load, never serialized).
    by_name: HashMap<Box<str>, u32>,
    /// The packets held whole: every one, unless some were let go.
    packets: BTreeMap<Uuid, Entry>,
    /// The packets held whole, oldest first (in the order they came): the order in
    /// which they are let go.
    order: VecDeque<Uuid>,
    /// The packets let go, found through their index rows in the store
    /// (`cold_ids.rs`).
    cold: ColdIds<Uuid>,
    /// Whether the store has index rows (commit bookkeeping; `cold_ids.rs`).
    rows: Rows,
    /// Volk names the store has (commit bookkeeping, not part of the value).
    saved_volks: Saved,
    /// Packets added since the last commit the store confirmed, oldest first (commit
    /// bookkeeping).
    fresh: Vec<Uuid>,
    /// What the commit in progress took: Volk names, packets of `fresh`.
    taken: (usize, usize),
}

impl PartialEq for PacketIndex {
    fn eq(&self, other: &Self) -> bool {
        // `by_name` is derived from `volks`.
        self.checkpoint == other.checkpoint
            && self.volks == other.volks
            && self.packets == other.packets
            && self.cold == other.cold
    }
}

impl PacketIndex {
    /// Number of packets indexed.
    pub fn len(&self) -> usize {
        self.packets.len() + self.cold.len()
    }

    /// Whether no packet is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of packets held whole in memory (the others were let go: their parties
    /// are read from the store).
    pub fn in_memory(&self) -> usize {
        self.packets.len()
    }

    /// Where the parties of packet `message_id` are: in memory, in the store (let go),
    /// or nowhere (the folded log did not send it).
    pub fn lookup(&self, message_id: &Uuid) -> Lookup<'_> {
        match self.parties(message_id) {
            Some(p) => Lookup::Memory(p),
            None => match self.cold.place(message_id) {
                Place::Nowhere => Lookup::Unknown,
                Place::Stored(sequence) => Lookup::Store(Self::stored_key(sequence)),
                Place::Row(_) => Lookup::Indexed(
                    self.cold
                        .row_keys(message_id, |g| stored::row_key(g, message_id)),
                ),
            },
        }
    }

    /// The parties of packet `message_id` if it is held whole (for an index that
    /// keeps every packet: if the folded log sent it).
    pub fn parties(&self, message_id: &Uuid) -> Option<Parties<'_>> {
        let e = self.packets.get(message_id)?;
        Some(Parties {
            sequence: e.sequence,
            from: self.volk(e.from),
            to: self.volk(e.to),
            subject: &e.subject,
        })
    }

    /// The parties of packet `message_id` as known to an event at `sequence` of
    /// `cxp.traffic`: only a `packet_sent` *before* that event counts.
    pub fn parties_before(&self, message_id: &Uuid, sequence: u64) -> Option<Parties<'_>> {
        self.parties(message_id).filter(|p| p.sequence < sequence)
    }

    /// Whether the facts of `envelope` are final: equal to what the index folded over
    /// the whole log would answer ([`facts_of`] for a packet in memory; the stored
    /// entry [`lookup`](PacketIndex::lookup) names otherwise). True for every event
    /// that needs no look-up, for a transition whose packet is in memory, and for any
    /// event at or below the index's checkpoint. When it is false, wait until the
    /// index has folded
    /// `envelope.sequence` of `cxp.traffic` (the runner's read-your-write wait).
    pub fn settles(&self, envelope: &Envelope) -> bool {
        match facts::transition_of(&envelope.record.event) {
            None => true,
            Some(id) => {
                self.checkpoint
                    .has_passed(Stream::CxpTraffic, envelope.sequence)
                    || self.parties_before(id, envelope.sequence).is_some()
            }
        }
    }

    /// Lets go of the oldest stored packets beyond the newest `keep_hot`.
    fn evict(&mut self, keep_hot: usize) {
        let unsaved: HashSet<Uuid> = self.fresh.iter().copied().collect();
        let mut turns = self.order.len();
        while self.packets.len() > keep_hot && turns > 0 {
            turns -= 1;
            let Some(id) = self.order.pop_front() else {
                break;
            };
            if unsaved.contains(&id) {
                self.order.push_back(id);
            } else if self.packets.remove(&id).is_some() {
                self.cold.let_go(&id);
            }
        }
    }

    /// Adds a packet to memory (newest).
    fn hold(&mut self, id: Uuid, entry: Entry) {
        self.packets.insert(id, entry);
        self.order.push_back(id);
    }

    fn volk(&self, at: u32) -> &str {
        self.volks.get(at as usize).map_or("", |v| v)
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(at) = self.by_name.get(name) {
            return *at;
        }
        let at = u32::try_from(self.volks.len()).unwrap_or(u32::MAX);
        self.volks.push(name.into());
        self.by_name.insert(name.into(), at);
        at
    }
}

impl View for PacketIndex {
    const NAME: ViewName = ViewName::Packet;
    const STREAMS: &'static [Stream] = &[Stream::CxpTraffic];

    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    fn take_changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        self.changes(all)
    }

    fn from_stored(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        Self::restore(head, entries)
    }

    fn restorer(
        head: &[u8],
        keep_hot: usize,
    ) -> Result<Box<dyn crate::Restorer<Self>>, StoredError> {
        Ok(Box::new(stored::Restore::new(head, keep_hot)?))
    }

    fn needs_commit(&self) -> bool {
        self.fresh.len() > crate::stored::PRESSING_ENTRIES
    }

    const RETAKES_UNCOMMITTED: bool = true;

    // Entries never change once written, and a commit forgets (and lets go of) only
    // the Volk names and packets it took: the gateway's topic filters wait for this
    // view, not for its commits.
    const FOLDS_WHILE_STORING: bool = true;

    fn committed(&mut self, keep_hot: usize) {
        let (volks, fresh) = std::mem::take(&mut self.taken);
        // Without a take since (a view just loaded), nothing new was stored.
        self.saved_volks = Saved(volks.max(self.saved_volks.0));
        self.fresh.drain(..fresh.min(self.fresh.len()));
        self.rows.stored();
        self.cold.settle();
        // A store without index rows (written before them) could not find a packet
        // let go of: the index stays whole until a commit has written the rows.
        if !self.rows.missing() {
            self.evict(keep_hot);
        }
    }

    fn cold_keys(&self, envelope: &Envelope, keys: &mut Vec<Vec<u8>>) {
        // A repeated `packet_sent` of a let-go packet changes nothing: the fold must
        // know it was sent, which the packet's index row says.
        let Event::PacketSent(sent) = &envelope.record.event else {
            return;
        };
        let id = &sent.packet.message_id;
        if self.cold.is_empty()
            || self.packets.contains_key(id)
            || self
                .checkpoint
                .has_passed(Stream::CxpTraffic, envelope.sequence)
        {
            return;
        }
        if let Place::Row(g) = self.cold.place(id) {
            keys.push(stored::row_key(g, id));
        }
    }

    fn warm(&mut self, entries: Vec<StoredEntry>) -> Result<(), StoredError> {
        for (key, value) in entries {
            self.take_row(&key, &value)?;
        }
        Ok(())
    }

    fn apply(&mut self, envelope: &Envelope) -> bool {
        if !Self::STREAMS.contains(&envelope.stream)
            || !self.checkpoint.admit(envelope.stream, envelope.sequence)
        {
            return false;
        }
        self.cold.tick(envelope.record.timestamp);
        if let Event::PacketSent(sent) = &envelope.record.event {
            let p = &sent.packet;
            // A let-go packet's row was read before this event (`cold_keys`).
            let let_go = matches!(self.cold.place(&p.message_id), Place::Stored(_));
            if !self.packets.contains_key(&p.message_id) && !let_go {
                let from = self.intern(&p.from_agent);
                let to = self.intern(&p.to_agent);
                self.hold(
                    p.message_id,
                    Entry {
                        sequence: envelope.sequence,
                        from,
                        to,
                        subject: p.subject.as_str().into(),
                    },
                );
                self.fresh.push(p.message_id);
            }
        }
        true
    }
}

/// The stored form: `by_name` is left out and rebuilt.
#[derive(Serialize)]
struct StoredRef<'a> {
    checkpoint: &'a Checkpoint,
    volks: &'a [Box<str>],
    packets: &'a BTreeMap<Uuid, Entry>,
}

#[derive(Deserialize)]
struct Stored {
    checkpoint: Checkpoint,
    volks: Vec<Box<str>>,
    packets: BTreeMap<Uuid, Entry>,
}

impl Serialize for PacketIndex {
    /// Fails for an index that let packets go (a live runner's): only the store has
    /// them.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.cold.is_empty() {
            return Err(serde::ser::Error::custom(format!(
                "the packet index holds {} packets in the store only",
                self.cold.len()
            )));
        }
        StoredRef {
            checkpoint: &self.checkpoint,
            volks: &self.volks,
            packets: &self.packets,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for PacketIndex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let stored = Stored::deserialize(d)?;
        let known = stored.volks.len();
        if let Some((id, e)) = stored
            .packets
            .iter()
            .find(|(_, e)| e.from as usize >= known || e.to as usize >= known)
        {
            return Err(serde::de::Error::custom(format!(
                "packet {id} names Volk #{} of {known}",
                e.from.max(e.to)
            )));
        }
        let by_name = stored
            .volks
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clone(), u32::try_from(i).unwrap_or(u32::MAX)))
            .collect();
        Ok(PacketIndex {
            checkpoint: stored.checkpoint,
            volks: stored.volks,
            by_name,
            order: stored.packets.keys().copied().collect(),
            packets: stored.packets,
            ..PacketIndex::default()
        })
    }
}
