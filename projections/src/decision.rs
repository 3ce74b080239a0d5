//! [`DecisionIndex`]: governance decisions by time, subject, action and result.
//!
//! Folds `governance.decisions`: every `decision_recorded` becomes an entry (kept in log
//! order, the cursor being its sequence, with the principal its envelope names), indexed
//! by subject and action (a decision logged twice counts once: `decision/recent.rs`); every
//! `policy_loaded` is kept by its hash so a decision's policy can be looked up.
//!
//! **Memory follows the work, not the history.** What a search filters on is kept for
//! every decision as bits: its position in one bitmap per subject, action, principal,
//! result and dry run, its sequence in a bitmap of sequences (`decision/search.rs`),
//! and its time in a block whose bounds stay in memory and whose bytes leave it once
//! stored (`decision/times.rs`). The decision itself (its query text, rule trace,
//! articles, policy hash: most of a kilobyte) is kept only for the newest decisions.
//!
//! **The log keeps the bodies; the store keeps what searches filter on.** A decision
//! never changes once recorded, and its body is already in the log at its sequence.
//! A commit stores one block of compact summaries (sequence, time, id, subject, action,
//! principal, result, dry run) for the decisions since the last commit
//! (`decision/stored.rs`), enough to rebuild every filter on load, never a second copy
//! of the bodies. Once a commit has stored a decision's summary, the runner may let its
//! body go ([`View::committed`]); a search then answers it as a [`DecisionRef`] without a
//! body, and the reader reads the body from the log at that sequence
//! ([`DecisionEntry::of`]).

use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::DecisionResult;
use orchestrata_schemas::events::{Envelope, Event, Stream};
use roaring::{RoaringBitmap, RoaringTreemap};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::stored::{Saved, StoredEntry};
use crate::{Changes, Checkpoint, StoredError, View, ViewName};
use recent::RecentIds;
use times::Times;
pub use times::{block_key, NeedsStored, StoredTimes};

/// One decision with when it was recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionEntry {
    /// Sequence of its event (the cursor).
    pub sequence: u64,
    /// Event time.
    pub at: DateTime<Utc>,
    /// The decision as recorded.
    pub decision: DecisionRecorded,
    /// Who acted: the principal named on the event's envelope (`None` for decisions no
    /// principal caused, and for those recorded before attribution).
    #[serde(default)]
    pub principal: Option<String>,
}

impl DecisionEntry {
    /// The entry `envelope` records, if it is a `decision_recorded`: how the index
    /// folds one, and how a reader turns the log's event at a [`DecisionRef`]'s sequence
    /// into the body the index let go of.
    pub fn of(envelope: &Envelope) -> Option<DecisionEntry> {
        match &envelope.record.event {
            Event::DecisionRecorded(d) if envelope.stream == Stream::GovernanceDecisions => {
                Some(DecisionEntry {
                    sequence: envelope.sequence,
                    at: envelope.record.timestamp,
                    decision: d.clone(),
                    principal: envelope.record.principal.clone(),
                })
            }
            _ => None,
        }
    }
}

/// A loaded policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyEntry {
    /// Where it came from.
    pub origin: String,
    /// Its text.
    pub text: String,
    /// Number of rules.
    pub rule_count: i32,
    /// Event time of its (first) load.
    pub loaded_at: DateTime<Utc>,
}

/// A decision search; fields set combine with AND.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionQuery {
    /// Only this subject (client id or Volk alias).
    pub subject: Option<String>,
    /// Only decisions caused by this principal (the envelope's `principal`).
    #[serde(default)]
    pub principal: Option<String>,
    /// Only this action, e.g. `cxp.send`.
    pub action: Option<String>,
    /// Only this result.
    pub result: Option<DecisionResult>,
    /// Only decisions recorded at or after this event time.
    pub from: Option<DateTime<Utc>>,
    /// Only decisions recorded strictly before this event time.
    pub until: Option<DateTime<Utc>>,
    /// Only dry runs (`Some(true)`) or only decisions that acted (`Some(false)`).
    #[serde(default)]
    pub dry_run: Option<bool>,
}

/// A decision as a search or a lookup answers it: its sequence, and its entry when that
/// is in memory. Without one (`body: None`), read the entry from the log: the
/// `decision_recorded` at `sequence` of `governance.decisions`
/// ([`DecisionEntry::of`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecisionRef<'a> {
    /// Sequence of its event (the cursor).
    pub sequence: u64,
    /// The whole entry, if the index still holds it.
    pub body: Option<&'a DecisionEntry>,
}

