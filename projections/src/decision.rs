//! [`DecisionIndex`]: governance decisions by time, subject, action and result.
//!
//! Folds `governance.decisions`: every `decision_recorded` becomes an entry (kept in log
//! order, the cursor being its sequence, with the principal its envelope names), indexed
//! by decision id, subject and action;
//! every `policy_loaded` is kept by its hash so a decision's policy can be looked up.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::DecisionResult;
use orchestrata_schemas::events::{Envelope, Event, Stream};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::stored::{Saved, StoredEntry};
use crate::{Changes, Checkpoint, Page, PageRequest, StoredError, View, ViewName};

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
}

impl DecisionQuery {
    fn matches(&self, e: &DecisionEntry) -> bool {
        self.subject
            .as_ref()
            .is_none_or(|s| *s == e.decision.subject)
            && self
                .principal
                .as_ref()
                .is_none_or(|p| Some(p) == e.principal.as_ref())
            && self.action.as_ref().is_none_or(|a| *a == e.decision.action)
            && self.result.is_none_or(|r| r == e.decision.result)
            && self.from.is_none_or(|f| e.at >= f)
            && self.until.is_none_or(|u| e.at < u)
    }
}

/// The governance decisions index.
///
/// Decisions are kept in a `Vec` in log order: the view folds one stream, whose
/// checkpoint admits only increasing sequences, so appending keeps it sorted and a
/// lookup by sequence is a binary search. The subject and action indexes hold sorted
/// sequence lists for the same reason (appends, no tree rebalancing per event).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DecisionIndex {
    checkpoint: Checkpoint,
    decisions: Vec<DecisionEntry>,
    by_id: BTreeMap<Uuid, u64>,
    by_subject: BTreeMap<String, Vec<u64>>,
    by_action: BTreeMap<String, Vec<u64>>,
    policies: BTreeMap<String, PolicyEntry>,
    /// Decisions the store has (commit bookkeeping, not part of the value).
    #[serde(skip)]
    saved: Saved,
}

impl View for DecisionIndex {
    const NAME: ViewName = ViewName::Decision;
    const STREAMS: &'static [Stream] = &[Stream::GovernanceDecisions];

    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    fn take_changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        self.changes(all)
    }

    fn from_stored(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        Self::restore(head, entries)
    }

    fn apply(&mut self, envelope: &Envelope) -> bool {
        if envelope.stream != Stream::GovernanceDecisions
            || !self.checkpoint.admit(envelope.stream, envelope.sequence)
        {
            return false;
        }
        let at = envelope.record.timestamp;
        let sequence = envelope.sequence;
        match &envelope.record.event {
            Event::DecisionRecorded(d) if !self.by_id.contains_key(&d.decision_id) => {
                self.by_id.insert(d.decision_id, sequence);
                index(&mut self.by_subject, &d.subject, sequence);
                index(&mut self.by_action, &d.action, sequence);
                self.decisions.push(DecisionEntry {
                    sequence,
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
    /// The decision with this id.
    pub fn decision(&self, decision_id: &Uuid) -> Option<&DecisionEntry> {
        self.by_id
            .get(decision_id)
            .and_then(|s| self.at_sequence(*s))
    }

    /// The decision recorded by the event at `sequence`.
    fn at_sequence(&self, sequence: u64) -> Option<&DecisionEntry> {
        self.decisions
            .binary_search_by_key(&sequence, |e| e.sequence)
            .ok()
            .map(|i| &self.decisions[i])
    }

    /// Number of decisions.
    pub fn len(&self) -> usize {
        self.decisions.len()
    }

    /// Whether no decision was recorded.
    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty()
    }

    /// The policy with this content hash.
    pub fn policy(&self, policy_hash: &str) -> Option<&PolicyEntry> {
        self.policies.get(policy_hash)
    }

    /// Decisions matching `query` in log order, one page at a time. Uses the subject or
    /// action index when the query names one.
    pub fn decisions(&self, query: &DecisionQuery, page: &PageRequest) -> Page<&DecisionEntry> {
        let start = page.start();
        let index = query
            .subject
            .as_ref()
            .map(|s| self.by_subject.get(s))
            .or_else(|| query.action.as_ref().map(|a| self.by_action.get(a)));
        let candidates: Box<dyn Iterator<Item = &DecisionEntry> + '_> = match index {
            Some(Some(list)) => {
                let from = list.partition_point(|s| *s < start);
                Box::new(list[from..].iter().filter_map(|s| self.at_sequence(*s)))
            }
            Some(None) => Box::new(std::iter::empty()),
            None => {
                let from = self.decisions.partition_point(|e| e.sequence < start);
                Box::new(self.decisions[from..].iter())
            }
        };
        page.collect(
            candidates
                .filter(|e| query.matches(e))
                .map(|e| (e.sequence, e)),
        )
    }
}

/// Appends `sequence` to `key`'s list, allocating the key only the first time.
/// Sequences arrive in increasing order, so the list stays sorted.
fn index(map: &mut BTreeMap<String, Vec<u64>>, key: &str, sequence: u64) {
    match map.get_mut(key) {
        Some(list) => list.push(sequence),
        None => {
            map.insert(key.to_owned(), vec![sequence]);
        }
    }
}

mod stored;
#[cfg(test)]
mod tests;
