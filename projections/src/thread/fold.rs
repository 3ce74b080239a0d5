//! How each `cxp.traffic` event changes the [`ThreadView`].

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::types::Packet;
use orchestrata_schemas::events::{Envelope, Event, Stream};

use super::table::Table;
use super::{PacketState, ThreadState, ThreadStatus, ThreadView, AGE_RULE, ARCHIVE_AFTER_DAYS};
use crate::stored::StoredEntry;
use crate::{Changes, Checkpoint, StoredError, Transition, View, ViewName};

/// What one event contributes to a transition entry.
struct At<'a> {
    time: DateTime<Utc>,
    sequence: u64,
    by: Option<&'a str>,
}

impl At<'_> {
    fn transition<S>(&self, status: S, note: Option<String>) -> Transition<S> {
        Transition {
            status,
            at: self.time,
            sequence: self.sequence,
            by: self.by.map(str::to_owned),
            note,
        }
    }
}

impl View for ThreadView {
    const NAME: ViewName = ViewName::Thread;
    const STREAMS: &'static [Stream] = &[Stream::CxpTraffic];

    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    fn take_changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        self.changes(all)
    }

    const RETAKES_UNCOMMITTED: bool = true;

    // The tables keep what a commit took apart from what changed since
    // (`table.rs`), and index rows are written for what the commit took
    // (`rows.rs`): answers to `cxp.send` wait for this view, not for its commits.
    const FOLDS_WHILE_STORING: bool = true;

    fn committed(&mut self, keep_hot: usize) {
        self.let_go(keep_hot);
    }

    fn needs_commit(&self) -> bool {
        self.pressing()
    }

    fn cold_keys(&self, envelope: &Envelope, keys: &mut Vec<Vec<u8>>) {
        self.wanted(envelope, keys);
    }

    fn warm(&mut self, entries: Vec<StoredEntry>) -> Result<(), StoredError> {
        self.take_back(entries)
    }

    fn restorer(
        head: &[u8],
        keep_hot: usize,
    ) -> Result<Box<dyn crate::Restorer<Self>>, StoredError> {
        Ok(Box::new(super::stored::Restore::new(head, keep_hot)?))
    }

    fn from_stored(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        Self::restore(head, entries)
    }

    fn apply(&mut self, envelope: &Envelope) -> bool {
        if !self.admit(envelope) {
            return false;
        }
        let time = envelope.record.timestamp;
        let sequence = envelope.sequence;
        match &envelope.record.event {
            Event::ThreadOpened(e) => {
                let at = At {
                    time,
                    sequence,
                    by: Some(&e.opened_by),
                };
                let thread = open_thread(
                    &mut self.threads,
                    &e.thread_id,
                    &e.subject,
                    &e.opened_by,
                    &at,
                );
                thread.participants.extend(e.participants.iter().cloned());
            }
            Event::PacketSent(e) => self.packet_sent(Cow::Borrowed(&e.packet), time, sequence),
            Event::PacketDelivered(e) => {
                let at = At {
                    time,
                    sequence,
                    by: Some(&e.to_agent),
                };
                self.delivery(
                    &e.message_id,
                    &e.thread_id,
                    DeliveryStatus::Delivered,
                    &at,
                    None,
                );
            }
            Event::PacketAcknowledged(e) => {
                let at = At {
                    time,
                    sequence,
                    by: Some(&e.acknowledged_by),
                };
                self.delivery(
                    &e.message_id,
                    &e.thread_id,
                    DeliveryStatus::Acknowledged,
                    &at,
                    None,
                );
            }
            Event::PacketFailed(e) => {
                let at = At {
                    time,
                    sequence,
                    by: None,
                };
                let note = Some(e.reason.clone());
                if let Some(p) = self.delivery(
                    &e.message_id,
                    &e.thread_id,
                    DeliveryStatus::Failed,
                    &at,
                    note,
                ) {
                    p.failure_reason = Some(e.reason.clone());
                    p.retry_count = e.retry_count;
                }
            }
            Event::PacketRetried(e) => {
                let at = At {
                    time,
                    sequence,
                    by: None,
                };
                let note = Some(format!("retry {}", e.attempt));
                if let Some(p) = self.delivery(
                    &e.message_id,
                    &e.thread_id,
                    DeliveryStatus::Queued,
                    &at,
                    note,
                ) {
                    p.retry_count = p.retry_count.max(e.attempt);
                }
            }
            Event::WorkStatusChanged(e) => {
                let at = At {
                    time,
                    sequence,
                    by: Some(&e.changed_by),
                };
                self.touch_thread(&e.thread_id, &at);
                if let Some(p) = self.packets.get_mut(&e.message_id) {
                    p.work_status = e.new;
                    p.work_history.push(at.transition(e.new, e.notes.clone()));
                    if e.assigned_to.is_some() {
                        p.assigned_to.clone_from(&e.assigned_to);
                    }
                    if e.resolution.is_some() {
                        p.resolution.clone_from(&e.resolution);
                    }
                    p.updated_at = time;
                }
                if e.new == WorkStatus::Archived {
                    self.close_if_all_archived(&e.thread_id, &at);
                }
            }
            Event::PriorityChanged(e) => {
                let at = At {
                    time,
                    sequence,
                    by: Some(&e.changed_by),
                };
                self.touch_thread(&e.thread_id, &at);
                if let Some(p) = self.packets.get_mut(&e.message_id) {
                    p.priority = e.new;
                    p.priority_history
                        .push(at.transition(e.new, e.reason.clone()));
                    p.updated_at = time;
                }
            }
            Event::ThreadClosed(e) => {
                let at = At {
                    time,
                    sequence,
                    by: Some(&e.closed_by),
                };
                self.set_status(&e.thread_id, ThreadStatus::Resolved, &at, e.reason.clone());
            }
            Event::ThreadReopened(e) => {
                let at = At {
                    time,
                    sequence,
                    by: Some(&e.reopened_by),
                };
                self.set_status(&e.thread_id, ThreadStatus::Active, &at, e.reason.clone());
            }
            Event::ThreadArchived(e) => {
                let at = At {
                    time,
                    sequence,
                    by: Some(&e.archived_by),
                };
                self.set_status(&e.thread_id, ThreadStatus::Archived, &at, e.reason.clone());
            }
            _ => {}
        }
        true
    }

    /// Moves a sent packet into the view instead of cloning it; every other event is
    /// applied as by [`apply`](View::apply).
    fn apply_owned(&mut self, envelope: Envelope) -> bool {
        if !matches!(envelope.record.event, Event::PacketSent(_)) {
            return self.apply(&envelope);
        }
        if !self.admit(&envelope) {
            return false;
        }
        let (time, sequence) = (envelope.record.timestamp, envelope.sequence);
        if let Event::PacketSent(e) = envelope.record.event {
            self.packet_sent(Cow::Owned(e.packet), time, sequence);
        }
        true
    }
}

