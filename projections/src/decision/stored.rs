//! The decision index's stored form: a head (checkpoint, policies, how many blocks of
//! times are stored), one block of summaries per commit (`s` + the first summary's
//! sequence, big-endian, so blocks load in log order; at most 4,096 summaries a block)
//! and one entry per frozen block of times (`t` + its number; `decision/times.rs`).
//!
//! A summary is what a search filters on (sequence, time, id, subject, action,
//! principal, result, dry run), about a tenth of a body: the bodies stay in the log,
//! where they already are. Summaries and time blocks are only ever appended, so a
//! commit writes those past the last ones the store confirmed
//! ([`View::committed`](crate::View::committed)); a commit that failed is taken again
//! under the same key. Times and indexes are rebuilt from the summaries on load; the
//! stored blocks of times are there for searches to read once memory let them go.
//!
//! Stores written before summaries hold one entry per decision, its whole body (`d` +
//! its sequence); they load as they did, and later commits add summary blocks.
//!
//! The view serialized whole (how earlier versions stored it, and what `projections
//! show` prints) is the positional form of [`Whole`]: only a view holding every body
//! can be written so.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::types::DecisionResult;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use super::times::{self, block_key};
use super::{DecisionEntry, DecisionIndex, Keys, PolicyEntry};
use crate::stored::{self, Changes, Saved, StoredEntry, StoredError};
use crate::{Checkpoint, Restorer};

/// A decision's whole body, as stores written before summaries hold them.
const DECISION: u8 = b'd';
/// A block of summaries: one per commit, or one per this many of its decisions (a
/// rebuild's or a long-delayed commit's: blocks stay small to write and to decode).
const SUMMARIES: u8 = b's';
const BLOCK_SUMMARIES: usize = 4_096;

/// A stored summary read back: field for field the [`Keys`] a commit stored.
#[derive(Deserialize)]
struct Summary {
    sequence: u64,
    #[serde(with = "orchestrata_schemas::events::fields::ts")]
    at: DateTime<Utc>,
    decision_id: Uuid,
    subject: String,
    action: String,
    principal: Option<String>,
    result: DecisionResult,
    dry_run: bool,
}

impl Summary {
    fn keys(&self) -> Keys<'_> {
        Keys {
            sequence: self.sequence,
            at: self.at,
            decision_id: self.decision_id,
            subject: &self.subject,
            action: &self.action,
            principal: self.principal.as_deref(),
            result: self.result,
            dry_run: self.dry_run,
        }
    }
}

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
        let summaries: Vec<Keys<'_>> = self
            .bodies
            .range(from - self.cold..)
            .map(Keys::of)
            .collect();
        // Blocks start at the first decision not confirmed stored: a commit taken again
        // after a failure writes the same blocks under the same keys, the last longer.
        for block in summaries.chunks(BLOCK_SUMMARIES) {
            if let Some(first) = block.first() {
                let value = stored::encode("decision summaries", block)?;
                entries.push((summaries_key(first.sequence), Some(value)));
            }
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

    /// The sequence of decision `decision_id` if the stored entry `(key, value)` names
    /// it (a block of summaries, or a body an earlier version stored); `None` for
    /// other decisions and for the index's other entries (its blocks of times). For a
    /// lookup by id that reads the stored entries in turn, then the body from the log.
    pub fn sequence_in_entry(
        key: &[u8],
        value: &[u8],
        decision_id: &Uuid,
    ) -> Result<Option<u64>, StoredError> {
        match key.first() {
            Some(&SUMMARIES) => {
                let block: Vec<Summary> = stored::decode("decision summaries", value)?;
                Ok(block
                    .iter()
                    .find(|s| s.decision_id == *decision_id)
                    .map(|s| s.sequence))
            }
            Some(&DECISION) => {
                let body: DecisionEntry = stored::decode("decision", value)?;
                Ok((body.decision.decision_id == *decision_id).then_some(body.sequence))
            }
            _ => Ok(None),
        }
    }

    pub(super) fn restore(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        crate::view::restore_all(Restore::new(head, usize::MAX)?, entries)
    }
}

/// The key of the block of summaries whose first decision is at `sequence`.
fn summaries_key(sequence: u64) -> Vec<u8> {
    stored::key(SUMMARIES, &sequence.to_be_bytes())
}

/// The decision index's [`Restorer`]: decisions pushed one at a time, from summaries
/// without a body (the log has it), from an earlier version's bodies with one; past
/// twice `keep_hot` (or `keep_hot` + 1,024) bodies in memory, the older ones are let go
/// of as [`View::committed`](crate::View::committed) would.
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
        let view = &mut self.view;
        match key.first() {
            Some(&SUMMARIES) => {
                let block: Vec<Summary> = stored::decode("decision summaries", &value)?;
                for summary in &block {
                    view.push_cold(&summary.keys());
                }
            }
            Some(&DECISION) => view.push(stored::decode("decision", &value)?),
            _ => {
                return Err(StoredError::entry(
                    "decision index",
                    format!("unknown key {key:?}"),
                ))
            }
        }
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
