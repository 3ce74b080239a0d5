//! [`DecisionIndex`]: governance decisions by time, subject, action and result.
//!
//! Folds `governance.decisions`: every `decision_recorded` becomes an entry (kept in log
//! order, the cursor being its sequence, with the principal its envelope names), indexed
//! by subject and action (a decision logged twice counts once: `decision/recent.rs`); every
//! `policy_loaded` is kept by its hash so a decision's policy can be looked up.
//!
//! **Memory follows the work, not the history.** What a search filters on (sequence,
//! time, subject, action, principal, result, dry run) is kept for every decision, in
//! about 40 bytes; the decision itself (its query text, rule trace, articles, policy
//! hash: most of a kilobyte) is kept only for the newest decisions. A decision never
//! changes once recorded, so once a commit has put it in the view store, the runner may
//! let the body go ([`View::committed`]); a search then answers it as a
//! [`DecisionRef`] without a body, and the reader fetches the body from the store under
//! [`DecisionIndex::stored_key`] ([`DecisionIndex::decode_stored`]).

use std::collections::{BTreeMap, VecDeque};

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::DecisionResult;
use orchestrata_schemas::events::{Envelope, Event, Stream};
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::stored::{Saved, StoredEntry};
use crate::{Changes, Checkpoint, Page, PageRequest, StoredError, View, ViewName};
use packed::{Cursor, Packed};
use recent::RecentIds;
use summary::{Names, Summary};

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

impl DecisionQuery {
    fn matches(&self, e: &Summary, names: &Names) -> bool {
        self.subject
            .as_deref()
            .is_none_or(|s| names.get(e.subject) == s)
            && self
                .principal
                .as_deref()
                .is_none_or(|p| e.principal.map(|id| names.get(id)) == Some(p))
            && self
                .action
                .as_deref()
                .is_none_or(|a| names.get(e.action) == a)
            && self.result.is_none_or(|r| r == e.result)
            && self.dry_run.is_none_or(|d| d == e.dry_run)
            && self.from.is_none_or(|f| e.at >= f)
            && self.until.is_none_or(|u| e.at < u)
    }
}

/// A decision as a search or a lookup answers it: when it was recorded, who acted, and
/// its entry when that is in memory. Without one (`body: None`), read the entry from the
/// view store under [`DecisionIndex::stored_key`]`(sequence)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecisionRef<'a> {
    /// Sequence of its event (the cursor).
    pub sequence: u64,
    /// Event time.
    pub at: DateTime<Utc>,
    /// Who acted (the envelope's principal).
    pub principal: Option<&'a str>,
    /// The whole entry, if the index still holds it.
    pub body: Option<&'a DecisionEntry>,
}

