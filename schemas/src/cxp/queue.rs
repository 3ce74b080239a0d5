//! Serving order of packets (US-009): priority descending, then timestamp ascending.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::packet::CxpPacket;

impl CxpPacket {
    /// Serving order: `Less` means `self` is served before `other` (higher priority first,
    /// then older first, then by `message_id` so the order is total and deterministic).
    /// `packets.sort_by(CxpPacket::compare_priority)` yields serving order.
    pub fn compare_priority(&self, other: &CxpPacket) -> Ordering {
        other
            .priority
            .cmp(&self.priority)
            .then(self.timestamp.cmp(&other.timestamp))
            .then(self.message_id.cmp(&other.message_id))
    }
}

struct Entry(CxpPacket);

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap pops the greatest: the packet served first must compare greatest.
        other.0.compare_priority(&self.0)
    }
}

/// A max-priority queue of packets in serving order (O(log n) push and pop).
#[derive(Default)]
pub struct PriorityQueue {
    heap: BinaryHeap<Entry>,
}

impl PriorityQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }
    /// Add a packet.
    pub fn push(&mut self, packet: CxpPacket) {
        self.heap.push(Entry(packet));
    }
    /// Remove and return the packet to serve next.
    pub fn pop(&mut self) -> Option<CxpPacket> {
        self.heap.pop().map(|e| e.0)
    }
    /// The packet to serve next, without removing it.
    pub fn peek(&self) -> Option<&CxpPacket> {
        self.heap.peek().map(|e| &e.0)
    }
    /// Number of queued packets.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

impl std::fmt::Debug for PriorityQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PriorityQueue")
            .field("len", &self.len())
            .finish()
    }
}

impl FromIterator<CxpPacket> for PriorityQueue {
    fn from_iter<I: IntoIterator<Item = CxpPacket>>(iter: I) -> Self {
        PriorityQueue {
            heap: iter.into_iter().map(Entry).collect(),
        }
    }
}
