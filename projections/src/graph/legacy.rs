//! The graph's windows as earlier versions held them: every kept packet and decision a
//! node with its relationships, and the queues as the ids each one brought ([`Kept`]).
//! This version still reads that form — stored entry by entry (`stored.rs`) or whole
//! (`shape.rs`) — and serializes its windows that way.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::window::{DecisionRecord, PacketRecord};
use super::{GraphView, Node, RelType};

/// A kept packet or decision by id: its node and the relationships it brought.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Kept {
    pub node: String,
    pub rels: Vec<String>,
}

impl Kept {
    /// The ids of a packet's node and relationships.
    pub fn packet(record: &PacketRecord) -> Kept {
        Kept {
            node: record.id(),
            rels: record.relationships().into_iter().map(|r| r.id).collect(),
        }
    }

    /// The ids of a decision's node and relationships.
    pub fn decision(record: &DecisionRecord) -> Kept {
        Kept {
            node: record.id(),
            rels: record.relationships().into_iter().map(|r| r.id).collect(),
        }
    }
}

/// A record read from the node an earlier version kept (its fields are the node's
/// property names).
fn record<T: DeserializeOwned>(node: Node) -> Result<T, String> {
    let Node { id, properties, .. } = node;
    serde_json::from_value(Value::Object(properties.into_iter().collect()))
        .map_err(|e| format!("kept node {id} does not read as a record: {e}"))
}

impl GraphView {
    /// Moves the windows of an earlier form into records. `self.nodes` and
    /// `self.relationships` hold every node and relationship that form held; each
    /// kept item's node and relationships leave them for its record. Indexes and counts
    /// are left to [`reindex`](GraphView::reindex).
    pub(super) fn take_legacy_windows(
        &mut self,
        packets: impl IntoIterator<Item = Kept>,
        decisions: impl IntoIterator<Item = Kept>,
    ) -> Result<(), String> {
        for kept in packets {
            let mut packet: PacketRecord = record(self.take_node(&kept.node)?)?;
            for rel in &kept.rels {
                let Some(rel) = self.relationships.remove(rel) else {
                    continue;
                };
                if rel.rel_type == RelType::InSession {
                    packet.session_id = rel.to.strip_prefix("session:").map(str::to_owned);
                }
            }
            self.packets.push_back(packet);
        }
        for kept in decisions {
            let decision: DecisionRecord = record(self.take_node(&kept.node)?)?;
            for rel in &kept.rels {
                self.relationships.remove(rel);
            }
            self.decisions.push_back(decision);
        }
        Ok(())
    }

    fn take_node(&mut self, id: &str) -> Result<Node, String> {
        self.nodes
            .remove(id)
            .ok_or_else(|| format!("kept node {id} is missing"))
    }
}
