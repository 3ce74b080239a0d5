//! Reading the [`GraphView`]: nodes and relationships by id or by query.
//!
//! Volks, threads and sessions are held as nodes, so they are lent; packets and
//! decisions are held as records, so theirs are written out for the reader (a
//! [`Cow::Owned`]). Readers never see the difference.

use std::borrow::Cow;

use uuid::Uuid;

use super::window::{position, DecisionRecord, PacketRecord};
use super::{GraphView, Node, NodeLabel, NodeQuery, RelQuery, RelType, Relationship};

/// The id `key` of a packet or decision, if it is a UUID written as the view writes
/// them (hyphenated, lower case): `packet:<KEY>` in capitals names no node.
fn canonical_uuid(key: &str) -> Option<Uuid> {
    let uuid = Uuid::try_parse(key).ok()?;
    let mut buf = Uuid::encode_buffer();
    (uuid.hyphenated().encode_lower(&mut buf) == key).then_some(uuid)
}

/// Whether a window record's relationships may match `query`: its type is one the
/// record brings and its start is such a record.
fn window_may_match(query: &RelQuery, types: &[RelType], label: NodeLabel) -> bool {
    query.rel_type.is_none_or(|t| types.contains(&t))
        && query.from.as_deref().is_none_or(|from| {
            from.strip_prefix(label.prefix())
                .is_some_and(|rest| rest.starts_with(':'))
        })
}

const PACKET_RELS: [RelType; 4] = [
    RelType::SentBy,
    RelType::SentTo,
    RelType::InThread,
    RelType::InSession,
];

impl GraphView {
    /// The kept packet `packet:<key>`.
    fn kept_packet(&self, key: &str) -> Option<&PacketRecord> {
        let ordinal = *self.packet_at.get(&canonical_uuid(key)?)?;
        self.packets.get(position(ordinal, self.evicted_packets)?)
    }

    /// The kept decision `decision:<key>`.
    fn kept_decision(&self, key: &str) -> Option<&DecisionRecord> {
        let ordinal = *self.decision_at.get(&canonical_uuid(key)?)?;
        self.decisions
            .get(position(ordinal, self.evicted_decisions)?)
    }

    /// The node with this id.
    pub fn node(&self, id: &str) -> Option<Cow<'_, Node>> {
        if let Some(node) = self.nodes.get(id) {
            return Some(Cow::Borrowed(node));
        }
        let (prefix, key) = id.split_once(':')?;
        match prefix {
            "packet" => self.kept_packet(key).map(|p| Cow::Owned(p.node())),
            "decision" => self.kept_decision(key).map(|d| Cow::Owned(d.node())),
            _ => None,
        }
    }

    /// The relationship with this id.
    pub fn relationship(&self, id: &str) -> Option<Cow<'_, Relationship>> {
        if let Some(rel) = self.relationships.get(id) {
            return Some(Cow::Borrowed(rel));
        }
        // `<TYPE>:packet:<uuid>-><to>` or `<TYPE>:decision:<uuid>-><to>`.
        let (_, from_on) = id.split_once(':')?;
        let (prefix, rest) = from_on.split_once(':')?;
        let key = rest.get(..36)?;
        let rels = match prefix {
            "packet" => self.kept_packet(key)?.relationships(),
            "decision" => self.kept_decision(key)?.relationships(),
            _ => return None,
        };
        rels.into_iter().find(|r| r.id == id).map(Cow::Owned)
    }

    /// Nodes matching `query`, ordered by id. The nodes borrow the view, not the query.
    pub fn nodes<'a>(&'a self, query: &NodeQuery) -> impl Iterator<Item = Cow<'a, Node>> {
        let mut found: Vec<Cow<'a, Node>> = self
            .nodes
            .values()
            .filter(|n| query.matches(n))
            .map(Cow::Borrowed)
            .collect();
        let wants = |label| query.label.is_none_or(|l| l == label);
        if wants(NodeLabel::Packet) {
            let nodes = self.packets.iter().map(PacketRecord::node);
            found.extend(nodes.filter(|n| query.matches(n)).map(Cow::Owned));
        }
        if wants(NodeLabel::Decision) {
            let nodes = self.decisions.iter().map(DecisionRecord::node);
            found.extend(nodes.filter(|n| query.matches(n)).map(Cow::Owned));
        }
        found.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        found.into_iter()
    }

    /// Relationships matching `query`, ordered by id.
    pub fn relationships<'a>(
        &'a self,
        query: &RelQuery,
    ) -> impl Iterator<Item = Cow<'a, Relationship>> {
        let mut found: Vec<Cow<'a, Relationship>> = self
            .relationships
            .values()
            .filter(|r| query.matches(r))
            .map(Cow::Borrowed)
            .collect();
        if window_may_match(query, &PACKET_RELS, NodeLabel::Packet) {
            // One packet's when the query names it, else every packet's.
            let named = query
                .from
                .as_deref()
                .and_then(|f| f.strip_prefix("packet:"));
            let records: Vec<&PacketRecord> = match named {
                Some(key) => self.kept_packet(key).into_iter().collect(),
                None => self.packets.iter().collect(),
            };
            for record in records {
                let rels = record.relationships().into_iter();
                found.extend(rels.filter(|r| query.matches(r)).map(Cow::Owned));
            }
        }
        if window_may_match(query, &[RelType::DecidedAbout], NodeLabel::Decision) {
            for record in &self.decisions {
                let rels = record.relationships().into_iter();
                found.extend(rels.filter(|r| query.matches(r)).map(Cow::Owned));
            }
        }
        found.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        found.into_iter()
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len() + self.packets.len() + self.decisions.len()
    }

    /// Number of relationships.
    pub fn relationship_count(&self) -> usize {
        self.relationships.len() + self.window_rels
    }

    /// Packets and decisions evicted so far to keep the view bounded.
    pub fn evicted(&self) -> (u64, u64) {
        (self.evicted_packets, self.evicted_decisions)
    }
}