impl ThreadView {
    /// Whether `envelope` is new to the view (its stream, above the checkpoint); if so
    /// records it in the checkpoint and advances the clock.
    fn admit(&mut self, envelope: &Envelope) -> bool {
        if envelope.stream != Stream::CxpTraffic
            || !self.checkpoint.admit(envelope.stream, envelope.sequence)
        {
            return false;
        }
        self.tick(envelope.record.timestamp);
        self.threads.at(envelope.sequence);
        self.packets.at(envelope.sequence);
        true
    }

    /// The view's clock: the latest event time folded (its let-go ids believe stamps
    /// up to it, `let_go.rs`).
    pub(super) fn tick(&mut self, time: DateTime<Utc>) {
        self.clock = Some(self.clock.map_or(time, |c| c.max(time)));
        self.cold_packets.tick(time);
        self.cold_threads.tick(time);
    }

    /// Applies the age rule to an existing thread and records activity on it.
    fn touch_thread(&mut self, id: &str, at: &At<'_>) -> Option<&mut ThreadState> {
        let thread = self.threads.get_mut(id)?;
        age(thread, at);
        Some(thread)
    }

    fn packet_sent(&mut self, sent: Cow<'_, Packet>, time: DateTime<Utc>, sequence: u64) {
        let packet: &Packet = &sent;
        // The same packet logged twice: the first counts. A let-go copy was read back
        // before this event (`cold.rs`, `wanted`).
        if self.packets.contains(&packet.message_id) {
            return;
        }
        let at = At {
            time,
            sequence,
            by: Some(&packet.from_agent),
        };
        let thread = open_thread(
            &mut self.threads,
            &packet.thread_id,
            &packet.subject,
            &packet.from_agent,
            &at,
        );
        for alias in [&packet.from_agent, &packet.to_agent] {
            if !thread.participants.contains(alias) {
                thread.participants.insert(alias.clone());
            }
        }
        thread.packets.push(packet.message_id);
        thread.message_count += 1;
        if thread.status == ThreadStatus::Resolved {
            thread.status = ThreadStatus::Active;
            thread
                .status_history
                .push(at.transition(ThreadStatus::Active, Some("new packet".into())));
        }
        if !self.unindexed {
            self.by_sequence.push((sequence, packet.message_id));
            index(&mut self.by_sender, &packet.from_agent, sequence);
            index(&mut self.by_recipient, &packet.to_agent, sequence);
        }
        let first = At {
            time,
            sequence,
            by: None,
        };
        let state = PacketState {
            sequence,
            sent_at: time,
            priority: packet.priority,
            delivery_status: packet.delivery_status,
            // The initial entries are by the sender, who is in the packet: not repeated.
            delivery_history: vec![first.transition(packet.delivery_status, None)],
            work_status: packet.work_status,
            work_history: vec![first.transition(packet.work_status, None)],
            priority_history: vec![first.transition(packet.priority, None)],
            assigned_to: None,
            resolution: None,
            failure_reason: None,
            retry_count: 0,
            updated_at: time,
            packet: sent.into_owned(),
        };
        self.packets.insert(state);
    }

