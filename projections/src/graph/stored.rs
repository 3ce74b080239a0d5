//! The graph view's stored form: a head (checkpoint, eviction counts, next slot) and
//! entries for each node (`n`) and relationship (`r`) under a slot number given at its
//! first commit, and for each kept packet or decision record (`p` or `d`) under its
//! ordinal (how many were kept before it, evicted ones included), all big-endian. Keys
//! increase as the graph grows, never random ids (see the thread view's `stored.rs`
//! for why); slots are rebuilt from the keys on load.
//!
//! Earlier versions stored every packet and decision as a node entry with its
//! relationships, and under `p` / `d` only the ids each brought (`Kept`). Such a store
//! (its head says so) is read into records and written whole at its next commit.

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{GraphView, Node, Relationship};
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
    next_slot: u64,
    /// Written by versions whose threads leave with their last packet; a store from an
    /// earlier version keeps every thread, and the idle ones leave when it is loaded.
    #[serde(default)]
    threads_follow_packets: bool,
    /// Written by versions that store packets and decisions as records; an earlier
    /// store holds them as nodes and relationships, with `Kept` ids in the queues.
    #[serde(default)]
    window_records: bool,
}

/// The slot of each stored node and relationship (commit bookkeeping, not part of the
/// view's value: always equal).
#[derive(Debug, Clone, Default)]
pub(super) struct Slots {
    nodes: HashMap<String, u64>,
    rels: HashMap<String, u64>,
    next: u64,
}

impl Slots {
    /// Whether the store holds node `id` (it was written by a commit and not removed
    /// since).
    pub(super) fn has_node(&self, id: &str) -> bool {
        self.nodes.contains_key(id)
    }
}

