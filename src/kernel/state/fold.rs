//! [`KernelState::apply`]: the one fold, used at start and after every append.

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::{
    CxpError, CxpPacket, DeliveryStatus, Priority, VolkAlias, WorkStatus,
};
use orchestrata_schemas::events::types::Health;
use orchestrata_schemas::events::{Event, EventRecord};
use uuid::Uuid;

use super::{
    KernelState, PacketState, SessionState, SessionStatus, ThreadState, ThreadStatus, VolkState,
    WorkflowStatus,
};
use crate::kernel::convert;

impl KernelState {
    /// Folds one event into the state. Events of other areas (governance,
    /// presence) are ignored. An event that does not fit the state (which
    /// cannot happen for events this kernel validated) is skipped with a warning.
    pub fn apply(&mut self, record: &EventRecord) {
        self.applied += 1;
        self.packets.tick(record.timestamp);
        self.threads.tick(record.timestamp);
        self.executed.tick(record.timestamp);
        if let Some(id) = record.command_id {
            self.executed.insert(id, ());
        }
        let at = record.timestamp;
        self.agents.apply(record);
        self.apply_provider(&record.event);
        match &record.event {
            Event::PacketSent(e) => self.packet_sent(&e.packet, at),
            Event::PacketDelivered(e) => self.on_packet(e.message_id, at, |p, at| {
                p.transition_delivery(DeliveryStatus::Delivered, at)
            }),
            Event::PacketAcknowledged(e) => self.on_packet(e.message_id, at, |p, at| {
                p.transition_delivery(DeliveryStatus::Acknowledged, at)
            }),
            Event::PacketFailed(e) => {
                let reason = e.reason.clone();
                self.on_packet(e.message_id, at, move |p, at| p.fail_delivery(reason, at));
                if !e.will_retry {
                    // A final failure (a full inbox) is not rescheduled after a restart.
                    self.retryable.remove(&e.message_id);
                }
            }
            Event::PacketRetried(e) => {
                self.on_packet(e.message_id, at, |p, at| p.retry_delivery(at))
            }
            Event::WorkStatusChanged(e) => {
                let e = e.clone();
                self.on_packet(e.message_id, at, move |p, at| {
                    match e.new {
                        WorkStatus::InProgress => {
                            let who = e
                                .assigned_to
                                .as_deref()
                                .and_then(|a| VolkAlias::parse(a).ok())
                                .unwrap_or(p.to_agent());
                            p.start_work(who, at)?;
                        }
                        WorkStatus::Resolved => p.resolve_work(
                            e.resolution.map(|j| j.0).unwrap_or(serde_json::Value::Null),
                            at,
                        )?,
                        WorkStatus::Pending => p.requeue_work(at)?,
                        WorkStatus::Archived => p.archive_work(at)?,
                    }
                    if let Some(note) = e.notes.filter(|n| !n.trim().is_empty()) {
                        let author = VolkAlias::parse(&e.changed_by).unwrap_or(p.to_agent());
                        p.add_note(author, note, at)?;
                    }
                    Ok(())
                })
            }
            Event::PriorityChanged(e) => {
                let id = e.message_id;
                let new = e.new;
                self.on_packet(id, at, move |p, at| {
                    p.set_priority(Priority::new(i64::from(new))?, at)
                });
                if self
                    .packets
                    .get(&id)
                    .is_some_and(|s| s.packet.delivery_status() == DeliveryStatus::Queued)
                {
                    self.enqueue(id);
                }
            }
            Event::ThreadOpened(e) => {
                let thread = self.thread_entry(&e.thread_id, at);
                for who in &e.participants {
                    thread.participants.insert(who);
                }
            }
            Event::ThreadClosed(e) => self.thread_status(&e.thread_id, ThreadStatus::Closed, at),
            Event::ThreadReopened(e) => self.thread_status(&e.thread_id, ThreadStatus::Active, at),
            Event::ThreadArchived(e) => {
                self.thread_status(&e.thread_id, ThreadStatus::Archived, at)
            }
            Event::SessionOpened(e) => {
                self.sessions.insert(
                    e.session_id.clone(),
                    SessionState {
                        status: SessionStatus::Open,
                        portfolio_id: e.portfolio_id.clone(),
                        goals: e.goals.clone(),
                        packets: Vec::new(),
                        threads: Default::default(),
                        carryover: Vec::new(),
                        summary: None,
                        opened_at: at,
                        closed_at: None,
                    },
                );
            }
            Event::SessionClosed(e) => match self.sessions.get_mut(&e.session_id) {
                Some(s) => {
                    s.status = SessionStatus::Closed;
                    s.carryover = e.carryover.clone();
                    s.summary = Some(e.summary.clone());
                    s.closed_at = Some(at);
                }
                None => skip(record, "the session was never opened"),
            },
            Event::SessionRecovered(e) => match self.sessions.get_mut(&e.session_id) {
                Some(s) => s.status = SessionStatus::Open,
                None => skip(record, "the session was never opened"),
            },
            Event::VolkRegistered(e) => {
                self.volks.insert(
                    e.alias.clone(),
                    VolkState {
                        registered: true,
                        health: Health::Healthy,
                        parent: e.parent.clone(),
                        capabilities: e.capabilities.clone(),
                    },
                );
            }
            Event::VolkDeregistered(e) => match self.volks.get_mut(&e.alias) {
                Some(v) => v.registered = false,
                None => skip(record, "the Volk was never registered"),
            },
            Event::VolkHealthChanged(e) => match self.volks.get_mut(&e.alias) {
                Some(v) => v.health = e.new,
                None => skip(record, "the Volk was never registered"),
            },
            Event::VolkSpawned(e) => {
                self.volks.insert(
                    e.alias.clone(),
                    VolkState {
                        registered: true,
                        health: Health::Healthy,
                        parent: Some(e.parent.clone()),
                        capabilities: Vec::new(),
                    },
                );
            }
            Event::VolkTerminated(e) => {
                if let Some(v) = self.volks.get_mut(&e.alias) {
                    v.registered = false;
                }
            }
            Event::WorkflowStarted(e) => {
                self.workflows
                    .insert(e.workflow_id.clone(), WorkflowStatus::Running);
            }
            Event::WorkflowResumed(e) => {
                self.workflows
                    .insert(e.workflow_id.clone(), WorkflowStatus::Running);
            }
            Event::WorkflowPaused(e) => {
                self.workflows
                    .insert(e.workflow_id.clone(), WorkflowStatus::Paused);
            }
            Event::WorkflowCancelled(e) => {
                self.workflows
                    .insert(e.workflow_id.clone(), WorkflowStatus::Finished);
            }
            Event::WorkflowCompleted(e) => {
                self.workflows
                    .insert(e.workflow_id.clone(), WorkflowStatus::Finished);
            }
            Event::WorkflowFailed(e) => {
                self.workflows
                    .insert(e.workflow_id.clone(), WorkflowStatus::Finished);
            }
            _ => {}
        }
    }