/// The governance decisions index.
///
/// Decisions are kept in log order: the view folds one stream, whose checkpoint admits
/// only increasing sequences, so a decision's position (its rank among them) never
/// changes. Every filter is a set of positions, as a compressed bitmap: a name or
/// result that takes a share of the decisions costs about one bit per decision in its
/// span, a rare one two bytes per decision it has (a `Vec<u32>` list would take four
/// bytes a position, for every decision of the history). Entries (bodies) are held for the
/// newest decisions only: `bodies[i]` is the entry of the decision at position
/// `cold + i`; see the module docs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecisionIndex {
    checkpoint: Checkpoint,
    /// The sequence of every decision: position `p` is the `p`-th (`select`).
    sequences: RoaringTreemap,
    /// Every decision's time.
    times: Times,
    bodies: VecDeque<DecisionEntry>,
    /// How many of the oldest decisions have no body in memory.
    cold: usize,
    /// Ids of the newest decisions: a decision logged twice counts once.
    recent: RecentIds,
    /// Subject -> positions of its decisions.
    by_subject: BTreeMap<String, RoaringBitmap>,
    /// Action -> positions of its decisions.
    by_action: BTreeMap<String, RoaringBitmap>,
    /// Principal -> positions of the decisions it caused.
    by_principal: BTreeMap<String, RoaringBitmap>,
    /// Positions by result (allow, deny, escalate: [`result_index`]).
    by_result: [RoaringBitmap; 3],
    /// Positions of the dry runs.
    dry_runs: RoaringBitmap,
    policies: BTreeMap<String, PolicyEntry>,
    /// Decisions the store has (commit bookkeeping, not part of the value).
    saved: Saved,
    /// Decisions handed to the commit in progress.
    taken: Saved,
    /// Frozen blocks of times the store has.
    blocks_saved: Saved,
    /// Frozen blocks of times handed to the commit in progress.
    blocks_taken: Saved,
}

impl View for DecisionIndex {
    const NAME: ViewName = ViewName::Decision;
    const STREAMS: &'static [Stream] = &[Stream::GovernanceDecisions];
    const RETAKES_UNCOMMITTED: bool = true;

    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    fn take_changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        self.changes(all)
    }

    fn committed(&mut self, keep_hot: usize) {
        self.saved = Saved(self.taken.0);
        self.blocks_saved = Saved(self.blocks_taken.0);
        self.evict(keep_hot);
    }

    fn needs_commit(&self) -> bool {
        self.len().saturating_sub(self.saved.0) > crate::stored::PRESSING_ENTRIES
    }

    fn from_stored(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        Self::restore(head, entries)
    }

    fn restorer(
        head: &[u8],
        keep_hot: usize,
    ) -> Result<Box<dyn crate::Restorer<Self>>, StoredError> {
        Ok(Box::new(stored::Restore::new(head, keep_hot)?))
    }

    fn apply(&mut self, envelope: &Envelope) -> bool {
        if envelope.stream != Stream::GovernanceDecisions
            || !self.checkpoint.admit(envelope.stream, envelope.sequence)
        {
            return false;
        }
        let at = envelope.record.timestamp;
        match &envelope.record.event {
            Event::DecisionRecorded(d) if !self.recent.contains(&d.decision_id) => {
                if let Some(entry) = DecisionEntry::of(envelope) {
                    self.push(entry);
                }
            }
            Event::PolicyLoaded(p) if !self.policies.contains_key(&p.policy_hash) => {
                self.policies.insert(
                    p.policy_hash.clone(),
                    PolicyEntry {
                        origin: p.origin.clone(),
                        text: p.text.clone(),
                        rule_count: p.rule_count,
                        loaded_at: at,
                    },
                );
            }
            _ => {}
        }
        true
    }
}

impl DecisionIndex {
    /// Adds a decision (in log order): its sequence, time and indexes, its body.
    fn push(&mut self, entry: DecisionEntry) {
        self.index(&Keys::of(&entry));
        self.bodies.push_back(entry);
    }

    /// Adds a decision whose body stays in the log (one read back from a stored
    /// summary): its sequence, time and indexes. Only the oldest decisions may lack a
    /// body, so bodies held before it are let go first (a restore holds only stored
    /// decisions: the log has them all).
    fn push_cold(&mut self, keys: &Keys<'_>) {
        self.cold += self.bodies.len();
        self.bodies.clear();
        self.index(keys);
        self.cold += 1;
    }

