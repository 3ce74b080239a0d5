//! How each event changes the [`GraphView`].

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::DeliveryStatus;
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::Packet;
use orchestrata_schemas::events::{Envelope, Event, Stream};
use serde_json::{json, Value};
use uuid::Uuid;

use super::window::{position, props, DecisionRecord, PacketRecord};
use super::{
    GraphView, Node, NodeLabel, Properties, RelType, Relationship, MAX_DECISIONS, MAX_PACKETS,
};
use crate::stored::StoredEntry;
use crate::{Changes, Checkpoint, StoredError, View, ViewName};

impl View for GraphView {
    const NAME: ViewName = ViewName::Graph;
    const STREAMS: &'static [Stream] = &[
        Stream::CxpTraffic,
        Stream::VolkLifecycle,
        Stream::SessionEvents,
        Stream::GovernanceDecisions,
    ];

    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    fn take_changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        self.changes(all)
    }

    fn from_stored(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        Self::restore(head, entries)
    }

    fn needs_commit(&self) -> bool {
        self.touched_nodes.pressing(self.nodes.len())
            || self.touched_rels.pressing(self.relationships.len())
    }

    fn apply(&mut self, envelope: &Envelope) -> bool {
        if !Self::STREAMS.contains(&envelope.stream)
            || !self.checkpoint.admit(envelope.stream, envelope.sequence)
        {
            return false;
        }
        let at = envelope.record.timestamp;
        match &envelope.record.event {
            Event::PacketSent(e) => self.packet_sent(&e.packet, at),
            Event::PacketDelivered(e) => self.packet_update(&e.message_id, |p| {
                p.delivery_status = DeliveryStatus::Delivered;
            }),
            Event::PacketAcknowledged(e) => self.packet_update(&e.message_id, |p| {
                p.delivery_status = DeliveryStatus::Acknowledged;
            }),
            Event::PacketFailed(e) => self.packet_update(&e.message_id, |p| {
                p.delivery_status = DeliveryStatus::Failed;
                p.failure_reason = Some(e.reason.clone());
                p.retry_count = Some(e.retry_count);
            }),
            Event::PacketRetried(e) => {
                self.packet_update(&e.message_id, |p| p.retry_count = Some(e.attempt));
            }
            Event::WorkStatusChanged(e) => self.packet_update(&e.message_id, |p| {
                p.work_status = e.new;
                if let Some(to) = &e.assigned_to {
                    p.assigned_to = Some(to.clone());
                }
            }),
            Event::PriorityChanged(e) => {
                self.packet_update(&e.message_id, |p| p.priority = e.new);
            }
            Event::ThreadOpened(e) => {
                self.thread(&e.thread_id, &e.subject, &e.opened_by, at);
            }
            Event::ThreadClosed(e) => self.thread_status(&e.thread_id, "resolved"),
            Event::ThreadReopened(e) => self.thread_status(&e.thread_id, "active"),
            Event::ThreadArchived(e) => self.thread_status(&e.thread_id, "archived"),
            Event::VolkRegistered(e) => {
                let id = self.volk(&e.alias);
                self.set(
                    &id,
                    [
                        ("status", json!("registered")),
                        ("capabilities", json!(e.capabilities)),
                        ("protocols", json!(e.protocols)),
                        ("parent", json!(e.parent)),
                        ("session_id", json!(e.session_id)),
                        ("metadata", e.metadata.0.clone()),
                        ("registered_at", json!(at)),
                        ("health", json!("healthy")),
                    ],
                );
                if let Some(parent) = &e.parent {
                    let parent = self.volk(parent);
                    self.link(RelType::ChildOf, &id, &parent, Properties::new());
                }
                if let Some(session) = &e.session_id {
                    let session = self.session(session);
                    self.link(RelType::InSession, &id, &session, Properties::new());
                }
            }
            Event::VolkSpawned(e) => {
                let id = self.volk(&e.alias);
                self.set(
                    &id,
                    [
                        ("status", json!("registered")),
                        ("parent", json!(e.parent)),
                        ("driver", json!(e.driver)),
                        ("purpose", json!(e.purpose)),
                        ("registered_at", json!(at)),
                        ("health", json!("healthy")),
                    ],
                );
                let parent = self.volk(&e.parent);
                self.link(RelType::ChildOf, &id, &parent, Properties::new());
            }
            Event::VolkDeregistered(e) => self.volk_status(&e.alias, "deregistered"),
            Event::VolkTerminated(e) => self.volk_status(&e.alias, "terminated"),
            Event::VolkHealthChanged(e) => {
                let id = self.volk(&e.alias);
                self.set(&id, [("health", json!(e.new))]);
            }
            Event::SessionOpened(e) => {
                let id = self.session(&e.session_id);
                self.set(
                    &id,
                    [
                        ("portfolio_id", json!(e.portfolio_id)),
                        ("goals", json!(e.goals)),
                        ("opened_by", json!(e.opened_by)),
                        ("opened_at", json!(at)),
                        ("status", json!("open")),
                    ],
                );
            }
            Event::SessionClosed(e) => {
                let id = self.session(&e.session_id);
                self.set(
                    &id,
                    [
                        ("status", json!("closed")),
                        ("closed_at", json!(at)),
                        ("summary", json!(e.summary)),
                        ("carryover", json!(e.carryover)),
                    ],
                );
            }
            Event::SessionRecovered(e) => {
                let id = self.session(&e.session_id);
                self.set(&id, [("status", json!("open"))]);
            }
            Event::DecisionRecorded(d) => self.decision(d, at),
            _ => {}
        }
        true
    }
}

