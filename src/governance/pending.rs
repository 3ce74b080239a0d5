//! Packet facts compiled when something reads them, not when they change.
//!
//! Every `assertz` is expensive in scryer 0.10 (it parses and compiles the clause), and
//! every packet sent and every status change is one (`fact_goals.rs`): compiled as they
//! change, packet facts would make the engine's one thread bound the whole write path.
//! Yet most
//! decisions never read packet facts: under the default policy a `cxp.send` reads the
//! Volks, the sessions and the send count (`cxp_sends/3`, a blackboard value, cheap).
//!
//! So the engine applies Volk and session changes at once, counts and the floor before
//! the next goal (`evaluator/deferred.rs`), and keeps the packet changes here, folded
//! per packet into their net effect, until something reads packet facts:
//!
//! - while changes wait, the engine sets the blackboard flag `orchestrata_stale`; the
//!   prelude's `cxp_packet/12`, `cxp_delivery_status/3` and `cxp_work_status/3` check
//!   it first and, when it is set, note the read and throw. A decision that read them
//!   is answered by running it again after the changes are applied (decisions change
//!   nothing, so running one twice is safe; the note catches a policy that swallows the
//!   throw with its own `catch/3`). An ad hoc query (`governance.query`) applies them
//!   first. What any goal sees is therefore exactly what it saw with eager facts.
//! - a packet hidden by the window (`fact_window.rs`: sequence below the floor) is
//!   invisible to every goal, so its waiting changes are dropped, never compiled. With
//!   the default window a server whose policies never read packets holds at most about
//!   two windows of waiting packets and compiles none of them.
//! - without a window (every packet shown) nothing is ever dropped, so past
//!   [`HARD_LIMIT`] waiting packets the changes are applied anyway: memory stays bounded
//!   and the cost is what eager facts cost.

use std::collections::BTreeMap;

use super::facts::{Fact, FactChange, PacketFact};

/// Waiting packets beyond which the changes are applied even though nothing read them
/// (only reached without a window, or with a window larger than this).
pub(super) const HARD_LIMIT: usize = 65_536;

/// Waiting packets below which no compaction is tried.
const COMPACT_FROM: usize = 4_096;

/// One packet's waiting changes, folded.
#[derive(Debug, Clone, Default, PartialEq)]
struct Waiting {
    /// The base the engine holds for it, when the first waiting change retracted one
    /// (the packet was applied before); `None` for a packet new to the engine.
    held: Option<PacketFact>,
    /// The base it should hold now (`None` after a retract with no assert yet).
    packet: Option<PacketFact>,
    /// Its latest delivery status and time, if one changed.
    delivery: Option<(String, i64)>,
    /// Its latest work status and time, if one changed.
    work: Option<(String, i64)>,
    /// The delivery and work statuses the engine holds for it (from the first retracts
    /// of each): a status asserted back unchanged is not appended again.
    held_delivery: Option<(String, i64)>,
    held_work: Option<(String, i64)>,
}

impl Waiting {
    /// The `packet sent` sequence that places it against the floor.
    fn sequence(&self) -> u64 {
        self.packet
            .as_ref()
            .or(self.held.as_ref())
            .map_or(0, |p| p.sequence)
    }
}

/// The packet changes waiting to be applied; see the module docs.
#[derive(Debug, Default)]
pub(super) struct PendingPackets {
    waiting: BTreeMap<String, Waiting>,
    /// The window's floor as last applied: packets below it are hidden.
    floor: u64,
    /// Waiting packets after the last compaction (the next one is due at twice that).
    compacted_at: usize,
}

impl PendingPackets {
    /// Takes `change` if it is a packet fact change (then it waits, moved, not
    /// copied: a packet fact is eleven strings); hands every other change back for the
    /// caller to apply now. Notes floor changes on the way.
    pub(super) fn offer(&mut self, change: FactChange) -> Option<FactChange> {
        match change {
            FactChange::Assert(Fact::Floor(floor)) => {
                self.floor = floor;
                Some(FactChange::Assert(Fact::Floor(floor)))
            }
            FactChange::Retract(Fact::Packet(old)) => {
                let entry = self.waiting.entry(old.message_id.clone()).or_default();
                if entry.packet.is_none() && entry.held.is_none() {
                    entry.held = Some(old);
                }
                entry.packet = None;
                None
            }
            FactChange::Assert(Fact::Packet(new)) => {
                let id = new.message_id.clone();
                self.waiting.entry(id).or_default().packet = Some(new);
                None
            }
            FactChange::Assert(Fact::DeliveryStatus(id, status, at)) => {
                self.waiting.entry(id).or_default().delivery = Some((status, at));
                None
            }
            FactChange::Assert(Fact::WorkStatus(id, status, at)) => {
                self.waiting.entry(id).or_default().work = Some((status, at));
                None
            }
            FactChange::Retract(Fact::DeliveryStatus(id, status, at)) => {
                let entry = self.waiting.entry(id).or_default();
                if entry.delivery.is_none() && entry.held_delivery.is_none() {
                    entry.held_delivery = Some((status, at));
                }
                None
            }
            FactChange::Retract(Fact::WorkStatus(id, status, at)) => {
                let entry = self.waiting.entry(id).or_default();
                if entry.work.is_none() && entry.held_work.is_none() {
                    entry.held_work = Some((status, at));
                }
                None
            }
            other => Some(other),
        }
    }

