//! The packet index's stored form: a head (the checkpoint), one entry per Volk name
//! (`v` + its position) and one per packet (`p` + the sequence of its `packet_sent`,
//! holding its message id and entry), big-endian: keys that follow the log (see the
//! thread view's `stored.rs` for why). Both are only ever added to, so a commit writes
//! what was added since the last one the store confirmed; a commit that failed is
//! taken again. Beside each packet an index row (`r` + generation + message id -> the
//! sequence in its key; `cold_ids.rs`) finds a let-go packet from its id. A store
//! written before index rows existed (its head says so) is restored whole and written
//! whole, rows included, at the next commit.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Entry, PacketIndex, StoredParties};
use crate::cold_ids::{self, generation, row_in, row_parts, Rows};
use crate::stored::{self, Changes, Saved, StoredEntry, StoredError};
use crate::{Checkpoint, Restorer};

const VOLK: u8 = b'v';
const PACKET: u8 = b'p';
const ROW: u8 = b'r';

/// The view, as errors name it.
const VIEW: &str = "packet index";

#[derive(Serialize, Deserialize)]
struct Head {
    checkpoint: Checkpoint,
    /// Whether the store holds an index row for each packet (absent, so `false`, in a
    /// head written before index rows existed).
    #[serde(default)]
    rows: bool,
}

/// The key of packet `id`'s index row in `generation`.
pub(super) fn row_key(generation: u64, id: &Uuid) -> Vec<u8> {
    row_in(ROW, generation, id.as_bytes())
}

/// The generation, message id and sequence of index row `key` (`None`: not stored).
fn row(key: &[u8], value: &[u8]) -> Result<(u64, Uuid, Option<u64>), StoredError> {
    let (g, id) = row_parts(VIEW, key)?;
    let id = Uuid::from_slice(id)
        .map_err(|_| StoredError::entry(VIEW, format!("bad index row key {key:?}")))?;
    Ok((g, id, cold_ids::row_sequence(VIEW, key, value)?))
}

impl PacketIndex {
    pub(super) fn changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        let whole = all || self.rows.missing();
        if whole && !self.cold.is_empty() {
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
                rows: true,
            },
        )?;
        let mut entries = Vec::new();
        let from = if whole { 0 } else { self.saved_volks.0 };
        for (at, name) in self.volks.iter().enumerate().skip(from) {
            let at = u32::try_from(at).unwrap_or(u32::MAX);
            let value = stored::encode("volk name", name)?;
            entries.push((stored::key(VOLK, &at.to_be_bytes()), Some(value)));
        }
        // Every packet written is new (entries never change): each gets its row.
        let written: Vec<(&Uuid, &Entry)> = if whole {
            self.packets.iter().collect()
        } else {
            self.fresh
                .iter()
                .filter_map(|id| Some((id, self.packets.get(id)?)))
                .collect()
        };
        for (id, entry) in written {
            let value = stored::encode("packet", &(id, entry))?;
            let at = entry.sequence;
            entries.push((Self::stored_key(at), Some(value)));
            entries.push((row_key(generation(at), id), Some(at.to_be_bytes().to_vec())));
            self.cold.row_written(id, at);
        }
        self.taken = (self.volks.len(), self.fresh.len());
        self.rows.taking(self.checkpoint.clone());
        let mut changes = Changes::tracked(head, entries);
        changes.full = whole && !all;
        // Volk names past the stored ones, packets never stored and their rows (or,
        // whole, into an emptied store): the store holds none of them.
        changes.fresh = changes.entries.len();
        Ok(changes)
    }

    /// The key of the packet an index row names: `row_key` as `Lookup::Indexed`
    /// (super::Lookup) named it, `row` the value stored under it.
    pub fn indexed_key(row_key: &[u8], row_value: &[u8]) -> Result<Vec<u8>, StoredError> {
        match row(row_key, row_value)? {
            (_, _, Some(at)) => Ok(Self::stored_key(at)),
            (_, id, None) => Err(StoredError::entry(
                VIEW,
                format!("index row of {id} is empty"),
            )),
        }
    }

    /// Takes back index row `key` read from the store (`value` empty: not stored).
    pub(super) fn take_row(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoredError> {
        if key.first() != Some(&ROW) {
            return Err(StoredError::entry(
                VIEW,
                format!("offered entry {key:?} back; only index rows are read back"),
            ));
        }
        let (g, id, at) = row(key, value)?;
        self.cold.found(id, g, at);
        Ok(())
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
        let rows = Rows::restored(head.checkpoint.clone(), head.rows);
        Ok(Restore {
            view: PacketIndex {
                checkpoint: head.checkpoint,
                rows,
                ..PacketIndex::default()
            },
            // Without index rows nothing could be found once let go: the index stays
            // whole until its next commit has written them.
            keep_hot: if head.rows { keep_hot } else { usize::MAX },
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
            Some((&ROW, _)) => {
                if let (_, id, Some(at)) = row(&key, &value)? {
                    view.cold.row_written(&id, at);
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

/// `head` as written before index rows existed (a test of the upgrade).
#[cfg(test)]
pub(super) fn head_without_rows(head: &[u8]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Earlier {
        checkpoint: Checkpoint,
    }
    let head: Head = stored::decode("packet index head", head).expect("a head");
    let earlier = Earlier {
        checkpoint: head.checkpoint,
    };
    stored::encode("packet index head", &earlier).expect("encodes")
}