    fn delivery(
        &mut self,
        message_id: &uuid::Uuid,
        thread_id: &str,
        status: DeliveryStatus,
        at: &At<'_>,
        note: Option<String>,
    ) -> Option<&mut PacketState> {
        self.touch_thread(thread_id, at);
        let p: &mut PacketState = self.packets.get_mut(message_id)?;
        p.delivery_status = status;
        p.delivery_history.push(at.transition(status, note));
        p.updated_at = at.time;
        Some(p)
    }

    fn close_if_all_archived(&mut self, thread_id: &str, at: &At<'_>) {
        let Some(thread) = self.threads.get(thread_id) else {
            return;
        };
        let all_archived = thread.packets.iter().all(|id| {
            self.packets
                .get(id)
                .is_some_and(|p| p.work_status == WorkStatus::Archived)
        });
        if all_archived && thread.status == ThreadStatus::Active {
            self.set_status(
                thread_id,
                ThreadStatus::Resolved,
                at,
                Some("all work archived".into()),
            );
        }
    }

    fn set_status(
        &mut self,
        thread_id: &str,
        status: ThreadStatus,
        at: &At<'_>,
        note: Option<String>,
    ) {
        if let Some(thread) = self.touch_thread(thread_id, at) {
            if thread.status != status {
                thread.status = status;
                thread.status_history.push(at.transition(status, note));
            }
        }
    }
}

/// The thread `id`, created active if this is its first event; the age rule is applied
/// and its last activity moved to this event.
fn open_thread<'a>(
    threads: &'a mut Table<ThreadState>,
    id: &str,
    subject: &str,
    opened_by: &str,
    at: &At<'_>,
) -> &'a mut ThreadState {
    let thread = threads.get_or_insert_with(id, || ThreadState {
        thread_id: id.to_owned(),
        subject: subject.to_owned(),
        opened_by: opened_by.to_owned(),
        created_at: at.time,
        participants: Default::default(),
        packets: Vec::new(),
        message_count: 0,
        status: ThreadStatus::Active,
        status_history: vec![at.transition(ThreadStatus::Active, None)],
        last_activity: at.time,
    });
    age(thread, at);
    thread
}

/// The age rule: before an event at `now` touches `thread`, a thread idle for more than
/// 30 days is archived (at the instant the 30 days ran out); then `now` becomes its last
/// activity.
fn age(thread: &mut ThreadState, at: &At<'_>) {
    let now = at.time;
    let limit = thread.last_activity + Duration::days(ARCHIVE_AFTER_DAYS);
    if thread.status != ThreadStatus::Archived && now > limit {
        thread.status = ThreadStatus::Archived;
        thread.status_history.push(Transition {
            status: ThreadStatus::Archived,
            at: limit,
            sequence: at.sequence,
            by: Some(AGE_RULE.into()),
            note: Some(format!("no activity for {ARCHIVE_AFTER_DAYS} days")),
        });
    }
    thread.last_activity = thread.last_activity.max(now);
}

/// Appends `sequence` to `key`'s list, allocating the key only the first time.
/// Sequences arrive in increasing order, so the list stays sorted.
pub(super) fn index(map: &mut BTreeMap<String, Vec<u64>>, key: &str, sequence: u64) {
    match map.get_mut(key) {
        Some(list) => list.push(sequence),
        None => {
            map.insert(key.to_owned(), vec![sequence]);
        }
    }
}