    fn packet_sent(
        &mut self,
        packet: &orchestrata_schemas::events::types::Packet,
        at: DateTime<Utc>,
    ) {
        let cxp = match convert::to_cxp(packet, self.max_retries) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(message_id = %packet.message_id, error = %e, "skipping an invalid packet_sent");
                return;
            }
        };
        let id = cxp.message_id();
        let session = convert::session_of(&cxp);
        let thread_id = cxp.thread_id().to_owned();
        let (from, to) = (cxp.from_agent().to_string(), cxp.to_agent().to_string());
        let status = cxp.delivery_status();
        let queued_at = cxp.timestamp();
        self.packets.insert(
            id,
            PacketState {
                packet: cxp,
                session: session.clone(),
                in_reply_to: packet.in_reply_to,
                queued_at,
            },
        );
        let thread = self.thread_entry(&thread_id, at);
        thread.participants.insert(&from);
        thread.participants.insert(&to);
        thread.packets.push(id);
        thread.session = session.clone();
        if let Some(s) = session.and_then(|s| self.sessions.get_mut(&s)) {
            s.packets.push(id);
            s.threads.insert(thread_id);
        }
        if status == DeliveryStatus::Queued {
            // Entering the mailbox: counted and queued like a retry.
            self.track(id, DeliveryStatus::Acknowledged, DeliveryStatus::Queued);
        }
    }

    fn on_packet(
        &mut self,
        id: Uuid,
        at: DateTime<Utc>,
        f: impl FnOnce(&mut CxpPacket, DateTime<Utc>) -> Result<(), CxpError>,
    ) {
        let Some(state) = self.packets.get_mut(&id) else {
            tracing::warn!(message_id = %id, "skipping an event about an unknown packet");
            return;
        };
        let old = state.packet.delivery_status();
        let at = at.max(state.packet.timestamp());
        if let Err(e) = f(&mut state.packet, at) {
            tracing::warn!(message_id = %id, error = %e, "skipping an event that does not fit the packet");
            return;
        }
        let new = state.packet.delivery_status();
        let thread_id = state.packet.thread_id().to_owned();
        if old != new {
            self.track(id, old, new);
        }
        if let Some(t) = self.threads.get_mut(&thread_id) {
            t.last_activity = t.last_activity.max(at);
        }
    }

    fn thread_entry(&mut self, id: &str, at: DateTime<Utc>) -> &mut ThreadState {
        let t = self
            .threads
            .get_or_insert_with(&id.to_owned(), || ThreadState {
                status: ThreadStatus::Active,
                session: None,
                participants: Default::default(),
                packets: Vec::new(),
                opened_at: at,
                last_activity: at,
            });
        t.last_activity = t.last_activity.max(at);
        t
    }

    fn thread_status(&mut self, id: &str, status: ThreadStatus, at: DateTime<Utc>) {
        let t = self.thread_entry(id, at);
        t.status = status;
    }
}

fn skip(record: &EventRecord, why: &str) {
    tracing::warn!(event_id = %record.event_id, event_type = record.event_type(), why, "skipping an event");
}
