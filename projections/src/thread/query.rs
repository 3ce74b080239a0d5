//! What the [`ThreadView`] answers: the reads the gateway serves.

use chrono::{DateTime, Duration, Utc};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::rows::{packet_row_in, thread_row_in};
use super::stored::{packet_key, thread_key};
use super::{Held, PacketState, ThreadState, ThreadStatus, ThreadView, ARCHIVE_AFTER_DAYS};
use crate::cold_ids::{ColdIds, Place};
use crate::{Checkpoint, Page, PageRequest};

/// A packet search; every field set narrows it (fields combine with AND).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PacketQuery {
    /// Only this thread (REQ-004-INTG-003).
    pub thread_id: Option<String>,
    /// Only packets from this Volk (REQ-004-US-008-007).
    pub sender: Option<String>,
    /// Only packets to this Volk (REQ-004-US-008-008).
    pub recipient: Option<String>,
    /// Only this delivery status (REQ-004-US-004-019).
    pub delivery_status: Option<DeliveryStatus>,
    /// Only this work status (REQ-004-US-005-019).
    pub work_status: Option<WorkStatus>,
    /// Only this current priority.
    pub priority: Option<i32>,
    /// Only packets sent at or after this event time.
    pub sent_from: Option<DateTime<Utc>>,
    /// Only packets sent strictly before this event time.
    pub sent_until: Option<DateTime<Utc>>,
}

impl PacketQuery {
    fn matches(&self, p: &PacketState) -> bool {
        self.thread_id
            .as_ref()
            .is_none_or(|t| *t == p.packet.thread_id)
            && self
                .sender
                .as_ref()
                .is_none_or(|s| *s == p.packet.from_agent)
            && self
                .recipient
                .as_ref()
                .is_none_or(|r| *r == p.packet.to_agent)
            && self.delivery_status.is_none_or(|d| d == p.delivery_status)
            && self.work_status.is_none_or(|w| w == p.work_status)
            && self.priority.is_none_or(|q| q == p.priority)
            && self.sent_from.is_none_or(|f| p.sent_at >= f)
            && self.sent_until.is_none_or(|u| p.sent_at < u)
    }
}

/// A search over every packet or thread, refused by a view that let some go (a live
/// view keeps only recent entries in memory; the rest are in its store).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the view keeps {packets} packets and {threads} threads in its store only: search a view folded or loaded whole")]
pub struct LetGo {
    /// Packets only in the store.
    pub packets: usize,
    /// Threads only in the store.
    pub threads: usize,
}

/// A thread search; every field set narrows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadQuery {
    /// Only threads with this (effective) status.
    pub status: Option<ThreadStatus>,
    /// Only threads this Volk took part in.
    pub participant: Option<String>,
}

impl ThreadView {
    /// How far the view has folded.
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The latest event time folded: what "now" means for the age rule.
    pub fn clock(&self) -> Option<DateTime<Utc>> {
        self.clock
    }

    /// The thread with this id (REQ-004-US-008-005) if it is in memory: one map
    /// lookup. A view kept live by a runner lets old threads go; use
    /// [`find_thread`](Self::find_thread) there.
    pub fn thread(&self, thread_id: &str) -> Option<&ThreadState> {
        self.threads.get(thread_id)
    }

