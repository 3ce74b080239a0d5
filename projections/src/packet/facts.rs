//! [`Facts`]: what subscription and replay filters look at in one event — the Volks,
//! thread, subject, delivery status, type, key and session it is about.

use orchestrata_schemas::events::{Envelope, Event};
use uuid::Uuid;

use super::{PacketIndex, Parties};

/// The filterable facts of one event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Volk aliases the event is about (sender and recipient for packets and their
    /// transitions, plus whoever a transition names).
    pub volks: Vec<String>,
    /// Its thread, for CXP events.
    pub thread_id: Option<String>,
    /// The packet or thread subject, when known.
    pub subject: Option<String>,
    /// The delivery status it records (`queued`, `delivered`, `acknowledged`, `failed`).
    pub delivery_status: Option<&'static str>,
    /// Its event type, e.g. `packet_sent`.
    pub event_type: &'static str,
    /// Its record key.
    pub key: String,
    /// The session it is about (session.events).
    pub session_id: Option<String>,
}

fn looks_like_alias(s: &str) -> bool {
    s.starts_with("U:") && s.len() == 4
}

/// The message id of a packet transition (an event about a packet that does not carry
/// the packet itself); `None` for every other event.
pub fn transition_of(event: &Event) -> Option<&Uuid> {
    match event {
        Event::PacketDelivered(e) => Some(&e.message_id),
        Event::PacketAcknowledged(e) => Some(&e.message_id),
        Event::PacketFailed(e) => Some(&e.message_id),
        Event::PacketRetried(e) => Some(&e.message_id),
        Event::WorkStatusChanged(e) => Some(&e.message_id),
        Event::PriorityChanged(e) => Some(&e.message_id),
        _ => None,
    }
}

/// The facts of `envelope`; a packet transition gets its packet's sender, recipient
/// and subject from `index`.
///
/// A pure function of the log: it reads only `envelope` and the first `packet_sent`
/// of the same message id *before* it, so the answer is the same whenever `index` has
/// folded `cxp.traffic` up to `envelope.sequence` (check [`PacketIndex::settles`]) —
/// whatever was replayed, subscribed or folded before.
pub fn facts_of(envelope: &Envelope, index: &PacketIndex) -> Facts {
    let parties = transition_of(&envelope.record.event).and_then(|id| index.parties(id));
    facts_with(envelope, parties)
}

/// The facts of `envelope`, given the parties of the packet it is a transition of
/// (found in memory or read from the store; a `packet_sent` at or after `envelope`
/// does not count and is ignored here). For an index that let packets go: see
/// [`PacketIndex::lookup`].
pub fn facts_with(envelope: &Envelope, parties: Option<Parties<'_>>) -> Facts {
    let record = &envelope.record;
    let mut facts = Facts {
        event_type: record.event.event_type(),
        key: record.key.clone(),
        ..Facts::default()
    };
    let parties = parties.filter(|p| p.sequence < envelope.sequence);
    if let (Some(_), Some(p)) = (transition_of(&record.event), parties) {
        facts.volks.push(p.from.to_owned());
        facts.volks.push(p.to.to_owned());
        facts.subject = Some(p.subject.to_owned());
    }
    match &record.event {
        Event::PacketSent(e) => {
            let p = &e.packet;
            facts.volks = vec![p.from_agent.clone(), p.to_agent.clone()];
            facts.thread_id = Some(p.thread_id.clone());
            facts.subject = Some(p.subject.clone());
            facts.delivery_status = Some("queued");
        }
        Event::PacketDelivered(e) => {
            facts.volks.push(e.to_agent.clone());
            facts.thread_id = Some(e.thread_id.clone());
            facts.delivery_status = Some("delivered");
        }
        Event::PacketAcknowledged(e) => {
            facts.volks.push(e.acknowledged_by.clone());
            facts.thread_id = Some(e.thread_id.clone());
            facts.delivery_status = Some("acknowledged");
        }
        Event::PacketFailed(e) => {
            facts.thread_id = Some(e.thread_id.clone());
            facts.delivery_status = Some("failed");
        }
        Event::PacketRetried(e) => {
            facts.thread_id = Some(e.thread_id.clone());
            facts.delivery_status = Some("queued");
        }
        Event::WorkStatusChanged(e) => facts.thread_id = Some(e.thread_id.clone()),
        Event::PriorityChanged(e) => facts.thread_id = Some(e.thread_id.clone()),
        Event::ThreadOpened(e) => {
            facts.volks = e.participants.clone();
            facts.volks.push(e.opened_by.clone());
            facts.thread_id = Some(e.thread_id.clone());
            facts.subject = Some(e.subject.clone());
        }
        Event::ThreadClosed(e) => facts.thread_id = Some(e.thread_id.clone()),
        Event::ThreadReopened(e) => facts.thread_id = Some(e.thread_id.clone()),
        Event::ThreadArchived(e) => facts.thread_id = Some(e.thread_id.clone()),
        Event::DecisionRecorded(e) => facts.volks.push(e.subject.clone()),
        Event::SessionOpened(_)
        | Event::SessionClosed(_)
        | Event::SessionRecovered(_)
        | Event::SessionContextUpdated(_)
        | Event::SessionFactAsserted(_)
        | Event::SessionErrorOccurred(_) => facts.session_id = Some(record.key.clone()),
        _ => {}
    }
    if looks_like_alias(&record.key) && !facts.volks.contains(&record.key) {
        facts.volks.push(record.key.clone());
    }
    facts
}