    /// Indexes one decision at the next position.
    fn index(&mut self, k: &Keys<'_>) {
        // Four billion decisions would take this server centuries at its measured rates;
        // past them, positions saturate (searches would miss).
        let position = u32::try_from(self.len()).unwrap_or(u32::MAX);
        self.recent.push(k.decision_id);
        self.sequences.insert(k.sequence);
        self.times.push(k.at);
        index(&mut self.by_subject, k.subject, position);
        index(&mut self.by_action, k.action, position);
        if let Some(principal) = k.principal {
            index(&mut self.by_principal, principal, position);
        }
        self.by_result[result_index(k.result)].insert(position);
        if k.dry_run {
            self.dry_runs.insert(position);
        }
    }

    /// Lets go of the bodies of stored decisions older than the newest `keep_hot`, and
    /// of the bytes of the stored blocks of times wholly older than them.
    fn evict(&mut self, keep_hot: usize) {
        let hot_from = self.len().saturating_sub(keep_hot);
        let upto = self.saved.0.min(hot_from);
        while self.cold < upto && self.bodies.pop_front().is_some() {
            self.cold += 1;
        }
        self.times
            .let_go_before(self.blocks_saved.0.min(hot_from / times::BLOCK));
    }

    /// The decision at `position`.
    fn found(&self, position: u32) -> Option<DecisionRef<'_>> {
        Some(DecisionRef {
            sequence: self.sequences.select(u64::from(position))?,
            body: usize::try_from(position)
                .ok()?
                .checked_sub(self.cold)
                .and_then(|i| self.bodies.get(i)),
        })
    }

    /// The decision with this id, among those whose body is in memory: all of them in
    /// a view loaded whole (`projections show`, a rebuild), the newest in a live runner's
    /// (the others are found by a search, then read from the log). A scan, newest
    /// first: no index by id follows the history.
    pub fn decision(&self, decision_id: &Uuid) -> Option<DecisionRef<'_>> {
        let i = self
            .bodies
            .iter()
            .rposition(|b| b.decision.decision_id == *decision_id)?;
        self.found(u32::try_from(self.cold + i).ok()?)
    }

    /// Number of decisions.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether no decision was recorded.
    pub fn is_empty(&self) -> bool {
        self.times.len() == 0
    }

    /// How many decisions have their entry in memory (the rest are read from the log).
    pub fn in_memory(&self) -> usize {
        self.bodies.len()
    }

    /// The policy with this content hash.
    pub fn policy(&self, policy_hash: &str) -> Option<&PolicyEntry> {
        self.policies.get(policy_hash)
    }

    /// The sequences of the decisions at `positions` (the stored whole form lists
    /// sequences).
    fn sequences_at(&self, positions: &RoaringBitmap) -> Vec<u64> {
        let all: Vec<u64> = self.sequences.iter().collect();
        positions
            .iter()
            .filter_map(|p| all.get(usize::try_from(p).ok()?).copied())
            .collect()
    }
}

/// What the index files a decision under: a body's fields, or a stored summary's. A
/// commit stores them as they are (`decision/stored.rs`), field for field its `Summary`.
#[derive(Serialize)]
struct Keys<'a> {
    sequence: u64,
    #[serde(with = "orchestrata_schemas::events::fields::ts")]
    at: DateTime<Utc>,
    decision_id: Uuid,
    subject: &'a str,
    action: &'a str,
    principal: Option<&'a str>,
    result: DecisionResult,
    dry_run: bool,
}

impl<'a> Keys<'a> {
    fn of(entry: &'a DecisionEntry) -> Self {
        let d = &entry.decision;
        Keys {
            sequence: entry.sequence,
            at: entry.at,
            decision_id: d.decision_id,
            subject: &d.subject,
            action: &d.action,
            principal: entry.principal.as_deref(),
            result: d.result,
            dry_run: d.dry_run,
        }
    }
}

/// Where a result's positions are in [`DecisionIndex::by_result`].
fn result_index(result: DecisionResult) -> usize {
    match result {
        DecisionResult::Allow => 0,
        DecisionResult::Deny => 1,
        DecisionResult::Escalate => 2,
    }
}

/// Adds `position` to `key`'s set, allocating the key only the first time.
fn index(map: &mut BTreeMap<String, RoaringBitmap>, key: &str, position: u32) {
    match map.get_mut(key) {
        Some(list) => {
            list.insert(position);
        }
        None => {
            let mut list = RoaringBitmap::new();
            list.insert(position);
            map.insert(key.to_owned(), list);
        }
    }
}

mod recent;
mod search;
#[cfg(test)]
mod search_tests;
mod stored;
#[cfg(test)]
mod stored_tests;
#[cfg(test)]
mod tests;
mod times;