    /// Whether any change waits.
    pub(super) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Packets with waiting changes.
    pub(super) fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Drops hidden packets when the waiting set has doubled since the last time;
    /// `true` when it is still over [`HARD_LIMIT`] and must be applied now.
    pub(super) fn must_apply(&mut self) -> bool {
        if self.waiting.len() >= COMPACT_FROM.max(2 * self.compacted_at) {
            self.drop_hidden();
            self.compacted_at = self.waiting.len();
        }
        self.waiting.len() > HARD_LIMIT
    }

    fn drop_hidden(&mut self) {
        let floor = self.floor;
        self.waiting.retain(|_, w| w.sequence() >= floor);
    }

    /// The waiting changes as the facts view would have emitted them, one packet after
    /// another, hidden packets left out; nothing waits afterwards. `fact_goals::goals`
    /// turns them into as few clauses as eager changes would have cost, or fewer.
    pub(super) fn take(&mut self) -> Vec<FactChange> {
        self.drop_hidden();
        self.compacted_at = 0;
        let mut changes = Vec::new();
        for (id, w) in std::mem::take(&mut self.waiting) {
            net_changes(id, w, &mut changes);
        }
        changes
    }

    /// The waiting changes of packet `id` alone, as [`PendingPackets::take`] gives
    /// them (none when it is hidden or nothing of it waits); the rest keep waiting.
    pub(super) fn take_one(&mut self, id: &str) -> Vec<FactChange> {
        let mut changes = Vec::new();
        if let Some(w) = self.waiting.remove(id) {
            if w.sequence() >= self.floor {
                net_changes(id.to_owned(), w, &mut changes);
            }
        }
        changes
    }

    /// Forgets every waiting change (the engine's facts are being replaced).
    pub(super) fn clear(&mut self) {
        self.waiting.clear();
        self.compacted_at = 0;
        self.floor = 0;
    }
}

/// One packet's waiting changes as the facts view would have emitted them, net.
fn net_changes(id: String, w: Waiting, changes: &mut Vec<FactChange>) {
    let Some(packet) = w.packet else {
        // Retracted and not asserted again.
        if let Some(held) = w.held {
            changes.push(FactChange::Retract(Fact::Packet(held)));
        }
        return;
    };
    // A packet sent again under its id: its statuses are appended whatever the
    // engine held, as eager changes do (what it held may predate changes
    // dropped while the packet was hidden).
    let mut resent = false;
    match w.held {
        // The base the engine holds stays: only statuses that changed are
        // appended.
        Some(held) if held.base_pattern() == packet.base_pattern() => {}
        Some(held) => {
            resent = true;
            changes.push(FactChange::Retract(Fact::Packet(held)));
            changes.push(FactChange::Assert(Fact::Packet(packet)));
        }
        None => changes.push(FactChange::Assert(Fact::Packet(packet))),
    }
    let changed =
        |now: &(String, i64), held: &Option<(String, i64)>| resent || Some(now) != held.as_ref();
    if let Some((status, at)) = w.delivery.filter(|d| changed(d, &w.held_delivery)) {
        changes.push(FactChange::Assert(Fact::DeliveryStatus(
            id.clone(),
            status,
            at,
        )));
    }
    if let Some((status, at)) = w.work.filter(|s| changed(s, &w.held_work)) {
        changes.push(FactChange::Assert(Fact::WorkStatus(id, status, at)));
    }
}

/// The packet a change is about, if it is a packet change.
pub(super) fn packet_of(change: &FactChange) -> Option<&str> {
    match change {
        FactChange::Assert(f) | FactChange::Retract(f) => match f {
            Fact::Packet(p) => Some(&p.message_id),
            Fact::DeliveryStatus(id, ..) | Fact::WorkStatus(id, ..) => Some(id),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests;