impl GraphView {
    /// Makes sure the node exists with its identifying property; returns its id. Never
    /// changes an existing node, so a stream that does not own the label can call it.
    fn ensure(&mut self, label: NodeLabel, key_name: &str, key: &str) -> String {
        let id = label.node_id(key);
        if !self.nodes.contains_key(&id) {
            self.create(&id, label, props([(key_name, json!(key))]));
        }
        id
    }

    /// Adds node `id` (which must not exist yet) with all its properties at once: one
    /// map built in one go, where creating it bare and then setting each property
    /// looked it up and grew its map once per property.
    fn create(&mut self, id: &str, label: NodeLabel, properties: Properties) {
        self.touched_nodes.mark(id, self.nodes.len());
        self.nodes.insert(
            id.to_owned(),
            Node {
                id: id.to_owned(),
                label,
                properties,
            },
        );
    }

    fn volk(&mut self, alias: &str) -> String {
        self.ensure(NodeLabel::Volk, "alias", alias)
    }

    fn session(&mut self, session_id: &str) -> String {
        self.ensure(NodeLabel::Session, "session_id", session_id)
    }

    /// Sets properties of an existing node (nothing if it is gone).
    fn set<const N: usize>(&mut self, id: &str, values: [(&str, Value); N]) {
        let live = self.nodes.len();
        if let Some(node) = self.nodes.get_mut(id) {
            self.touched_nodes.mark(id, live);
            for (k, v) in values {
                put(&mut node.properties, k, v);
            }
        }
    }

    /// Adds (or replaces) the relationship of this type from `from` to `to`.
    fn link(&mut self, rel_type: RelType, from: &str, to: &str, properties: Properties) {
        let id = rel_type.rel_id(from, to);
        self.touched_rels.mark(&id, self.relationships.len());
        self.relationships.insert(
            id.clone(),
            Relationship {
                id,
                rel_type,
                from: from.to_owned(),
                to: to.to_owned(),
                properties,
            },
        );
    }

    /// Volk lifecycle events own the Volk's properties: they create the node if a
    /// registration was never seen, so the result does not depend on whether a packet
    /// naming the Volk came first.
    fn volk_status(&mut self, alias: &str, status: &str) {
        let id = self.volk(alias);
        self.set(&id, [("status", json!(status))]);
    }

    /// The thread's node, created on its first event.
    fn thread(&mut self, thread_id: &str, subject: &str, by: &str, at: DateTime<Utc>) -> String {
        let id = NodeLabel::Thread.node_id(thread_id);
        if !self.nodes.contains_key(&id) {
            let properties = props([
                ("thread_id", json!(thread_id)),
                ("subject", json!(subject)),
                ("opened_by", json!(by)),
                ("created_at", json!(at)),
                ("status", json!("active")),
                ("message_count", json!(0)),
            ]);
            self.create(&id, NodeLabel::Thread, properties);
        }
        id
    }

    fn thread_status(&mut self, thread_id: &str, status: &str) {
        let id = NodeLabel::Thread.node_id(thread_id);
        self.set(&id, [("status", json!(status))]);
    }