impl PartialEq for Slots {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Entries for the `touched` ids of one table: `encode(id)` gives the entry's value
/// (`None` when the id is gone), written under the id's slot (a new one for an id not
/// stored yet), or removed.
fn slotted(
    kind: u8,
    touched: BTreeSet<String>,
    encode: impl Fn(&str) -> Result<Option<Vec<u8>>, StoredError>,
    slots: &mut HashMap<String, u64>,
    next: &mut u64,
    out: &mut Vec<EntryChange>,
) -> Result<(), StoredError> {
    for id in touched {
        match encode(&id)? {
            Some(value) => {
                let slot = *slots.entry(id).or_insert_with(|| {
                    *next += 1;
                    *next - 1
                });
                out.push((stored::key(kind, &slot.to_be_bytes()), Some(value)));
            }
            None => {
                if let Some(slot) = slots.remove(&id) {
                    out.push((stored::key(kind, &slot.to_be_bytes()), None));
                }
            }
        }
    }
    Ok(())
}

/// What the store has of a queue of kept records: ordinals `evicted..end`, and which
/// of those changed since (commit bookkeeping: always equal).
#[derive(Debug, Clone, Default)]
pub(super) struct QueueMark {
    evicted: Saved,
    end: Saved,
    changed: Vec<u64>,
}

impl PartialEq for QueueMark {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl QueueMark {
    /// Record `ordinal` changed: rewritten at the next commit if the store holds it
    /// (one not stored yet is written whole anyway). Only records of the window
    /// change, and repeats are folded away when the list outgrows twice the window, so
    /// it stays bounded however long between commits.
    pub(super) fn changed(&mut self, ordinal: u64) {
        if ordinal < self.end.0 as u64 && self.changed.last() != Some(&ordinal) {
            self.changed.push(ordinal);
            if self.changed.len() > 2 * super::MAX_PACKETS.max(super::MAX_DECISIONS) {
                // Many changes to few records: each needs writing once.
                self.changed.sort_unstable();
                self.changed.dedup();
            }
        }
    }
}

fn ordinal_key(kind: u8, ordinal: u64) -> Vec<u8> {
    stored::key(kind, &ordinal.to_be_bytes())
}

fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The queue entries to write and remove since `mark`; every entry when `all`.
fn queue_changes<T: Serialize>(
    kind: u8,
    queue: &VecDeque<T>,
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
    let mut changed = std::mem::take(&mut mark.changed);
    changed.sort_unstable();
    changed.dedup();
    // Stored records changed since (those still kept), then the ones not stored yet.
    let rewrite = changed
        .into_iter()
        .filter(|&o| !all && o >= evicted && o < saved_end);
    for ordinal in rewrite.chain(saved_end.max(evicted)..end) {
        let record = &queue[usize_of(ordinal - evicted)];
        out.push((
            ordinal_key(kind, ordinal),
            Some(stored::encode("kept", record)?),
        ));
    }
    *mark = QueueMark {
        evicted: Saved(usize_of(evicted)),
        end: Saved(usize_of(end)),
        changed: Vec::new(),
    };
    Ok(())
}

impl GraphView {
    pub(super) fn changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        let (mut nodes, lost_nodes) = self.touched_nodes.take();
        let (mut rels, lost_rels) = self.touched_rels.take();
        let all = all || lost_nodes || lost_rels || std::mem::take(&mut self.rewrite_all);
        if all {
            // The store is replaced: every entry gets a fresh slot.
            self.slots = Slots::default();
            nodes = self.nodes.keys().cloned().collect();
            rels = self.relationships.keys().cloned().collect();
        }
        let mut entries = Vec::new();
        let slots = &mut self.slots;
        let (graph_nodes, graph_rels) = (&self.nodes, &self.relationships);
        let node = |id: &str| {
            graph_nodes
                .get(id)
                .map(|n| stored::encode("node", n))
                .transpose()
        };
        let rel = |id: &str| {
            graph_rels
                .get(id)
                .map(|r| stored::encode("relationship", r))
                .transpose()
        };
        slotted(
            NODE,
            nodes,
            node,
            &mut slots.nodes,
            &mut slots.next,
            &mut entries,
        )?;
        slotted(
            REL,
            rels,
            rel,
            &mut slots.rels,
            &mut slots.next,
            &mut entries,
        )?;
        let head = stored::encode(
            "graph view head",
            &Head {
                checkpoint: self.checkpoint.clone(),
                evicted_packets: self.evicted_packets,
                evicted_decisions: self.evicted_decisions,
                next_slot: self.slots.next,
                threads_follow_packets: true,
                window_records: true,
            },
        )?;
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
            fresh: 0,
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
        view.slots.next = head.next_slot;
        let slot_of = |key: &[u8]| -> Result<u64, StoredError> {
            let bytes: [u8; 8] = key
                .get(1..)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| {
                    StoredError::entry("graph view", format!("key {key:?} holds no slot"))
                })?;
            Ok(u64::from_be_bytes(bytes))
        };
        let bad = |reason: String| StoredError::entry("graph view", reason);
        let (mut kept_packets, mut kept_decisions) = (VecDeque::new(), VecDeque::new());
        for (key, value) in entries {
            match key.split_first() {
                Some((&NODE, _)) => {
                    let node: Node = stored::decode("node", &value)?;
                    view.slots.nodes.insert(node.id.clone(), slot_of(&key)?);
                    view.nodes.insert(node.id.clone(), node);
                }
                Some((&REL, _)) => {
                    let rel: Relationship = stored::decode("relationship", &value)?;
                    view.slots.rels.insert(rel.id.clone(), slot_of(&key)?);
                    view.relationships.insert(rel.id.clone(), rel);
                }
                Some((&PACKET, ordinal)) if head.window_records => {
                    next_in_queue(&mut view.packets, view.evicted_packets, ordinal, &value)?;
                }
                Some((&DECISION, ordinal)) if head.window_records => {
                    let first = view.evicted_decisions;
                    next_in_queue(&mut view.decisions, first, ordinal, &value)?;
                }
                Some((&PACKET, ordinal)) => {
                    next_in_queue(&mut kept_packets, view.evicted_packets, ordinal, &value)?;
                }
                Some((&DECISION, ordinal)) => {
                    let first = view.evicted_decisions;
                    next_in_queue(&mut kept_decisions, first, ordinal, &value)?;
                }
                _ => return Err(bad(format!("unknown key {key:?}"))),
            }
        }
        if !head.window_records {
            // An earlier form: its kept packets and decisions become records, and the
            // next commit replaces the form.
            view.take_legacy_windows(kept_packets, kept_decisions)
                .map_err(bad)?;
            view.rewrite_all = true;
        }
        let mark = |evicted: u64, len: usize| QueueMark {
            evicted: Saved(usize_of(evicted)),
            end: Saved(usize_of(evicted) + len),
            changed: Vec::new(),
        };
        view.packet_mark = mark(view.evicted_packets, view.packets.len());
        view.decision_mark = mark(view.evicted_decisions, view.decisions.len());
        let idle = view.reindex();
        if !head.threads_follow_packets {
            // Stored before threads followed their packets: let the idle ones go now,
            // as a fold of the log by this version would have.
            for thread in idle {
                view.nodes.remove(&thread);
                view.touched_nodes.mark(&thread, view.nodes.len());
            }
        }
        Ok(view)
    }
}

/// Appends the entry of `ordinal` (its key after the kind byte) to `queue`, whose first
/// entry is ordinal `first`: entries come in key order, so each must be the next.
fn next_in_queue<T: DeserializeOwned>(
    queue: &mut VecDeque<T>,
    first: u64,
    ordinal: &[u8],
    value: &[u8],
) -> Result<(), StoredError> {
    let expected = first + queue.len() as u64;
    if ordinal != expected.to_be_bytes() {
        return Err(StoredError::entry(
            "graph view",
            format!("kept entry #{expected} is missing"),
        ));
    }
    queue.push_back(stored::decode("kept", value)?);
    Ok(())
}
