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

mod facts;
mod stored;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use orchestrata_schemas::events::{Envelope, Event, Stream};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

pub use facts::{facts_of, Facts};

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
    packets: BTreeMap<Uuid, Entry>,
    /// Volk names the store has (commit bookkeeping, not part of the value).
    saved_volks: Saved,
    /// Packets added since the last commit (commit bookkeeping).
    fresh: Vec<Uuid>,
}

impl PartialEq for PacketIndex {
    fn eq(&self, other: &Self) -> bool {
        // `by_name` is derived from `volks`.
        self.checkpoint == other.checkpoint
            && self.volks == other.volks
            && self.packets == other.packets
    }
}

impl PacketIndex {
    /// Number of packets indexed.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether no packet is indexed.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The parties of packet `message_id`, if the folded log sent it.
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

    /// Whether [`facts_of`]`(envelope, self)` is final: equal to what the index folded
    /// over the whole log would answer. True for every event that needs no look-up,
    /// for a transition whose packet is known, and for any event at or below the
    /// index's checkpoint. When it is false, wait until the index has folded
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

    fn needs_commit(&self) -> bool {
        self.fresh.len() > crate::stored::PRESSING_ENTRIES
    }

    fn apply(&mut self, envelope: &Envelope) -> bool {
        if !Self::STREAMS.contains(&envelope.stream)
            || !self.checkpoint.admit(envelope.stream, envelope.sequence)
        {
            return false;
        }
        if let Event::PacketSent(sent) = &envelope.record.event {
            let p = &sent.packet;
            if !self.packets.contains_key(&p.message_id) {
                let from = self.intern(&p.from_agent);
                let to = self.intern(&p.to_agent);
                self.packets.insert(
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
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
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
            packets: stored.packets,
            saved_volks: Saved::default(),
            fresh: Vec::new(),
        })
    }
}
