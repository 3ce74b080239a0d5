//! [`GraphView`]: the knowledge graph — Volks, threads, sessions, packets and decisions
//! as nodes, and how they relate.
//!
//! Folds `cxp.traffic`, `volk.lifecycle`, `session.events` and `governance.decisions`
//! into a property graph:
//!
//! | node | id | from |
//! |------|----|------|
//! | `Volk` | `volk:<alias>` | `registered` / `spawned` (properties), or any packet, parent link or decision naming it (existence only) |
//! | `Thread` | `thread:<thread id>` | `thread_opened`, `packet_sent`, thread status events |
//! | `Session` | `session:<session id>` | `session.events` (properties), or a Volk or packet naming it |
//! | `Packet` | `packet:<message id>` | `packet_sent`, then its delivery / work status events |
//! | `Decision` | `decision:<decision id>` | `decision_recorded` |
//!
//! | relationship | from -> to | meaning |
//! |--------------|------------|---------|
//! | `SENT_BY` | Packet -> Volk | the packet's sender |
//! | `SENT_TO` | Packet -> Volk | the packet's recipient |
//! | `SENT_TO` | Volk -> Volk | the sender has sent the recipient packets (`packets`: how many, ever) |
//! | `IN_THREAD` | Packet -> Thread | the packet's conversation |
//! | `IN_SESSION` | Packet / Volk -> Session | metadata `session_id` of the packet, registration of the Volk |
//! | `CHILD_OF` | Volk -> Volk | the Volk reports to (was spawned by) the other |
//! | `DECIDED_ABOUT` | Decision -> Volk | a governance decision whose subject is that Volk |
//!
//! ## Order independence
//!
//! Each stream owns what it writes: a node's properties are set only by the stream its
//! label belongs to, and other streams only make sure the node exists (with the same
//! identifying property the owner sets). So the view does not depend on how the four
//! streams interleave, as [`View`](crate::View) requires.
//!
//! ## Bounded memory
//!
//! Packets, decisions and threads grow without bound in a running system, so the view
//! keeps the latest [`MAX_PACKETS`] packets and [`MAX_DECISIONS`] decisions: when one
//! more arrives, the oldest (by sequence of its stream) is evicted with its
//! relationships. A thread stays while one of its packets does: it leaves with the last
//! of them (a packet sent to it later brings it back, its `message_count` counting from
//! there; the thread view keeps every thread). So the graph holds at most
//! [`MAX_PACKETS`] threads with packets; a thread opened without any packet (the kernel
//! never emits one) would stay. Volks, sessions and the aggregate Volk -> Volk `SENT_TO`
//! edges (whose `packets` count keeps counting) are kept. The full history stays on the
//! log; `knowledge.query` on Neo4j sees what the sink wrote.

mod fold;
mod legacy;
#[cfg(test)]
mod legacy_tests;
mod read;
mod shape;
mod stored;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod thread_window_tests;
mod window;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::stored::Touched;
use crate::Checkpoint;
use window::{DecisionRecord, PacketRecord};

/// Packets the view keeps; the oldest is evicted when one more is sent.
pub const MAX_PACKETS: usize = 10_000;

/// Decisions the view keeps; the oldest is evicted when one more is recorded.
pub const MAX_DECISIONS: usize = 10_000;

/// A node's label (its kind). Serialized as written in Cypher: `Volk`, `Thread`...
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum NodeLabel {
    /// An agent, by alias.
    Volk,
    /// A conversation thread.
    Thread,
    /// A work session.
    Session,
    /// A CXP packet.
    Packet,
    /// A governance decision.
    Decision,
}

impl NodeLabel {
    /// Every label, in a stable order.
    pub const ALL: [NodeLabel; 5] = [
        NodeLabel::Volk,
        NodeLabel::Thread,
        NodeLabel::Session,
        NodeLabel::Packet,
        NodeLabel::Decision,
    ];

    /// The label as written in Cypher.
    pub const fn as_str(self) -> &'static str {
        match self {
            NodeLabel::Volk => "Volk",
            NodeLabel::Thread => "Thread",
            NodeLabel::Session => "Session",
            NodeLabel::Packet => "Packet",
            NodeLabel::Decision => "Decision",
        }
    }

    /// The prefix of this label's node ids (`volk:U:Ox`).
    pub const fn prefix(self) -> &'static str {
        match self {
            NodeLabel::Volk => "volk",
            NodeLabel::Thread => "thread",
            NodeLabel::Session => "session",
            NodeLabel::Packet => "packet",
            NodeLabel::Decision => "decision",
        }
    }

    /// The id of this label's node with key `key` (an alias, a thread id, a UUID...).
    pub fn node_id(self, key: &str) -> String {
        format!("{}:{key}", self.prefix())
    }

    /// The label written `name` (`Volk`, case-sensitive as in Cypher).
    pub fn parse(name: &str) -> Option<NodeLabel> {
        NodeLabel::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

impl fmt::Display for NodeLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A relationship's type. Serialized as written in Cypher: `SENT_TO`, `CHILD_OF`...
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RelType {
    /// Packet -> recipient Volk, or sender Volk -> recipient Volk.
    SentTo,
    /// Packet -> sender Volk.
    SentBy,
    /// Volk -> the Volk it reports to.
    ChildOf,
    /// Packet -> its thread.
    InThread,
    /// Packet or Volk -> its session.
    InSession,
    /// Decision -> the Volk it was about.
    DecidedAbout,
}

impl RelType {
    /// Every type, in a stable order.
    pub const ALL: [RelType; 6] = [
        RelType::SentTo,
        RelType::SentBy,
        RelType::ChildOf,
        RelType::InThread,
        RelType::InSession,
        RelType::DecidedAbout,
    ];

    /// The type as written in Cypher.
    pub const fn as_str(self) -> &'static str {
        match self {
            RelType::SentTo => "SENT_TO",
            RelType::SentBy => "SENT_BY",
            RelType::ChildOf => "CHILD_OF",
            RelType::InThread => "IN_THREAD",
            RelType::InSession => "IN_SESSION",
            RelType::DecidedAbout => "DECIDED_ABOUT",
        }
    }

    /// The type written `name` (`SENT_TO`, case-sensitive as in Cypher).
    pub fn parse(name: &str) -> Option<RelType> {
        RelType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The id of the relationship of this type from `from` to `to` (one per triple).
    pub fn rel_id(self, from: &str, to: &str) -> String {
        format!("{}:{from}->{to}", self.as_str())
    }
}

impl fmt::Display for RelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Properties of a node or relationship (ordered, so serialization is deterministic).
pub type Properties = BTreeMap<String, Value>;

/// One node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Unique id: `<label prefix>:<key>`, e.g. `volk:U:Ox`.
    pub id: String,
    /// What it is.
    pub label: NodeLabel,
    /// Everything known about it (JSON values; nested ones stay nested).
    pub properties: Properties,
}

