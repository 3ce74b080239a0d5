//! The Postman (REQ-004-INTG-010..013): how the kernel reacts to its own events.
//!
//! Every record the writer emits goes through `Emitter::emit`: folded into the state,
//! queued for the append, then the Postman reacts —
//!
//! - a packet that enters `queued` (sent, retried) is admitted to its recipient's
//!   mailbox, or fails at once (`packet_failed`) when the recipient is deregistered or
//!   unhealthy or its mailbox is full;
//! - a failure within the retry budget schedules a retry after an exponential backoff
//!   ([`KernelConfig::backoff`]); a failure past it leaves the packet `failed` and sends
//!   the sender a `delivery_failed` packet from `U:PS` in the same thread;
//! - a full mailbox is backpressure, not a fault a timer can fix: that failure is final
//!   (`will_retry: false`, the sender is told at once and by the notice), so a recipient
//!   that stops reading costs its senders two events per packet rather than eight. The
//!   sender (or an operator, `retry`) resends once the recipient has made room;
//! - a Volk that is deregistered or turns unhealthy fails the packets queued for it.
//!
//! Delivery itself is a pull: `Emitter::deliver` hands a recipient the next packets
//! of its queue in serving order (priority desc, then time asc) when it reads its inbox.
//! Reactions are never run while rebuilding from the log: they already happened.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::{CxpPacket, DeliveryStatus, Priority, VolkAlias};
use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::types::Health;
use orchestrata_schemas::events::{Event, EventRecord};
use uuid::Uuid;

use super::convert::{self, SESSION_KEY};
use super::decide::{self, Ctx};
use super::state::KernelState;
use super::KernelConfig;

/// The Postman's own alias.
pub const POSTMAN: &str = "U:PS";

/// Subject of the packet that tells a sender its packet could not be delivered.
pub const DELIVERY_FAILED_SUBJECT: &str = "delivery_failed";

/// Pending retries: (due time, packet, retries used when it failed).
#[derive(Debug, Default)]
pub(crate) struct RetrySchedule {
    due: BTreeSet<(DateTime<Utc>, Uuid, u32)>,
}

impl RetrySchedule {
    /// The schedule implied by a state folded from the log: every failed packet that
    /// may still retry, due `backoff` after its last failure.
    pub fn rebuild(state: &KernelState, config: &KernelConfig) -> Self {
        let mut s = RetrySchedule::default();
        for p in state.retryable() {
            if p.packet.can_retry() {
                let failed_at = p
                    .packet
                    .delivery_history()
                    .last()
                    .map_or(p.packet.timestamp(), |c| c.at);
                s.add(
                    failed_at,
                    config,
                    p.packet.message_id(),
                    p.packet.retry_count(),
                );
            }
        }
        s
    }

    fn add(&mut self, failed_at: DateTime<Utc>, config: &KernelConfig, id: Uuid, used: u32) {
        let wait =
            chrono::Duration::from_std(config.backoff(used)).unwrap_or(chrono::Duration::MAX);
        let at = failed_at
            .checked_add_signed(wait)
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        self.due.insert((at, id, used));
    }

    /// When the next retry is due.
    pub fn next_due(&self) -> Option<DateTime<Utc>> {
        self.due.first().map(|(at, _, _)| *at)
    }

    /// Removes and returns the retries due at `now`.
    pub fn take_due(&mut self, now: DateTime<Utc>) -> Vec<(Uuid, u32)> {
        let mut out = Vec::new();
        while let Some(first) = self.due.first().copied() {
            if first.0 > now {
                break;
            }
            self.due.remove(&first);
            out.push((first.1, first.2));
        }
        out
    }
}

/// Folds records into the state, collects them for the append and runs the Postman's
/// reactions. One per command (or timer tick / inbox read) of a batch.
pub(crate) struct Emitter<'a> {
    pub state: &'a mut KernelState,
    pub config: &'a KernelConfig,
    pub retries: &'a mut RetrySchedule,
    pub out: &'a mut Vec<EventRecord>,
    pub now: DateTime<Utc>,
    /// The command whose consequences these are, if any.
    pub command_id: Option<Uuid>,
    /// The principal whose command this is: stamped on every record emitted (the
    /// command's events and the Postman's reactions to them) that names none.
    pub principal: Option<String>,
}

enum Reaction {
    Admit(Uuid),
    Schedule(DateTime<Utc>, Uuid, u32),
    Notify(Uuid),
    FailQueued(String, String),
    Nothing,
}