    /// The thread with this id, in memory or (let go of) in the store.
    pub fn find_thread(&self, thread_id: &str) -> Option<Held<'_, ThreadState>> {
        if let Some(t) = self.threads.get(thread_id) {
            return Some(Held::Memory(t));
        }
        let_go(&self.cold_threads, thread_id, thread_key, |g| {
            thread_row_in(g, thread_id)
        })
    }

    /// The packet with this message id, in memory or (let go of) in the store.
    pub fn find_packet(&self, message_id: &Uuid) -> Option<Held<'_, PacketState>> {
        if let Some(p) = self.packets.get(message_id) {
            return Some(Held::Memory(p));
        }
        let_go(&self.cold_packets, message_id, packet_key, |g| {
            packet_row_in(g, message_id)
        })
    }

    /// Number of threads, in memory or not.
    pub fn thread_count(&self) -> usize {
        self.threads.len() + self.cold_threads.len()
    }

    /// Number of packets, in memory or not.
    pub fn packet_count(&self) -> usize {
        self.packets.len() + self.cold_packets.len()
    }

    /// The thread's status now (at the view's clock), the age rule included.
    pub fn thread_status(&self, thread_id: &str) -> Option<ThreadStatus> {
        self.thread(thread_id).map(|thread| self.status_of(thread))
    }

    /// The effective status of `thread` — one read back from the store, say — at this
    /// view's clock: [`thread_status`](Self::thread_status) for a thread held anywhere.
    pub fn status_of(&self, thread: &ThreadState) -> ThreadStatus {
        match self.clock {
            Some(now) => effective_status(thread, now),
            None => thread.status,
        }
    }

    /// The thread's status as of event time `at`, the age rule included (status recorded
    /// by events folded so far, aged to `at`).
    pub fn thread_status_at(&self, thread_id: &str, at: DateTime<Utc>) -> Option<ThreadStatus> {
        self.thread(thread_id).map(|t| effective_status(t, at))
    }

    /// The packet with this message id (REQ-004-INTG-002) if it is in memory; see
    /// [`find_packet`](Self::find_packet) for a view that lets packets go.
    pub fn packet(&self, message_id: &Uuid) -> Option<&PacketState> {
        self.packets.get(message_id)
    }

    /// The thread's packets in send order (REQ-004-US-008-005, -006); empty for an
    /// unknown thread.
    pub fn thread_packets<'a>(
        &'a self,
        thread_id: &str,
    ) -> impl Iterator<Item = &'a PacketState> + 'a {
        let ids: &'a [Uuid] = self.threads.get(thread_id).map_or(&[], |t| &t.packets);
        ids.iter().filter_map(|id| self.packets.get(id))
    }

    /// Packets matching `query`, in send order, one page at a time.
    ///
    /// Uses the narrowest index the query allows (thread, sender, recipient), then
    /// filters the rest. Only a view that holds every packet and thread can search them
    /// all (one folded or restored whole: rebuilds, `projections show`); a view a runner
    /// keeps live, which lets old entries go, refuses with [`LetGo`] rather than answer
    /// part of the history (it answers single packets and threads through
    /// [`find_packet`](Self::find_packet) and [`find_thread`](Self::find_thread)).
    pub fn packets(
        &self,
        query: &PacketQuery,
        page: &PageRequest,
    ) -> Result<Page<&PacketState>, LetGo> {
        self.whole()?;
        Ok(self.search_packets(query, page))
    }

    /// Whether the view holds every entry; [`LetGo`] says how many it let go of.
    pub fn whole(&self) -> Result<(), LetGo> {
        if !self.unindexed && self.nothing_let_go() {
            return Ok(());
        }
        Err(LetGo {
            packets: self.cold_packets.len(),
            threads: self.cold_threads.len(),
        })
    }

    fn search_packets(&self, query: &PacketQuery, page: &PageRequest) -> Page<&PacketState> {
        let start = page.start();
        let by_seq = |seqs: &mut dyn Iterator<Item = u64>| -> Page<&PacketState> {
            page.collect(
                seqs.filter_map(|s| self.sent_at_sequence(s))
                    .filter(|p| query.matches(p))
                    .map(|p| (p.sequence, p)),
            )
        };
        if let Some(thread_id) = &query.thread_id {
            let Some(thread) = self.threads.get(thread_id) else {
                return Page {
                    items: Vec::new(),
                    next: None,
                };
            };
            return page.collect(
                thread
                    .packets
                    .iter()
                    .filter_map(|id| self.packets.get(id))
                    .filter(|p| p.sequence >= start && query.matches(p))
                    .map(|p| (p.sequence, p)),
            );
        }
        if let Some(sender) = &query.sender {
            return by_seq(&mut from_start(self.by_sender.get(sender), start));
        }
        if let Some(recipient) = &query.recipient {
            return by_seq(&mut from_start(self.by_recipient.get(recipient), start));
        }
        let from = self.by_sequence.partition_point(|(s, _)| *s < start);
        by_seq(&mut self.by_sequence[from..].iter().map(|(s, _)| *s))
    }

    /// The packet whose `packet_sent` is at `sequence`.
    fn sent_at_sequence(&self, sequence: u64) -> Option<&PacketState> {
        let i = self
            .by_sequence
            .binary_search_by_key(&sequence, |(s, _)| *s)
            .ok()?;
        self.packets.get(&self.by_sequence[i].1)
    }

    /// Threads matching `query`, in order of thread id, one page at a time (the cursor
    /// is the position in that order). Like [`packets`](Self::packets), only on a view
    /// that holds every entry ([`LetGo`] otherwise).
    pub fn threads(
        &self,
        query: &ThreadQuery,
        page: &PageRequest,
    ) -> Result<Page<&ThreadState>, LetGo> {
        self.whole()?;
        let start = page.start();
        Ok(page.collect(
            self.threads
                .sorted()
                .enumerate()
                .skip(usize::try_from(start).unwrap_or(usize::MAX))
                .filter(|(_, t)| {
                    query
                        .status
                        .is_none_or(|s| self.thread_status(&t.thread_id) == Some(s))
                        && query
                            .participant
                            .as_ref()
                            .is_none_or(|p| t.participants.contains(p))
                })
                .map(|(i, t)| (i as u64, t)),
        ))
    }
}

/// The sequences of a sorted index list from `start` on (none for a missing key).
fn from_start(list: Option<&Vec<u64>>, start: u64) -> impl Iterator<Item = u64> + '_ {
    let list: &[u64] = list.map_or(&[], Vec::as_slice);
    let from = list.partition_point(|s| *s < start);
    list[from..].iter().copied()
}

/// The status of `thread` at `now`: archived if idle for more than 30 days.
fn effective_status(thread: &ThreadState, now: DateTime<Utc>) -> ThreadStatus {
    if thread.status != ThreadStatus::Archived
        && now > thread.last_activity + Duration::days(ARCHIVE_AFTER_DAYS)
    {
        ThreadStatus::Archived
    } else {
        thread.status
    }
}

/// Where a let-go entry is: under its stored key (`key` of its sequence), behind its
/// index rows (`row_in` of each generation that may hold one), or nowhere.
fn let_go<'a, T, K, Q>(
    cold: &ColdIds<K>,
    id: &Q,
    key: fn(u64) -> Vec<u8>,
    row_in: impl Fn(u64) -> Vec<u8>,
) -> Option<Held<'a, T>>
where
    K: Eq + std::hash::Hash + std::borrow::Borrow<Q>,
    Q: std::hash::Hash + Eq + AsRef<[u8]> + ?Sized,
{
    match cold.place(id) {
        Place::Nowhere => None,
        Place::Stored(at) => Some(Held::Stored(key(at))),
        Place::Row(_) => Some(Held::Indexed(cold.row_keys(id, row_in))),
    }
}
