//! The packet index's stored form: a head (the checkpoint), one entry per Volk name
//! (`v` + its position) and one per packet (`p` + the sequence of its `packet_sent`,
//! holding its message id and entry), big-endian: keys that follow the log (see the
//! thread view's `stored.rs` for why). Both are only ever added to, so a commit writes
//! what was added since the last one the store confirmed; a commit that failed is
//! taken again. A let-go packet is read back under [`PacketIndex::stored_key`] of the
//! sequence the index kept for its id.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Entry, PacketIndex, StoredParties};
use crate::stored::{self, Changes, Saved, StoredEntry, StoredError};
use crate::{Checkpoint, Restorer};

const VOLK: u8 = b'v';
const PACKET: u8 = b'p';

#[derive(Serialize, Deserialize)]
struct Head {
    checkpoint: Checkpoint,
}

impl PacketIndex {
    pub(super) fn changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        if all && !self.cold.is_empty() {
            return Err(StoredError::Encode {
                what: "packet index".into(),
                reason: format!(
                    "{} packets are only in the store; a full commit needs them in memory",
                    self.cold.len()
                ),
            });
        }
        let head = stored::encode(
            "packet index head",
            &Head {
                checkpoint: self.checkpoint.clone(),
            },
        )?;
        let mut entries = Vec::new();
        let from = if all { 0 } else { self.saved_volks.0 };
        for (at, name) in self.volks.iter().enumerate().skip(from) {
            let at = u32::try_from(at).unwrap_or(u32::MAX);
            let value = stored::encode("volk name", name)?;
            entries.push((stored::key(VOLK, &at.to_be_bytes()), Some(value)));
        }
        let mut write = |id: &Uuid, entry: &Entry| -> Result<(), StoredError> {
            let value = stored::encode("packet", &(id, entry))?;
            entries.push((Self::stored_key(entry.sequence), Some(value)));
            Ok(())
        };
        if all {
            for (id, entry) in &self.packets {
                write(id, entry)?;
            }
        } else {
            for id in &self.fresh {
                if let Some(entry) = self.packets.get(id) {
                    write(id, entry)?;
                }
            }
        }
        self.taken = (self.volks.len(), self.fresh.len());
        Ok(Changes::tracked(head, entries))
    }

    /// The key under which a commit stores the packet sent at `sequence` (read it back
    /// with [`PacketIndex::decode_stored`]).
    pub fn stored_key(sequence: u64) -> Vec<u8> {
        stored::key(PACKET, &sequence.to_be_bytes())
    }

    /// The parties of a packet as a commit stored it, its Volks named by this index's
    /// table (which holds every name a stored packet can point at).
    pub fn decode_stored(&self, bytes: &[u8]) -> Result<StoredParties, StoredError> {
        let (id, entry): (Uuid, Entry) = stored::decode("packet", bytes)?;
        check_volks(&id, &entry, self.volks.len())?;
        Ok(StoredParties {
            sequence: entry.sequence,
            from: self.volk(entry.from).to_owned(),
            to: self.volk(entry.to).to_owned(),
            subject: entry.subject.into(),
        })
    }

    pub(super) fn restore(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        crate::view::restore_all(Restore::new(head, usize::MAX)?, entries)
    }
}

fn check_volks(id: &Uuid, entry: &Entry, known: usize) -> Result<(), StoredError> {
    if entry.from as usize >= known || entry.to as usize >= known {
        return Err(StoredError::entry(
            "packet index",
            format!(
                "packet {id} names Volk #{} of {known}",
                entry.from.max(entry.to)
            ),
        ));
    }
    Ok(())
}

/// The packet index's [`Restorer`]: packets in key order (the log's), the oldest let
/// go past `keep_hot` as [`View::committed`](crate::View::committed) would after a
/// whole load; then the Volk names (their keys sort after the packets'), against
/// which every packet is checked as it is read.
pub(super) struct Restore {
    view: PacketIndex,
    keep_hot: usize,
    /// The packet naming the highest Volk position read so far: checked against the
    /// names once they are in.
    highest_volk: Option<(Uuid, u32)>,
}

impl Restore {
    pub(super) fn new(head: &[u8], keep_hot: usize) -> Result<Self, StoredError> {
        let head: Head = stored::decode("packet index head", head)?;
        Ok(Restore {
            view: PacketIndex {
                checkpoint: head.checkpoint,
                ..PacketIndex::default()
            },
            keep_hot,
            highest_volk: None,
        })
    }
}

impl Restorer<PacketIndex> for Restore {
    fn entry(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), StoredError> {
        let view = &mut self.view;
        let bad = |reason: String| StoredError::entry("packet index", reason);
        match key.split_first() {
            Some((&PACKET, _)) => {
                let (id, entry): (Uuid, Entry) = stored::decode("packet", &value)?;
                if key != PacketIndex::stored_key(entry.sequence) {
                    return Err(bad(format!("packet {id} stored under key {key:?}")));
                }
                let named = entry.from.max(entry.to);
                if self.highest_volk.is_none_or(|(_, h)| named > h) {
                    self.highest_volk = Some((id, named));
                }
                view.hold(id, entry);
                if view.packets.len() > self.keep_hot.saturating_add(1024) {
                    view.evict(self.keep_hot);
                }
            }
            // Volk keys load in position order (big-endian positions).
            Some((&VOLK, at)) => {
                let expected = u32::try_from(view.volks.len()).unwrap_or(u32::MAX);
                if at != expected.to_be_bytes() {
                    return Err(bad(format!("Volk #{expected} is missing")));
                }
                let name: Box<str> = stored::decode("volk name", &value)?;
                view.by_name.insert(name.clone(), expected);
                view.volks.push(name);
            }
            _ => return Err(bad(format!("unknown key {key:?}"))),
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<PacketIndex, StoredError> {
        let mut view = self.view;
        let known = view.volks.len();
        if let Some((id, named)) = self.highest_volk {
            if named as usize >= known {
                return Err(StoredError::entry(
                    "packet index",
                    format!("packet {id} names Volk #{named} of {known}"),
                ));
            }
        }
        view.saved_volks = Saved(known);
        view.evict(self.keep_hot);
        Ok(view)
    }
}