impl Emitter<'_> {
    fn cx(&self) -> Ctx<'_> {
        Ctx {
            state: self.state,
            now: self.now,
            command_id: self.command_id,
            issuer: POSTMAN,
            source: "postman",
        }
    }

    /// Folds `record`, keeps it for the append and lets the Postman react.
    pub fn emit(&mut self, mut record: EventRecord) {
        if record.principal.is_none() {
            record.principal.clone_from(&self.principal);
        }
        self.state.apply(&record);
        let reaction = match &record.event {
            Event::PacketSent(e) => Reaction::Admit(e.packet.message_id),
            Event::PacketRetried(e) => Reaction::Admit(e.message_id),
            Event::PacketFailed(e) if e.will_retry => Reaction::Schedule(
                record.timestamp,
                e.message_id,
                u32::try_from(e.retry_count).unwrap_or(0),
            ),
            Event::PacketFailed(e) => Reaction::Notify(e.message_id),
            Event::VolkDeregistered(e) => {
                Reaction::FailQueued(e.alias.clone(), "deregistered".into())
            }
            Event::VolkHealthChanged(e) if e.new == Health::Unhealthy => {
                Reaction::FailQueued(e.alias.clone(), "unhealthy".into())
            }
            _ => Reaction::Nothing,
        };
        self.out.push(record);
        match reaction {
            Reaction::Admit(id) => self.admit(id),
            Reaction::Schedule(at, id, used) => self.retries.add(at, self.config, id, used),
            Reaction::Notify(id) => self.notify(id),
            Reaction::FailQueued(alias, why) => self.fail_queued(&alias, &why),
            Reaction::Nothing => {}
        }
    }

    /// A packet entered `queued`: it stays if its recipient can take it, else fails.
    fn admit(&mut self, id: Uuid) {
        let Some(p) = self.state.packet(&id) else {
            return;
        };
        if p.packet.delivery_status() != DeliveryStatus::Queued {
            return;
        }
        let to = p.packet.to_agent();
        // (reason, whether a timed retry may help)
        let why = match self.state.volk(to.as_str()).map(|v| v.availability()) {
            None => Some((format!("recipient {to} is not registered"), true)),
            Some(Err(state)) => Some((format!("recipient {to} is {state}"), true)),
            Some(Ok(())) if self.state.mailbox_len(to) > self.config.inbox_capacity => Some((
                format!(
                    "inbox of {to} is full ({} packets)",
                    self.config.inbox_capacity
                ),
                false,
            )),
            Some(Ok(())) => None,
        };
        if let Some((why, retry)) = why {
            let record = decide::packets::failed_with(&self.cx(), &p, &why, retry);
            self.emit(record);
        }
    }

    /// Fails every packet queued for `alias`.
    fn fail_queued(&mut self, alias: &str, why: &str) {
        let Ok(alias) = VolkAlias::parse(alias) else {
            return;
        };
        while let Some(id) = self.state.next_queued(alias) {
            let Some(p) = self.state.packet(&id) else {
                break;
            };
            let record =
                decide::packets::failed(&self.cx(), &p, &format!("recipient {alias} is {why}"));
            self.emit(record);
        }
    }

    /// The packet failed for good: tell its sender (unless the sender is the Postman).
    fn notify(&mut self, id: Uuid) {
        let Some(p) = self.state.packet(&id) else {
            return;
        };
        let (from, to) = (p.packet.from_agent(), p.packet.to_agent());
        let Ok(postman) = VolkAlias::parse(POSTMAN) else {
            return;
        };
        if from == postman {
            return;
        }
        let body = serde_json::json!({
            "message_id": id,
            "to_agent": to.as_str(),
            "subject": p.packet.subject(),
            "reason": p.packet.failure_reason().unwrap_or("unknown"),
            "retries": p.packet.retry_count(),
        });
        let built = CxpPacket::new_at(postman, from, DELIVERY_FAILED_SUBJECT, body, self.now)
            .and_then(|n| n.with_thread_id(p.packet.thread_id()))
            .map(|n| n.with_priority(Priority::HIGH));
        let mut notice = match built {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(message_id = %id, error = %e, "cannot build the delivery_failed notice");
                return;
            }
        };
        if let Some(session) = &p.session {
            notice.metadata_mut().insert(
                SESSION_KEY.into(),
                serde_json::Value::String(session.clone()),
            );
        }
        let thread = p.packet.thread_id().to_owned();
        let record = self.cx().record(
            &thread,
            PacketSent {
                packet: convert::to_record(&notice, Some(id)),
            },
        );
        self.emit(record);
    }

    /// A retry timer fired for `id`, which had used `used` retries when it failed.
    pub fn retry_due(&mut self, id: Uuid, used: u32) {
        let Some(p) = self.state.packet(&id) else {
            return;
        };
        if !p.packet.can_retry() || p.packet.retry_count() != used {
            return; // retried or given up by someone else meanwhile
        }
        let record = decide::packets::retried(&self.cx(), &p);
        self.emit(record);
    }

    /// Hands `alias` the next queued packets (serving order) until it holds `limit`
    /// delivered, unacknowledged packets.
    pub fn deliver(&mut self, alias: VolkAlias, limit: usize) {
        while self.state.delivered_count(alias) < limit {
            let Some(id) = self.state.next_queued(alias) else {
                break;
            };
            let Some(p) = self.state.packet(&id) else {
                break;
            };
            let record = decide::packets::delivered(&self.cx(), &p);
            self.emit(record);
            self.state.pop_queued(alias);
        }
    }
}