/// The governance decisions index.
///
/// Decisions are kept in log order: the view folds one stream, whose checkpoint admits
/// only increasing sequences, so appending keeps them sorted and a lookup by sequence is
/// a binary search. Their summaries are packed (about nine bytes each,
/// `decision/packed.rs`); the subject and action indexes are sets of positions among
/// them, as compressed bitmaps: a subject or action that takes a share of the
/// decisions costs about one bit per decision in its span, a rare one two bytes per
/// decision it has (as `Vec<u32>` lists, four bytes a position: 22 bytes a `cxp.send`
/// that followed the history; `docs/performance.md`, "A million and a half sends on
/// one server"). Entries (bodies) are held for
/// the newest decisions only: `bodies[i]` is the entry of the summary at position
/// `cold + i`; see the module docs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecisionIndex {
    checkpoint: Checkpoint,
    summaries: Packed,
    bodies: VecDeque<DecisionEntry>,
    /// How many of the oldest decisions have no body in memory.
    cold: usize,
    names: Names,
    /// Ids of the newest decisions: a decision logged twice counts once.
    recent: RecentIds,
    /// Subject -> positions of its decisions among the summaries.
    by_subject: BTreeMap<String, RoaringBitmap>,
    /// Action -> positions of its decisions among the summaries.
    by_action: BTreeMap<String, RoaringBitmap>,
    policies: BTreeMap<String, PolicyEntry>,
    /// Decisions the store has (commit bookkeeping, not part of the value).
    saved: Saved,
    /// Decisions handed to the commit in progress.
    taken: Saved,
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
        self.evict(keep_hot);
    }

    fn needs_commit(&self) -> bool {
        self.summaries.len().saturating_sub(self.saved.0) > crate::stored::PRESSING_ENTRIES
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
                self.push(DecisionEntry {
                    sequence: envelope.sequence,
                    at,
                    decision: d.clone(),
                    principal: envelope.record.principal.clone(),
                });
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
    /// Adds a decision (in log order): its summary, its indexes, its body.
    fn push(&mut self, entry: DecisionEntry) {
        let d = &entry.decision;
        let sequence = entry.sequence;
        // Four billion decisions would take this server centuries at its measured rates;
        // past them, positions saturate (the searches by subject or action would miss).
        let position = u32::try_from(self.summaries.len()).unwrap_or(u32::MAX);
        self.recent.push(d.decision_id);
        index(&mut self.by_subject, &d.subject, position);
        index(&mut self.by_action, &d.action, position);
        let summary = Summary {
            sequence,
            at: entry.at,
            subject: self.names.intern(&d.subject),
            action: self.names.intern(&d.action),
            principal: entry.principal.as_deref().map(|p| self.names.intern(p)),
            result: d.result,
            dry_run: d.dry_run,
        };
        self.summaries.push(summary);
        self.bodies.push_back(entry);
    }

    /// Lets go of the bodies of stored decisions older than the newest `keep_hot`.
    fn evict(&mut self, keep_hot: usize) {
        let upto = self
            .saved
            .0
            .min(self.summaries.len().saturating_sub(keep_hot));
        while self.cold < upto && self.bodies.pop_front().is_some() {
            self.cold += 1;
        }
    }

    fn found(&self, position: usize, s: &Summary) -> DecisionRef<'_> {
        DecisionRef {
            sequence: s.sequence,
            at: s.at,
            principal: s.principal.map(|id| self.names.get(id)),
            body: position
                .checked_sub(self.cold)
                .and_then(|i| self.bodies.get(i)),
        }
    }

    /// The decision with this id, among those whose body is in memory: all of them in
    /// a view loaded whole (`projections show`, a rebuild), the newest in a live runner's
    /// (the others are found by a search, then read from the store). A scan, newest
    /// first: no index by id follows the history.
    pub fn decision(&self, decision_id: &Uuid) -> Option<DecisionRef<'_>> {
        let i = self
            .bodies
            .iter()
            .rposition(|b| b.decision.decision_id == *decision_id)?;
        let position = self.cold + i;
        let summary = self.summaries.get(position)?;
        Some(self.found(position, &summary))
    }

    /// Number of decisions.
    pub fn len(&self) -> usize {
        self.summaries.len()
    }

    /// Whether no decision was recorded.
    pub fn is_empty(&self) -> bool {
        self.summaries.len() == 0
    }

    /// How many decisions have their entry in memory (the rest are read from the store).
    pub fn in_memory(&self) -> usize {
        self.bodies.len()
    }

    /// The policy with this content hash.
    pub fn policy(&self, policy_hash: &str) -> Option<&PolicyEntry> {
        self.policies.get(policy_hash)
    }

    /// Decisions matching `query` in log order, one page at a time. Uses the subject or
    /// action index when the query names one.
    pub fn decisions(&self, query: &DecisionQuery, page: &PageRequest) -> Page<DecisionRef<'_>> {
        page.collect(
            self.matching(query, page.start())
                .map(|(i, s)| (s.sequence, self.found(i, &s))),
        )
    }

    /// Decisions matching `query`, newest first: how many match, and the matches from
    /// the `offset`-th on, at most `limit` of them (`governance.query`'s paging). Counts
    /// on the summaries; only the page is handed out.
    pub fn newest(
        &self,
        query: &DecisionQuery,
        offset: usize,
        limit: usize,
    ) -> (usize, Vec<DecisionRef<'_>>) {
        let mut total = 0;
        let mut page = Vec::new();
        for (i, s) in self.matching(query, 0).rev() {
            if total >= offset && page.len() < limit {
                page.push(self.found(i, &s));
            }
            total += 1;
        }
        (total, page)
    }

    /// The decisions matching `query` at or after sequence `start`, with their
    /// positions, in log order (either way). Uses the subject or action index when the
    /// query names one.
    fn matching<'a>(
        &'a self,
        query: &'a DecisionQuery,
        start: u64,
    ) -> impl DoubleEndedIterator<Item = (usize, Summary)> + 'a {
        let first = self.summaries.partition_point(start);
        let index = query
            .subject
            .as_ref()
            .map(|s| self.by_subject.get(s))
            .or_else(|| query.action.as_ref().map(|a| self.by_action.get(a)));
        // Positions saturate at u32::MAX (see `push`).
        let from = u32::try_from(first).unwrap_or(u32::MAX);
        let (listed, all) = match index {
            Some(Some(list)) => (Some(list.range(from..)), 0..0),
            Some(None) => (None, 0..0),
            None => (None, first..self.summaries.len()),
        };
        let mut cursor = Cursor::new(&self.summaries);
        listed
            .into_iter()
            .flatten()
            .map(|p| p as usize)
            .chain(all)
            .filter_map(move |i| cursor.get(i).cloned().map(|s| (i, s)))
            .filter(move |(_, s)| query.matches(s, &self.names))
    }

    /// The sequences of the decisions at `positions` (the stored whole form lists
    /// sequences).
    fn sequences(&self, positions: &RoaringBitmap) -> Vec<u64> {
        let mut cursor = Cursor::new(&self.summaries);
        positions
            .iter()
            .filter_map(|p| cursor.get(p as usize).map(|s| s.sequence))
            .collect()
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

mod packed;
mod recent;
#[cfg(test)]
mod search_tests;
mod stored;
mod summary;
#[cfg(test)]
mod tests;
