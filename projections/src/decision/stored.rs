//! The decision index's stored form: a head (checkpoint, policies, how many blocks of
//! times are stored), one entry per decision (`d` + its sequence, big-endian, so
//! entries load in log order) and one per frozen block of times (`t` + its number;
//! `decision/times.rs`). Decisions and blocks are only ever appended, so a commit
//! writes those past the last ones the store confirmed
//! ([`View::committed`](crate::View::committed)); a commit that failed is taken again.
//! Times and indexes are rebuilt from the decisions on load; the stored blocks are
//! there for searches to read once memory let them go.
//!
//! The view serialized whole (how earlier versions stored it, and what `projections
//! show` prints) is the positional form of [`Whole`]: only a view holding every body
//! can be written so.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use super::times::{self, block_key};
use super::{DecisionEntry, DecisionIndex, PolicyEntry};
use crate::stored::{self, Changes, Saved, StoredEntry, StoredError};
use crate::{Checkpoint, Restorer};

const DECISION: u8 = b'd';

#[derive(Serialize, Deserialize)]
struct Head {
    checkpoint: Checkpoint,
    policies: BTreeMap<String, PolicyEntry>,
    /// Frozen blocks of times stored (0 in heads written before they were).
    #[serde(default)]
    time_blocks: u64,
}

impl DecisionIndex {
    pub(super) fn changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        let head = stored::encode(
            "decision index head",
            &Head {
                checkpoint: self.checkpoint.clone(),
                policies: self.policies.clone(),
                time_blocks: self.times.frozen() as u64,
            },
        )?;
        let from = if all { 0 } else { self.saved.0 };
        if from < self.cold {
            return Err(StoredError::Encode {
                what: "decision index".into(),
                reason: format!(
                    "{} decisions are only in the store; a full commit needs them in memory",
                    self.cold
                ),
            });
        }
        let mut entries = Vec::new();
        for entry in self.bodies.range(from - self.cold..) {
            let value = stored::encode("decision", entry)?;
            entries.push((Self::stored_key(entry.sequence), Some(value)));
        }
        let blocks_from = if all { 0 } else { self.blocks_saved.0 };
        for block in blocks_from..self.times.frozen() {
            let bytes = self
                .times
                .encoded(block)
                .ok_or_else(|| StoredError::Encode {
                    what: "decision index".into(),
                    reason: format!("block {block} of times is only in the store"),
                })?;
            entries.push((block_key(block), Some(bytes.to_vec())));
        }
        self.taken = Saved(self.len());
        self.blocks_taken = Saved(self.times.frozen());
        Ok(Changes::tracked(head, entries))
    }

    /// The key under which a commit stores the decision recorded at `sequence` (read it
    /// back with [`DecisionIndex::decode_stored`]).
    pub fn stored_key(sequence: u64) -> Vec<u8> {
        stored::key(DECISION, &sequence.to_be_bytes())
    }

    /// A decision's entry as a commit stored it.
    pub fn decode_stored(bytes: &[u8]) -> Result<DecisionEntry, StoredError> {
        stored::decode("decision", bytes)
    }

    /// The decision a stored entry `(key, value)` holds; `None` for the index's other
    /// entries (its blocks of times). For searches that read the stored entries in turn.
    pub fn decision_of_entry(
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<DecisionEntry>, StoredError> {
        if key.first() != Some(&DECISION) {
            return Ok(None);
        }
        Self::decode_stored(value).map(Some)
    }

    pub(super) fn restore(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        crate::view::restore_all(Restore::new(head, usize::MAX)?, entries)
    }
}

/// The decision index's [`Restorer`]: decisions pushed one at a time; past twice
/// `keep_hot` (or `keep_hot` + 1,024) bodies in memory, the older ones are let go of as
/// [`View::committed`](crate::View::committed) would.
pub(super) struct Restore {
    view: DecisionIndex,
    keep_hot: usize,
}

impl Restore {
    pub(super) fn new(head: &[u8], keep_hot: usize) -> Result<Self, StoredError> {
        let head: Head = stored::decode("decision index head", head)?;
        let blocks = Saved(usize::try_from(head.time_blocks).unwrap_or(usize::MAX));
        Ok(Restore {
            view: DecisionIndex {
                checkpoint: head.checkpoint,
                policies: head.policies,
                blocks_saved: blocks,
                blocks_taken: blocks,
                ..DecisionIndex::default()
            },
            keep_hot,
        })
    }
}

impl Restorer<DecisionIndex> for Restore {
    fn entry(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), StoredError> {
        // Blocks of times are rebuilt from the decisions (they come after them, in key
        // order); the stored ones are what the head counts.
        if key.first() == Some(&times::TIMES) && times::block_of(&key).is_some() {
            return Ok(());
        }
        if key.first() != Some(&DECISION) {
            return Err(StoredError::entry(
                "decision index",
                format!("unknown key {key:?}"),
            ));
        }
        let view = &mut self.view;
        view.push(DecisionIndex::decode_stored(&value)?);
        // Everything read so far is stored.
        view.saved = Saved(view.len());
        view.taken = view.saved;
        if view.bodies.len() > self.keep_hot.saturating_add(self.keep_hot.max(1024)) {
            view.evict(self.keep_hot);
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<DecisionIndex, StoredError> {
        let mut view = self.view;
        view.evict(self.keep_hot);
        Ok(view)
    }
}

/// The view serialized whole, field by field as the derived form of earlier versions
/// (they stored it so; `load_stored` still reads it).
#[derive(Serialize, Deserialize)]
struct Whole<D> {
    checkpoint: Checkpoint,
    decisions: Vec<D>,
    by_id: BTreeMap<Uuid, u64>,
    by_subject: BTreeMap<String, Vec<u64>>,
    by_action: BTreeMap<String, Vec<u64>>,
    policies: BTreeMap<String, PolicyEntry>,
}

impl Serialize for DecisionIndex {
    /// Fails for a view that let bodies go (a live runner's): only the store has them.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.cold > 0 {
            return Err(serde::ser::Error::custom(format!(
                "the decision index holds {} decisions in the store only",
                self.cold
            )));
        }
        Whole {
            checkpoint: self.checkpoint.clone(),
            decisions: self.bodies.iter().collect(),
            by_id: self
                .bodies
                .iter()
                .map(|b| (b.decision.decision_id, b.sequence))
                .collect(),
            by_subject: self
                .by_subject
                .iter()
                .map(|(k, list)| (k.clone(), self.sequences_at(list)))
                .collect(),
            by_action: self
                .by_action
                .iter()
                .map(|(k, list)| (k.clone(), self.sequences_at(list)))
                .collect(),
            policies: self.policies.clone(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for DecisionIndex {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let whole = Whole::<DecisionEntry>::deserialize(deserializer)?;
        let mut view = DecisionIndex {
            checkpoint: whole.checkpoint,
            policies: whole.policies,
            ..DecisionIndex::default()
        };
        for entry in whole.decisions {
            view.push(entry);
        }
        Ok(view)
    }
}