    fn packet_sent(&mut self, p: &Packet, at: DateTime<Utc>) {
        if self.packet_at.contains_key(&p.message_id) {
            return; // sent twice: the first one counts
        }
        let record = PacketRecord::new(p, at);
        let from = self.volk(&p.from_agent);
        let to = self.volk(&p.to_agent);
        let thread = self.thread(&p.thread_id, &p.subject, &p.from_agent, at);
        let live = self.nodes.len();
        if let Some(node) = self.nodes.get_mut(&thread) {
            self.touched_nodes.mark(&thread, live);
            bump(&mut node.properties, "message_count");
            if let Some(status) = node.properties.get_mut("status") {
                if status.as_str() == Some("resolved") {
                    *status = json!("active");
                }
            }
        }
        *self.thread_packets.entry(thread).or_default() += 1;
        if let Some(session) = &record.session_id {
            self.session(session);
        }
        // The Volk -> Volk edge counts every packet ever sent between the two: counted
        // in place once it exists (it is the same edge for every packet of the pair).
        let pair = RelType::SentTo.rel_id(&from, &to);
        let live = self.relationships.len();
        if let Some(edge) = self.relationships.get_mut(&pair) {
            bump(&mut edge.properties, "packets");
            self.touched_rels.mark(&pair, live);
        } else {
            self.link(RelType::SentTo, &from, &to, props([("packets", json!(1))]));
        }
        self.window_rels += record.relationship_count();
        let ordinal = self.evicted_packets + self.packets.len() as u64;
        self.packet_at.insert(record.message_id, ordinal);
        self.packets.push_back(record);
        while self.packets.len() > MAX_PACKETS {
            let Some(old) = self.packets.pop_front() else {
                break;
            };
            self.evicted_packets += 1;
            self.packet_at.remove(&old.message_id);
            self.window_rels -= old.relationship_count();
            self.release_thread(&old.thread());
        }
    }

    /// Changes the kept packet `message_id` (nothing if it is not kept).
    fn packet_update(&mut self, message_id: &Uuid, change: impl FnOnce(&mut PacketRecord)) {
        let Some(&ordinal) = self.packet_at.get(message_id) else {
            return;
        };
        let index = position(ordinal, self.evicted_packets);
        if let Some(record) = index.and_then(|i| self.packets.get_mut(i)) {
            change(record);
            self.packet_mark.changed(ordinal);
        }
    }

    fn decision(&mut self, d: &DecisionRecorded, at: DateTime<Utc>) {
        if self.decision_at.contains_key(&d.decision_id) {
            return;
        }
        let record = DecisionRecord::new(d, at);
        if let Some(volk) = record.about() {
            self.volk(volk);
            self.window_rels += 1;
        }
        let ordinal = self.evicted_decisions + self.decisions.len() as u64;
        self.decision_at.insert(record.decision_id, ordinal);
        self.decisions.push_back(record);
        while self.decisions.len() > MAX_DECISIONS {
            let Some(old) = self.decisions.pop_front() else {
                break;
            };
            self.evicted_decisions += 1;
            self.decision_at.remove(&old.decision_id);
            self.window_rels -= usize::from(old.about().is_some());
        }
    }

    /// One packet of thread node `thread` left the window: the thread leaves with its
    /// last one.
    fn release_thread(&mut self, thread: &str) {
        let Some(count) = self.thread_packets.get_mut(thread) else {
            return;
        };
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.thread_packets.remove(thread);
            self.nodes.remove(thread);
            let stored = self.slots.has_node(thread);
            self.touched_nodes.removed(thread, stored, self.nodes.len());
        }
    }

    /// Derives the windows' indexes, relationship count and thread counts from the
    /// records (after a restore, which stores none of them). Returns the thread nodes
    /// no kept packet is in.
    pub(super) fn reindex(&mut self) -> Vec<String> {
        let (packets, decisions) = (self.evicted_packets, self.evicted_decisions);
        self.packet_at = (packets..)
            .zip(&self.packets)
            .map(|(ordinal, p)| (p.message_id, ordinal))
            .collect();
        self.decision_at = (decisions..)
            .zip(&self.decisions)
            .map(|(ordinal, d)| (d.decision_id, ordinal))
            .collect();
        self.window_rels = self
            .packets
            .iter()
            .map(PacketRecord::relationship_count)
            .sum::<usize>()
            + self
                .decisions
                .iter()
                .filter(|d| d.about().is_some())
                .count();
        let mut counts: super::Map<String, u32> = Default::default();
        for packet in &self.packets {
            *counts.entry(packet.thread()).or_default() += 1;
        }
        let idle = self
            .nodes
            .values()
            .filter(|n| n.label == NodeLabel::Thread && !counts.contains_key(&n.id))
            .map(|n| n.id.clone())
            .collect();
        self.thread_packets = counts;
        idle
    }
}

/// Sets property `key`; one already present keeps its key string (no new allocation).
fn put(properties: &mut Properties, key: &str, value: Value) {
    match properties.get_mut(key) {
        Some(slot) => *slot = value,
        None => {
            properties.insert(key.to_owned(), value);
        }
    }
}

/// Adds one to the count in property `key` (absent or not a count: 0).
fn bump(properties: &mut Properties, key: &str) {
    let count = properties.get(key).and_then(Value::as_u64).unwrap_or(0);
    put(properties, key, json!(count + 1));
}
