//! What subscription filters look at: the Volks, thread, subject and delivery status an
//! event is about.
//!
//! Only `packet_sent` carries the whole packet; later transitions (`packet_delivered`,
//! `packet_acknowledged`...) carry the message id alone. The [`PacketIndex`] remembers
//! sender, recipient and subject of recent packets by message id so that a `volk_id` or
//! `subject` filter also matches a packet's later transitions.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;
use orchestrata_schemas::events::{Envelope, Event};
use uuid::Uuid;

/// Sender, recipient and subject of a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketFacts {
    /// Sender alias.
    pub from: String,
    /// Recipient alias.
    pub to: String,
    /// Subject line.
    pub subject: String,
}

/// Recent packets by message id (bounded, least recently used evicted).
pub struct PacketIndex {
    cache: Mutex<LruCache<Uuid, Arc<PacketFacts>>>,
}

impl PacketIndex {
    /// An index remembering up to `capacity` packets.
    pub fn new(capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity.max(1)).unwrap_or(NonZeroUsize::MIN);
        PacketIndex {
            cache: Mutex::new(LruCache::new(capacity)),
        }
    }

    /// Learns from `packet_sent` events; ignores everything else.
    pub fn learn(&self, envelope: &Envelope) {
        if let Event::PacketSent(sent) = &envelope.record.event {
            let p = &sent.packet;
            let facts = Arc::new(PacketFacts {
                from: p.from_agent.clone(),
                to: p.to_agent.clone(),
                subject: p.subject.clone(),
            });
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.put(p.message_id, facts);
        }
    }

    /// What is known about `message_id`.
    pub fn get(&self, message_id: &Uuid) -> Option<Arc<PacketFacts>> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.get(message_id).cloned()
    }
}

/// The filterable facts of one event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Volk aliases the event is about (sender and recipient for packets).
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

/// Extracts the facts of `envelope`, completing packet transitions from `index`.
pub fn facts_of(envelope: &Envelope, index: &PacketIndex) -> Facts {
    let record = &envelope.record;
    let mut facts = Facts {
        event_type: record.event.event_type(),
        key: record.key.clone(),
        ..Facts::default()
    };
    let from_index = |message_id: &Uuid, facts: &mut Facts| {
        if let Some(p) = index.get(message_id) {
            facts.volks.push(p.from.clone());
            facts.volks.push(p.to.clone());
            facts.subject = Some(p.subject.clone());
        }
    };
    match &record.event {
        Event::PacketSent(e) => {
            let p = &e.packet;
            facts.volks = vec![p.from_agent.clone(), p.to_agent.clone()];
            facts.thread_id = Some(p.thread_id.clone());
            facts.subject = Some(p.subject.clone());
            facts.delivery_status = Some("queued");
        }
        Event::PacketDelivered(e) => {
            from_index(&e.message_id, &mut facts);
            facts.volks.push(e.to_agent.clone());
            facts.thread_id = Some(e.thread_id.clone());
            facts.delivery_status = Some("delivered");
        }
        Event::PacketAcknowledged(e) => {
            from_index(&e.message_id, &mut facts);
            facts.volks.push(e.acknowledged_by.clone());
            facts.thread_id = Some(e.thread_id.clone());
            facts.delivery_status = Some("acknowledged");
        }
        Event::PacketFailed(e) => {
            from_index(&e.message_id, &mut facts);
            facts.thread_id = Some(e.thread_id.clone());
            facts.delivery_status = Some("failed");
        }
        Event::PacketRetried(e) => {
            from_index(&e.message_id, &mut facts);
            facts.thread_id = Some(e.thread_id.clone());
            facts.delivery_status = Some("queued");
        }
        Event::WorkStatusChanged(e) => {
            from_index(&e.message_id, &mut facts);
            facts.thread_id = Some(e.thread_id.clone());
        }
        Event::PriorityChanged(e) => {
            from_index(&e.message_id, &mut facts);
            facts.thread_id = Some(e.thread_id.clone());
        }
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
