//! The packets and decisions the graph keeps, as typed records.
//!
//! A packet brings a node with twelve properties and three or four relationships; a
//! decision a node with twelve and at most one. Held as JSON property maps under
//! string ids, every `cxp.send` built two such maps, formatted half a dozen ids and
//! hashed them, and evicting the oldest packet and decision dropped them again: the
//! graph's fold was the largest single owner of a server's CPU under pipelined sends
//! (17 %). The window turns over in seconds under load and is read rarely (a
//! `knowledge.*` call, the Neo4j sink), so it is kept as what the events say — one
//! record per packet or decision — and its nodes and relationships are written out
//! when read ([`PacketRecord::node`], [`PacketRecord::relationships`]). They are the
//! same nodes and relationships, property for property, that the maps held.

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::{DecisionResult, Packet, SubjectKind};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{Node, NodeLabel, Properties, RelType, Relationship};

/// A packet in the window. Field names are its node's property names, so a node of
/// an earlier stored form reads straight into one (see `legacy.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct PacketRecord {
    pub message_id: Uuid,
    pub from_agent: String,
    pub to_agent: String,
    pub thread_id: String,
    pub subject: String,
    pub priority: i32,
    pub delivery_status: DeliveryStatus,
    pub work_status: WorkStatus,
    pub protocol_version: String,
    pub created_at: DateTime<Utc>,
    pub sent_at: DateTime<Utc>,
    pub in_reply_to: Option<Uuid>,
    /// Metadata `session_id`: the packet is `IN_SESSION` of that session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Set by `packet_failed`.
    #[serde(default)]
    pub failure_reason: Option<String>,
    /// Set by `packet_failed` and `packet_retried`.
    #[serde(default)]
    pub retry_count: Option<i32>,
    /// Set by a work status change that assigns the packet.
    #[serde(default)]
    pub assigned_to: Option<String>,
}

impl PacketRecord {
    /// The record of packet `p`, sent at `at`.
    pub fn new(p: &Packet, at: DateTime<Utc>) -> PacketRecord {
        PacketRecord {
            message_id: p.message_id,
            from_agent: p.from_agent.clone(),
            to_agent: p.to_agent.clone(),
            thread_id: p.thread_id.clone(),
            subject: p.subject.clone(),
            priority: p.priority,
            delivery_status: p.delivery_status,
            work_status: p.work_status,
            protocol_version: p.protocol_version.clone(),
            created_at: p.created_at,
            sent_at: at,
            in_reply_to: p.in_reply_to,
            session_id: p
                .metadata
                .0
                .get("session_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            failure_reason: None,
            retry_count: None,
            assigned_to: None,
        }
    }

    /// Its node id, `packet:<message id>`.
    pub fn id(&self) -> String {
        NodeLabel::Packet.node_id(&self.message_id.to_string())
    }

    /// Its node.
    pub fn node(&self) -> Node {
        let mut properties = props([
            ("message_id", json!(self.message_id.to_string())),
            ("from_agent", json!(self.from_agent)),
            ("to_agent", json!(self.to_agent)),
            ("thread_id", json!(self.thread_id)),
            ("subject", json!(self.subject)),
            ("priority", json!(self.priority)),
            ("delivery_status", json!(self.delivery_status)),
            ("work_status", json!(self.work_status)),
            ("protocol_version", json!(self.protocol_version)),
            ("created_at", json!(self.created_at)),
            ("sent_at", json!(self.sent_at)),
            (
                "in_reply_to",
                json!(self.in_reply_to.map(|u| u.to_string())),
            ),
        ]);
        let optional = [
            (
                "failure_reason",
                self.failure_reason.as_ref().map(|r| json!(r)),
            ),
            ("retry_count", self.retry_count.map(|n| json!(n))),
            ("assigned_to", self.assigned_to.as_ref().map(|a| json!(a))),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                properties.insert(key.to_owned(), value);
            }
        }
        Node {
            id: self.id(),
            label: NodeLabel::Packet,
            properties,
        }
    }

    /// How many relationships it brings (`SENT_BY`, `SENT_TO`, `IN_THREAD`, and
    /// `IN_SESSION` when it names a session).
    pub fn relationship_count(&self) -> usize {
        3 + usize::from(self.session_id.is_some())
    }

