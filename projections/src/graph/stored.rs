//! The graph view's stored form: a head (checkpoint, eviction counts) and entries for
//! each node (`n` and its id), relationship (`r` and its id) and kept packet or
//! decision (`p` or `d` and its ordinal, big-endian: how many were kept before it,
//! evicted ones included, so entries load in order and an eviction removes the oldest
//! ordinals).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{GraphView, Kept, Node, Relationship};
use crate::stored::{self, Changes, EntryChange, Saved, StoredEntry, StoredError};
use crate::Checkpoint;

const NODE: u8 = b'n';
const REL: u8 = b'r';
const PACKET: u8 = b'p';
const DECISION: u8 = b'd';

#[derive(Serialize, Deserialize)]
struct Head {
    checkpoint: Checkpoint,
    evicted_packets: u64,
    evicted_decisions: u64,
}

/// What the store has of a queue of kept nodes: ordinals `evicted..end`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct QueueMark {
    evicted: Saved,
    end: Saved,
}

fn ordinal_key(kind: u8, ordinal: u64) -> Vec<u8> {
    stored::key(kind, &ordinal.to_be_bytes())
}

fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The queue entries to write and remove since `mark`; every entry when `all`.
fn queue_changes(
    kind: u8,
    queue: &VecDeque<Kept>,
    evicted: u64,
    mark: &mut QueueMark,
    all: bool,
    out: &mut Vec<EntryChange>,
) -> Result<(), StoredError> {
    let end = evicted + queue.len() as u64;
    let (saved_evicted, saved_end) = if all {
        (evicted, evicted)
    } else {
        (mark.evicted.0 as u64, mark.end.0 as u64)
    };
    for gone in saved_evicted..evicted.min(saved_end) {
        out.push((ordinal_key(kind, gone), None));
    }
    for ordinal in saved_end.max(evicted)..end {
        let kept = &queue[usize_of(ordinal - evicted)];
        out.push((
            ordinal_key(kind, ordinal),
            Some(stored::encode("kept", kept)?),
        ));
    }
    *mark = QueueMark {
        evicted: Saved(usize_of(evicted)),
        end: Saved(usize_of(end)),
    };
    Ok(())
}

impl GraphView {
    pub(super) fn changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        let head = stored::encode(
            "graph view head",
            &Head {
                checkpoint: self.checkpoint.clone(),
                evicted_packets: self.evicted_packets,
                evicted_decisions: self.evicted_decisions,
            },
        )?;
        let (nodes, lost_nodes) = self.touched_nodes.take();
        let (rels, lost_rels) = self.touched_rels.take();
        let all = all || lost_nodes || lost_rels;
        let mut entries = Vec::new();
        if all {
            for (id, node) in &self.nodes {
                let value = stored::encode("node", &**node)?;
                entries.push((stored::key(NODE, id.as_bytes()), Some(value)));
            }
            for (id, rel) in &self.relationships {
                let value = stored::encode("relationship", &**rel)?;
                entries.push((stored::key(REL, id.as_bytes()), Some(value)));
            }
        } else {
            for id in nodes {
                let value = match self.nodes.get(&id) {
                    Some(node) => Some(stored::encode("node", &**node)?),
                    None => None,
                };
                entries.push((stored::key(NODE, id.as_bytes()), value));
            }
            for id in rels {
                let value = match self.relationships.get(&id) {
                    Some(rel) => Some(stored::encode("relationship", &**rel)?),
                    None => None,
                };
                entries.push((stored::key(REL, id.as_bytes()), value));
            }
        }
        let (packets, decisions) = (self.evicted_packets, self.evicted_decisions);
        queue_changes(
            PACKET,
            &self.packets,
            packets,
            &mut self.packet_mark,
            all,
            &mut entries,
        )?;
        queue_changes(
            DECISION,
            &self.decisions,
            decisions,
            &mut self.decision_mark,
            all,
            &mut entries,
        )?;
        Ok(Changes {
            head,
            entries,
            full: all,
        })
    }

    pub(super) fn restore(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        let head: Head = stored::decode("graph view head", head)?;
        let mut view = GraphView {
            checkpoint: head.checkpoint,
            evicted_packets: head.evicted_packets,
            evicted_decisions: head.evicted_decisions,
            ..GraphView::default()
        };
        let bad = |reason: String| StoredError::Decode {
            what: "graph view entry".into(),
            reason,
        };
        for (key, value) in entries {
            let (queue, first) = match key.split_first() {
                Some((&NODE, _)) => {
                    let node: Node = stored::decode("node", &value)?;
                    view.nodes.insert(node.id.clone(), Box::new(node));
                    continue;
                }
                Some((&REL, _)) => {
                    let rel: Relationship = stored::decode("relationship", &value)?;
                    view.relationships.insert(rel.id.clone(), Box::new(rel));
                    continue;
                }
                Some((&PACKET, _)) => (&mut view.packets, view.evicted_packets),
                Some((&DECISION, _)) => (&mut view.decisions, view.evicted_decisions),
                _ => return Err(bad(format!("unknown key {key:?}"))),
            };
            let expected = first + queue.len() as u64;
            if key[1..] != expected.to_be_bytes() {
                return Err(bad(format!("kept entry #{expected} is missing")));
            }
            queue.push_back(stored::decode("kept", &value)?);
        }
        let mark = |evicted: u64, len: usize| QueueMark {
            evicted: Saved(usize_of(evicted)),
            end: Saved(usize_of(evicted) + len),
        };
        view.packet_mark = mark(view.evicted_packets, view.packets.len());
        view.decision_mark = mark(view.evicted_decisions, view.decisions.len());
        Ok(view)
    }
}
