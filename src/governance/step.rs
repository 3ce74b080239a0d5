//! Governance as a step of the kernel writer's decide (one writer, one append).
//!
//! The kernel's writer is the one appender of the fact streams (`cxp.traffic`,
//! `volk.lifecycle`, `session.events`), so it keeps the engine's facts current itself
//! instead of governance reading the log before every decision:
//!
//! 1. Before a batch, [`Governance::sync_facts`] folds anything another process
//!    appended (normally nothing: one read past the end per fact stream).
//! 2. A governed command is decided by [`Governance::decide_in_batch`] (cache, else the
//!    engine, no log read). Its `decision recorded` event is returned, not appended:
//!    the writer puts it into the same append batch as the events it allowed.
//! 3. The events the writer emits are folded at once, at the sequences the append will
//!    give them ([`Governance::fold_provisional`]), so the next command of the batch is
//!    decided on facts that include them (a send budget counts every earlier send).
//! 4. After the append, the writer compares those sequences with what the log
//!    assigned; if they differ, or the append failed, [`Governance::resync`] refolds the
//!    facts from the log: the engine never keeps a fact the log does not hold.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::DecisionResult;
use orchestrata_schemas::events::{EventRecord, Stream};
use uuid::Uuid;

use super::facts::{FactsView, FACT_STREAMS};
use super::judgment::Judgment;
use super::request::{Decision, Request};
use super::service::Governance;
use super::GovernanceError;

/// A decision taken inside the writer's batch, with the event that records it.
#[derive(Debug, Clone)]
pub(crate) struct BatchDecision {
    /// The decision (its `sequence` is 0 until the batch is appended).
    pub decision: Decision,
    /// The `decision recorded` event, to append with the command's events.
    pub record: EventRecord,
}

/// The decision and its `decision recorded` event for `judgment` of `request`, stamped
/// `at` and attributed to the request's principal. A judgment without an answer (engine
/// unavailable, Prolog error) is a fail-closed deny carrying the error.
pub(super) fn recorded(
    request: &Request,
    judgment: Judgment,
    dry_run: bool,
    at: DateTime<Utc>,
) -> (Decision, EventRecord) {
    let (result, trace, articles, error) = match &judgment.outcome {
        Ok(o) => (o.result, o.trace.clone(), o.articles.clone(), None),
        Err(e) => (
            DecisionResult::Deny,
            vec!["fail_closed".to_owned()],
            Vec::new(),
            Some(e.clone()),
        ),
    };
    let decision_id = Uuid::new_v4();
    let recorded_query = judgment.recorded_query(request);
    let event = DecisionRecorded {
        decision_id,
        subject_kind: request.subject_kind,
        subject: request.subject.clone(),
        action: request.action.clone(),
        resource: request.resource.clone(),
        result,
        rule_trace: trace.clone(),
        articles_applied: articles.clone(),
        policy_hash: judgment.policy_hash.clone(),
        latency_us: i64::try_from(judgment.latency.as_micros()).unwrap_or(i64::MAX),
        query: serde_json::to_string(&recorded_query).ok(),
        dry_run,
        reason: error.clone(),
    };
    let record = EventRecord::new("governance", request.subject.clone(), event, at)
        .by(request.principal.clone());
    let decision = Decision {
        decision_id,
        result,
        trace,
        articles,
        policy_hash: judgment.policy_hash,
        latency: judgment.latency,
        cached: judgment.cached,
        error,
        sequence: 0,
    };
    (decision, record)
}

impl Governance {
    /// Decides `request` on the facts as the writer keeps them (no log read) and
    /// returns the decision with its `decision recorded` event, stamped `at`, for the
    /// caller to append in its own batch.
    pub(crate) async fn decide_in_batch(
        &self,
        request: &Request,
        at: DateTime<Utc>,
    ) -> Result<BatchDecision, GovernanceError> {
        request.validate()?;
        let judgment = self.judge_with(request, true, false).await;
        let (decision, record) = recorded(request, judgment, false, at);
        Ok(BatchDecision { decision, record })
    }

    /// Folds `records` (in append order) into the facts at the sequences they will
    /// take — each fact stream's next position — and queues the changes for the engine
    /// ahead of any later decision. Returns, per record of a fact stream, its index in
    /// `records` and the sequence assumed, for the writer to check after its append.
    pub(crate) async fn fold_provisional(&self, records: &[EventRecord]) -> Vec<(usize, u64)> {
        let mut assumed = Vec::new();
        let mut changes = Vec::new();
        let mut facts = self.inner.facts.lock().await;
        for (i, record) in records.iter().enumerate() {
            let stream = record.stream();
            if !FACT_STREAMS.contains(&stream) {
                continue;
            }
            let sequence = facts.position(stream);
            changes.extend(facts.apply_at(stream, sequence, record));
            assumed.push((i, sequence));
        }
        // Queued under the facts lock, so a renewal's snapshot (taken under it) and
        // the changes queued before it never overlap (see `renewal.rs`).
        if !changes.is_empty() {
            self.note_fact_changes(&changes);
            if let Err(e) = self.inner.engine.apply_nowait(changes) {
                tracing::warn!(error = %e, "facts not applied: engine unavailable");
            }
            self.renew_if_due(&facts);
        }
        assumed
    }

    /// Sets the epoch of fact streams the facts view has none for yet (a log that had
    /// no event on them when governance started), so its checkpoint names them.
    pub(crate) async fn note_epochs(&self, epochs: BTreeMap<Stream, String>) {
        let mut facts = self.inner.facts.lock().await;
        for (stream, epoch) in epochs {
            facts
                .epochs
                .entry(stream.as_str().to_owned())
                .or_insert(epoch);
        }
    }

    /// Whether the facts view lacks the epoch of `stream`.
    pub(crate) async fn lacks_epoch(&self, stream: Stream) -> bool {
        !self
            .inner
            .facts
            .lock()
            .await
            .epochs
            .contains_key(stream.as_str())
    }

    /// Makes the facts what the log says: a fresh fold of the fact streams, loaded into
    /// the engine in place of what it held. After a failed append (the provisional
    /// folds may name events that never landed) or a sequence another appender took.
    pub(crate) async fn resync(&self) -> Result<(), GovernanceError> {
        let mut facts = self.inner.facts.lock().await;
        let mut fresh = FactsView::with_window(self.inner.config.fact_window);
        self.fold_log(&mut fresh, false).await?;
        // Whatever the reset does, the reusable answers were taken on facts that may
        // not have landed.
        self.roster_cache(super::roster_cache::RosterCache::invalidate);
        self.inner.engine.reset(fresh.facts()).await?;
        *facts = fresh;
        Ok(())
    }
}
