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

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::{CxpPacket, DeliveryStatus, Priority, VolkAlias};
use std::cmp::Ordering;
use std::collections::HashMap;
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

/// Stale entries a queue may carry beyond twice its live ones before it is compacted.
/// Serving drops stale entries only at the head, so a recipient that never reads (or
/// whose packets fail, or change priority, while queued) would keep one entry per
/// packet ever queued for it; compacting when stale entries outnumber live ones keeps
/// the queue within about twice its live size, at an amortized constant cost per push.
const STALE_SLACK: usize = 1024;

/// Whether `key` is its packet's live queue entry: the packet is still queued, at the
/// time and priority the entry carries.
fn live_key(entries: &HashMap<Uuid, (DateTime<Utc>, Priority)>, key: &QueueKey) -> bool {
    entries.get(&key.id) == Some(&(key.timestamp, key.priority))
}

impl KernelState {
    /// Keeps queues and mailboxes in step with a packet's delivery move `old -> new`.
    pub(super) fn track(&mut self, id: Uuid, old: DeliveryStatus, new: DeliveryStatus) {
        let Some(state) = self.packets.get(&id) else {
            return;
        };
        let to = state.packet.to_agent();
        if new == DeliveryStatus::Failed && state.packet.can_retry() {
            self.retryable.insert(id);
        } else {
            self.retryable.remove(&id);
        }
        if old == DeliveryStatus::Queued {
            self.queue_entries.remove(&id);
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
        let Some(state) = self.packets.get(&id) else {
            return;
        };
        let packet = &state.packet;
        let key = QueueKey {
            priority: packet.priority(),
            timestamp: packet.timestamp(),
            id: packet.message_id(),
        };
        self.queue_entries
            .insert(key.id, (key.timestamp, key.priority));
        let to = packet.to_agent();
        let queue = self.queues.entry(to).or_default();
        queue.push(key);
        let live = self.queued.get(&to).copied().unwrap_or(0);
        if queue.len() > STALE_SLACK + 2 * live {
            let entries = &self.queue_entries;
            queue.retain(|k| live_key(entries, k));
            queue.shrink_to(2 * queue.len());
        }
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
            if live_key(&self.queue_entries, top) {
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
                self.queue_entries.remove(&key.id);
            }
        }
    }

    /// `alias`'s delivered, unacknowledged packets in serving order (priority desc,
    /// then time asc).
    pub fn inbox(&self, alias: VolkAlias) -> Vec<CxpPacket> {
        let mut v: Vec<std::borrow::Cow<'_, super::PacketState>> = self
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
        v.into_iter().map(|s| s.into_owned().packet).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BinaryHeap;

    use chrono::{Duration, Utc};
    use orchestrata_schemas::cxp::{DeliveryStatus as Status, WorkStatus};
    use orchestrata_schemas::events::cxp_traffic::{PacketFailed, PacketSent};
    use orchestrata_schemas::events::fields::Json;
    use orchestrata_schemas::events::types::{Packet, PacketPayload};
    use orchestrata_schemas::events::EventRecord;

    use super::{KernelState, STALE_SLACK};

    // ISSUE-18: the kernel's memory follows live packets, not every packet ever queued
    /// A recipient that never reads its queue while most packets to it fail (the shape
    /// of a full inbox under load): the queue keeps about twice its live packets, not
    /// one entry per packet ever queued, and still serves the live ones in order.
    #[test]
    fn a_queue_nobody_reads_stays_within_twice_its_live_packets() {
        let start = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .expect("time");
        let mut state = KernelState::new(3);
        let vz = VolkAlias::parse("U:Vz").expect("alias");
        let mut live = Vec::new();
        for i in 0..6_000u128 {
            let at = start + Duration::milliseconds(i as i64);
            let packet = Packet {
                message_id: uuid::Uuid::from_u128(i + 1),
                from_agent: "U:Ox".into(),
                to_agent: "U:Vz".into(),
                thread_id: format!("t-{i}"),
                subject: "s".into(),
                payload: PacketPayload::Json(serde_json::json!({}).into()),
                created_at: at,
                priority: 5,
                delivery_status: Status::Queued,
                work_status: WorkStatus::Pending,
                protocol_version: "1.0.0".into(),
                in_reply_to: None,
                metadata: Json::default(),
            };
            let id = packet.message_id;
            state.apply(&EventRecord::new("test", "k", PacketSent { packet }, at));
            if i % 10 == 0 {
                live.push(id);
                continue;
            }
            let failed = PacketFailed {
                message_id: id,
                thread_id: format!("t-{i}"),
                reason: "inbox full".into(),
                retry_count: 3,
                will_retry: false,
            };
            state.apply(&EventRecord::new("test", "k", failed, at));
        }
        assert_eq!(state.mailbox_len(vz), live.len());
        let entries = state.queues.get(&vz).map_or(0, |q| q.len());
        assert!(
            entries <= STALE_SLACK + 2 * live.len() + 1,
            "{entries} queue entries for {} live packets",
            live.len()
        );
        let mut served = Vec::new();
        while let Some(id) = state.next_queued(vz) {
            served.push(id);
            state.pop_queued(vz);
        }
        assert_eq!(served, live, "live packets served in queue order");
    }

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