    /// The thread's node id.
    pub fn thread(&self) -> String {
        NodeLabel::Thread.node_id(&self.thread_id)
    }

    /// Its relationships, in the order [`relationship_count`](Self::relationship_count)
    /// lists them.
    pub fn relationships(&self) -> Vec<Relationship> {
        let id = self.id();
        let mut ends = vec![
            (RelType::SentBy, NodeLabel::Volk.node_id(&self.from_agent)),
            (RelType::SentTo, NodeLabel::Volk.node_id(&self.to_agent)),
            (RelType::InThread, self.thread()),
        ];
        if let Some(session) = &self.session_id {
            ends.push((RelType::InSession, NodeLabel::Session.node_id(session)));
        }
        ends.into_iter()
            .map(|(rel_type, to)| bare(rel_type, &id, to))
            .collect()
    }
}

/// A decision in the window. Field names are its node's property names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct DecisionRecord {
    pub decision_id: Uuid,
    pub subject_kind: SubjectKind,
    pub subject: String,
    pub action: String,
    pub resource: String,
    pub result: DecisionResult,
    pub rule_trace: Vec<String>,
    pub articles_applied: Vec<String>,
    pub policy_hash: String,
    pub dry_run: bool,
    pub reason: Option<String>,
    pub recorded_at: DateTime<Utc>,
}

impl DecisionRecord {
    /// The record of decision `d`, recorded at `at` (its goal text and latency are not
    /// kept: the node never had them).
    pub fn new(d: &DecisionRecorded, at: DateTime<Utc>) -> DecisionRecord {
        DecisionRecord {
            decision_id: d.decision_id,
            subject_kind: d.subject_kind,
            subject: d.subject.clone(),
            action: d.action.clone(),
            resource: d.resource.clone(),
            result: d.result,
            rule_trace: d.rule_trace.clone(),
            articles_applied: d.articles_applied.clone(),
            policy_hash: d.policy_hash.clone(),
            dry_run: d.dry_run,
            reason: d.reason.clone(),
            recorded_at: at,
        }
    }

    /// Its node id, `decision:<decision id>`.
    pub fn id(&self) -> String {
        NodeLabel::Decision.node_id(&self.decision_id.to_string())
    }

    /// The Volk it is about, if its subject is one (`DECIDED_ABOUT`).
    pub fn about(&self) -> Option<&str> {
        (self.subject_kind == SubjectKind::Volk && !self.subject.is_empty())
            .then_some(self.subject.as_str())
    }

    /// Its node.
    pub fn node(&self) -> Node {
        Node {
            id: self.id(),
            label: NodeLabel::Decision,
            properties: props([
                ("decision_id", json!(self.decision_id.to_string())),
                ("subject_kind", json!(self.subject_kind)),
                ("subject", json!(self.subject)),
                ("action", json!(self.action)),
                ("resource", json!(self.resource)),
                ("result", json!(self.result)),
                ("rule_trace", json!(self.rule_trace)),
                ("articles_applied", json!(self.articles_applied)),
                ("policy_hash", json!(self.policy_hash)),
                ("dry_run", json!(self.dry_run)),
                ("reason", json!(self.reason)),
                ("recorded_at", json!(self.recorded_at)),
            ]),
        }
    }

    /// Its relationships: `DECIDED_ABOUT` the Volk it is about, if any.
    pub fn relationships(&self) -> Vec<Relationship> {
        self.about()
            .map(|volk| {
                bare(
                    RelType::DecidedAbout,
                    &self.id(),
                    NodeLabel::Volk.node_id(volk),
                )
            })
            .into_iter()
            .collect()
    }
}

/// Where the item of ordinal `ordinal` sits in a window whose first kept item has
/// ordinal `first` (`None` for one evicted before it).
pub(super) fn position(ordinal: u64, first: u64) -> Option<usize> {
    usize::try_from(ordinal.checked_sub(first)?).ok()
}

/// A relationship without properties.
fn bare(rel_type: RelType, from: &str, to: String) -> Relationship {
    Relationship {
        id: rel_type.rel_id(from, &to),
        rel_type,
        from: from.to_owned(),
        to,
        properties: Properties::new(),
    }
}

/// A property map from `(name, value)` pairs, built in one go.
pub(super) fn props<const N: usize>(values: [(&str, Value); N]) -> Properties {
    values.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