/// One relationship.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relationship {
    /// Unique id: `<TYPE>:<from>-><to>`.
    pub id: String,
    /// What it means.
    #[serde(rename = "type")]
    pub rel_type: RelType,
    /// Source node id.
    pub from: String,
    /// Target node id.
    pub to: String,
    /// Its properties.
    pub properties: Properties,
}

/// A node search; set fields combine with AND.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeQuery {
    /// Only nodes with this label.
    pub label: Option<NodeLabel>,
    /// Only nodes whose properties hold each of these values exactly.
    pub properties: Properties,
}

impl NodeQuery {
    /// Whether `node` matches.
    pub fn matches(&self, node: &Node) -> bool {
        self.label.is_none_or(|l| l == node.label) && has_all(&node.properties, &self.properties)
    }
}

/// A relationship search; set fields combine with AND.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RelQuery {
    /// Only relationships of this type.
    pub rel_type: Option<RelType>,
    /// Only relationships leaving this node id.
    pub from: Option<String>,
    /// Only relationships entering this node id.
    pub to: Option<String>,
    /// Only relationships whose properties hold each of these values exactly.
    pub properties: Properties,
}

impl RelQuery {
    /// Whether `rel` matches.
    pub fn matches(&self, rel: &Relationship) -> bool {
        self.rel_type.is_none_or(|t| t == rel.rel_type)
            && self.from.as_ref().is_none_or(|f| *f == rel.from)
            && self.to.as_ref().is_none_or(|t| *t == rel.to)
            && has_all(&rel.properties, &self.properties)
    }
}

fn has_all(properties: &Properties, wanted: &Properties) -> bool {
    wanted.iter().all(|(k, v)| properties.get(k) == Some(v))
}

/// Nodes or relationships by id (see [`GraphView`]'s `nodes`).
type Table<V> = hashbrown::HashMap<String, V, foldhash::fast::RandomState>;

/// A hash map with the fast hasher the view uses everywhere.
type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::RandomState>;

/// The knowledge graph view. See the module docs for its nodes, relationships, order
/// independence and memory bound.
///
/// Volks, threads and sessions are held as nodes and relationships; the packet and
/// decision windows as typed records whose nodes and relationships are written out
/// when read (`window.rs` says why). Serialized, it is the same either way: every
/// node and relationship by id, and the windows as the ids each kept item brought
/// (`shape.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphView {
    checkpoint: Checkpoint,
    /// Hashed by id, not ordered: every event looks up several ids that share long
    /// prefixes, which a tree paid in string compares. Readers that promise an order
    /// sort what they return ([`GraphView::nodes`], serialization).
    nodes: Table<Node>,
    relationships: Table<Relationship>,
    /// Packets in send order (oldest first).
    packets: VecDeque<PacketRecord>,
    /// Decisions in record order (oldest first).
    decisions: VecDeque<DecisionRecord>,
    /// Packets evicted so far: the ordinal of `packets[0]`.
    evicted_packets: u64,
    /// Decisions evicted so far: the ordinal of `decisions[0]`.
    evicted_decisions: u64,
    /// The ordinal of each kept packet by message id (derived from `packets`).
    packet_at: Map<Uuid, u64>,
    /// The ordinal of each kept decision by decision id (derived from `decisions`).
    decision_at: Map<Uuid, u64>,
    /// Relationships the windows bring (derived).
    window_rels: usize,
    /// How many of `packets` each thread node has (derived from `packets`; a thread
    /// leaves when its count falls to zero).
    thread_packets: Map<String, u32>,
    /// Nodes changed since the last commit (commit bookkeeping, not part of the value).
    touched_nodes: Touched,
    /// Relationships changed since the last commit (commit bookkeeping).
    touched_rels: Touched,
    /// What the store has of `packets` (commit bookkeeping).
    packet_mark: stored::QueueMark,
    /// What the store has of `decisions` (commit bookkeeping).
    decision_mark: stored::QueueMark,
    /// Where each stored node and relationship is (commit bookkeeping).
    slots: stored::Slots,
    /// Read from an earlier stored form: the next commit writes the view whole.
    rewrite_all: bool,
}
