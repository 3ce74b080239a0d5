//! The Postman's side of the aggregate: per-recipient queues and mailboxes.
//!
//! A recipient's queue orders [`QueueKey`]s as the CXP crate's `PriorityQueue` orders
//! packets (priority desc, then time asc, then message id): a key, not a copy of the
//! packet, so a Volk that never reads its queue costs ~40 bytes per queued packet
//! rather than the packet again (the packet lives once, in the state). Entries are
//! never removed in place: a packet whose priority changes is pushed again, and an
//! entry is served only if it still matches the packet's live `(time, priority)` and
//! the packet is still `queued` (lazy deletion).
//!
//! The mailbox of a recipient is what it holds: queued for it plus delivered and not
//! yet acknowledged. Its size is what `inbox_capacity` bounds.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::{CxpPacket, DeliveryStatus, Priority, VolkAlias};
use uuid::Uuid;

use super::KernelState;

/// A queued packet's place in its recipient's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct QueueKey {
    priority: Priority,
    timestamp: DateTime<Utc>,
    id: Uuid,
}

impl Ord for QueueKey {
    /// The entry served first compares greatest (`BinaryHeap` pops the greatest):
    /// higher priority, then earlier time, then smaller message id — the order of
    /// `CxpPacket::compare_priority`.
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then(other.timestamp.cmp(&self.timestamp))
            .then(other.id.cmp(&self.id))
    }
}

impl PartialOrd for QueueKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl KernelState {
    /// Keeps queues and mailboxes in step with a packet's delivery move `old -> new`.
    pub(super) fn track(&mut self, id: Uuid, old: DeliveryStatus, new: DeliveryStatus) {
        let Some(state) = self.packets.get(&id) else {
            return;
        };
        let to = state.packet.to_agent();
        if old == DeliveryStatus::Queued {
            if let Some(n) = self.queued.get_mut(&to) {
                *n = n.saturating_sub(1);
            }
        }
        if old == DeliveryStatus::Delivered {
            if let Some(set) = self.delivered.get_mut(&to) {
                set.remove(&id);
            }
        }
        if new == DeliveryStatus::Delivered {
            self.delivered.entry(to).or_default().insert(id);
        }
        if new == DeliveryStatus::Queued {
            if let Some(s) = self.packets.get_mut(&id) {
                s.queued_at = s.packet.timestamp();
            }
            *self.queued.entry(to).or_default() += 1;
            self.enqueue(id);
        }
    }

    /// Pushes a (new) queue entry for a queued packet.
    pub(super) fn enqueue(&mut self, id: Uuid) {
        let Some(state) = self.packets.get_mut(&id) else {
            return;
        };
        let packet = &state.packet;
        let key = QueueKey {
            priority: packet.priority(),
            timestamp: packet.timestamp(),
            id: packet.message_id(),
        };
        state.queued_as = Some((key.timestamp, key.priority));
        self.queues.entry(packet.to_agent()).or_default().push(key);
    }

    /// Packets `alias` holds now: queued for it plus delivered and unacknowledged.
    pub fn mailbox_len(&self, alias: VolkAlias) -> usize {
        self.queued.get(&alias).copied().unwrap_or(0)
            + self.delivered.get(&alias).map_or(0, |s| s.len())
    }

    /// Delivered, unacknowledged packets of `alias`.
    pub fn delivered_count(&self, alias: VolkAlias) -> usize {
        self.delivered.get(&alias).map_or(0, |s| s.len())
    }

    /// The next queued packet for `alias` in serving order, without removing it from
    /// the state (it stays `queued` until a `packet_delivered` is folded). Stale queue
    /// entries met on the way are dropped.
    pub fn next_queued(&mut self, alias: VolkAlias) -> Option<Uuid> {
        let queue = self.queues.get_mut(&alias)?;
        while let Some(top) = queue.peek() {
            let id = top.id;
            let live = self.packets.get(&id).is_some_and(|s| {
                s.packet.delivery_status() == DeliveryStatus::Queued
                    && s.queued_as == Some((top.timestamp, top.priority))
            });
            if live {
                return Some(id);
            }
            queue.pop();
        }
        None
    }

    /// Removes the head entry of `alias`'s queue (after it was delivered).
    pub fn pop_queued(&mut self, alias: VolkAlias) {
        if let Some(queue) = self.queues.get_mut(&alias) {
            if let Some(key) = queue.pop() {
                if let Some(s) = self.packets.get_mut(&key.id) {
                    s.queued_as = None;
                }
            }
        }
    }

    /// `alias`'s delivered, unacknowledged packets in serving order (priority desc,
    /// then time asc).
    pub fn inbox(&self, alias: VolkAlias) -> Vec<&CxpPacket> {
        let mut v: Vec<&super::PacketState> = self
            .delivered
            .get(&alias)
            .into_iter()
            .flatten()
            .filter_map(|id| self.packets.get(id))
            .collect();
        v.sort_by(|a, b| {
            b.packet
                .priority()
                .cmp(&a.packet.priority())
                .then(a.queued_at.cmp(&b.queued_at))
                .then(a.packet.message_id().cmp(&b.packet.message_id()))
        });
        v.into_iter().map(|s| &s.packet).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BinaryHeap;

    use chrono::TimeZone;
    use orchestrata_schemas::cxp::{CxpPacket, Priority, PriorityQueue, VolkAlias};
    use proptest::prelude::*;

    use super::QueueKey;

    proptest! {
        /// Keys are served in exactly the order the CXP crate's queue serves the
        /// packets (REQ-004-US-009-005), ties of priority and time included.
        #[test]
        fn keys_serve_in_the_packet_queues_order(
            entries in proptest::collection::vec((0i64..=10, 0i64..4, any::<u128>()), 0..60)
        ) {
            let alias = |s: &str| VolkAlias::parse(s).expect("alias");
            let mut packets = PriorityQueue::new();
            let mut keys = BinaryHeap::new();
            for (priority, second, id) in entries {
                let at = chrono::Utc.timestamp_opt(1_700_000_000 + second, 0).single().expect("time");
                let packet = CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "task", serde_json::json!({}), at)
                    .expect("packet")
                    .with_message_id(uuid::Uuid::from_u128(id))
                    .with_priority(Priority::new(priority).expect("priority"));
                keys.push(QueueKey {
                    priority: packet.priority(),
                    timestamp: packet.timestamp(),
                    id: packet.message_id(),
                });
                packets.push(packet);
            }
            let by_packet: Vec<_> = std::iter::from_fn(|| packets.pop()).map(|p| p.message_id()).collect();
            let by_key: Vec<_> = std::iter::from_fn(|| keys.pop()).map(|k| k.id).collect();
            prop_assert_eq!(by_key, by_packet);
        }
    }
}
