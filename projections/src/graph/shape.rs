//! The serialized graph: every node and relationship by id (ordered, so the same view
//! gives the same bytes whatever its hashers' seeds), the windows as the ids each kept
//! packet or decision brought, and the eviction counts — the form `projections show`
//! prints and earlier versions stored whole, which this version still reads.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::legacy::Kept;
use super::{GraphView, Node, NodeQuery, RelQuery, Relationship};
use crate::Checkpoint;

#[derive(Serialize)]
struct Out<'a> {
    checkpoint: &'a Checkpoint,
    nodes: BTreeMap<String, Cow<'a, Node>>,
    relationships: BTreeMap<String, Cow<'a, Relationship>>,
    packets: Vec<Kept>,
    decisions: Vec<Kept>,
    evicted_packets: u64,
    evicted_decisions: u64,
}

#[derive(Deserialize)]
struct In {
    checkpoint: Checkpoint,
    nodes: BTreeMap<String, Node>,
    relationships: BTreeMap<String, Relationship>,
    packets: VecDeque<Kept>,
    decisions: VecDeque<Kept>,
    evicted_packets: u64,
    evicted_decisions: u64,
}

impl Serialize for GraphView {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Out {
            checkpoint: &self.checkpoint,
            nodes: self
                .nodes(&NodeQuery::default())
                .map(|n| (n.id.clone(), n))
                .collect(),
            relationships: self
                .relationships(&RelQuery::default())
                .map(|r| (r.id.clone(), r))
                .collect(),
            packets: self.packets.iter().map(Kept::packet).collect(),
            decisions: self.decisions.iter().map(Kept::decision).collect(),
            evicted_packets: self.evicted_packets,
            evicted_decisions: self.evicted_decisions,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for GraphView {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let read = In::deserialize(d)?;
        let mut view = GraphView {
            checkpoint: read.checkpoint,
            nodes: read.nodes.into_iter().collect(),
            relationships: read.relationships.into_iter().collect(),
            evicted_packets: read.evicted_packets,
            evicted_decisions: read.evicted_decisions,
            ..GraphView::default()
        };
        view.take_legacy_windows(read.packets, read.decisions)
            .map_err(D::Error::custom)?;
        view.reindex();
        Ok(view)
    }
}
