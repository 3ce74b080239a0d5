//! The Postman's side of the aggregate: per-recipient queues and mailboxes.
//!
//! A recipient's queue is the CXP crate's [`PriorityQueue`] (priority desc, then time
//! asc). Entries are never removed in place: a packet whose priority changes is pushed
//! again, and an entry is served only if it still matches the packet's live
//! `(time, priority)` and the packet is still `queued` (lazy deletion).
//!
//! The mailbox of a recipient is what it holds: queued for it plus delivered and not
//! yet acknowledged. Its size is what `inbox_capacity` bounds.

use orchestrata_schemas::cxp::{CxpPacket, DeliveryStatus, VolkAlias};
use uuid::Uuid;

use super::KernelState;

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
        let packet = state.packet.clone();
        state.queued_as = Some((packet.timestamp(), packet.priority()));
        self.queues
            .entry(packet.to_agent())
            .or_default()
            .push(packet);
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
            let id = top.message_id();
            let live = self.packets.get(&id).is_some_and(|s| {
                s.packet.delivery_status() == DeliveryStatus::Queued
                    && s.queued_as == Some((top.timestamp(), top.priority()))
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
            if let Some(p) = queue.pop() {
                if let Some(s) = self.packets.get_mut(&p.message_id()) {
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
