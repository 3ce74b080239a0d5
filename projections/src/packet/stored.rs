//! The packet index's stored form: a head (the checkpoint), one entry per Volk name
//! (`v` + its position) and one per packet (`p` + the sequence of its `packet_sent`,
//! holding its message id and entry), big-endian: keys that follow the log (see the
//! thread view's `stored.rs` for why). Both are only ever added to, so a commit writes
//! what was added since the last one.

use serde::{Deserialize, Serialize};

use super::{Entry, PacketIndex};
use crate::stored::{self, Changes, Saved, StoredEntry, StoredError};
use crate::Checkpoint;

const VOLK: u8 = b'v';
const PACKET: u8 = b'p';

#[derive(Serialize, Deserialize)]
struct Head {
    checkpoint: Checkpoint,
}

impl PacketIndex {
    pub(super) fn changes(&mut self, all: bool) -> Result<Changes, StoredError> {
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
        self.saved_volks = Saved(self.volks.len());
        let fresh = std::mem::take(&mut self.fresh);
        let mut write = |id: &uuid::Uuid, entry: &Entry| -> Result<(), StoredError> {
            let value = stored::encode("packet", &(id, entry))?;
            let sent = entry.sequence.to_be_bytes();
            entries.push((stored::key(PACKET, &sent), Some(value)));
            Ok(())
        };
        if all {
            for (id, entry) in &self.packets {
                write(id, entry)?;
            }
        } else {
            for id in &fresh {
                if let Some(entry) = self.packets.get(id) {
                    write(id, entry)?;
                }
            }
        }
        Ok(Changes::tracked(head, entries))
    }

    pub(super) fn restore(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        let head: Head = stored::decode("packet index head", head)?;
        let mut view = PacketIndex {
            checkpoint: head.checkpoint,
            ..PacketIndex::default()
        };
        let bad = |reason: String| StoredError::entry("packet index", reason);
        let mut packets = Vec::new();
        for (key, value) in entries {
            match key.split_first() {
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
                Some((&PACKET, _)) => {
                    packets.push(stored::decode::<(uuid::Uuid, Entry)>("packet", &value)?);
                }
                _ => return Err(bad(format!("unknown key {key:?}"))),
            }
        }
        let known = view.volks.len();
        for (id, entry) in packets {
            if entry.from as usize >= known || entry.to as usize >= known {
                return Err(bad(format!(
                    "packet {id} names Volk #{} of {known}",
                    entry.from.max(entry.to)
                )));
            }
            view.packets.insert(id, entry);
        }
        view.saved_volks = Saved(known);
        Ok(view)
    }
}
