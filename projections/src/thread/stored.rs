//! The thread view's stored form: a head (checkpoint, clock) and one entry per thread
//! (`t` + the sequence of the event that opened it) and per packet (`p` + the sequence
//! of its `packet_sent`), big-endian. Keys follow the log, so new entries land at the
//! end of the store's key space: sled 0.34 keeps inserts at random keys (message ids)
//! in memory beyond its cache bound (measured: 1.1 GB after 400,000 random inserts with
//! a 64 MiB cache, 91 MB with increasing keys). The global, sender and recipient orders
//! are rebuilt from the packets on load.

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::fields::opt_ts;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::fold::index;
use super::table::Table;
use super::{PacketState, ThreadState, ThreadView};
use crate::stored::{self, Changes, StoredEntry, StoredError};
use crate::Checkpoint;

const THREAD: u8 = b't';
const PACKET: u8 = b'p';

#[derive(Serialize, Deserialize)]
struct Head {
    checkpoint: Checkpoint,
    #[serde(with = "opt_ts")]
    clock: Option<DateTime<Utc>>,
}

impl ThreadView {
    pub(super) fn changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        let head = stored::encode(
            "thread view head",
            &Head {
                checkpoint: self.checkpoint.clone(),
                clock: self.clock,
            },
        )?;
        let mut entries = Vec::new();
        for thread in self.threads.take_changed(all) {
            let value = stored::encode("thread", thread)?;
            let opened = thread.status_history.first().map_or(0, |t| t.sequence);
            entries.push((stored::key(THREAD, &opened.to_be_bytes()), Some(value)));
        }
        for packet in self.packets.take_changed(all) {
            let value = stored::encode("packet", packet)?;
            let sent = packet.sequence.to_be_bytes();
            entries.push((stored::key(PACKET, &sent), Some(value)));
        }
        Ok(Changes::tracked(head, entries))
    }

    pub(super) fn restore(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        let head: Head = stored::decode("thread view head", head)?;
        let mut threads = Table::default();
        let mut packets: Table<PacketState> = Table::default();
        let mut order: Vec<(u64, Uuid)> = Vec::new();
        for (key, value) in entries {
            match key.split_first() {
                Some((&THREAD, _)) => {
                    threads.insert(stored::decode::<ThreadState>("thread", &value)?);
                }
                Some((&PACKET, _)) => {
                    let packet: PacketState = stored::decode("packet", &value)?;
                    order.push((packet.sequence, packet.packet.message_id));
                    packets.insert(packet);
                }
                _ => {
                    return Err(StoredError::entry(
                        "thread view",
                        format!("unknown key {key:?}"),
                    ))
                }
            }
        }
        threads.forget_changes();
        packets.forget_changes();
        order.sort_unstable();
        let mut view = ThreadView {
            checkpoint: head.checkpoint,
            clock: head.clock,
            threads,
            packets,
            by_sequence: Vec::with_capacity(order.len()),
            by_sender: Default::default(),
            by_recipient: Default::default(),
        };
        for (sequence, id) in order {
            if let Some(p) = view.packets.get(&id) {
                index(&mut view.by_sender, &p.packet.from_agent, sequence);
                index(&mut view.by_recipient, &p.packet.to_agent, sequence);
            }
            view.by_sequence.push((sequence, id));
        }
        Ok(view)
    }
}
