//! Offline audit: re-evaluate recorded decisions from the log alone.
//!
//! [`AuditLog::read`] loads the `governance.decisions` stream (policies by hash,
//! decisions in order) and the fact streams. [`verify`] re-evaluates every decision
//! under the exact policy text recorded for its hash, with the facts as of the
//! positions the decision recorded, and reports any difference; [`diff`] re-evaluates
//! the (non-dry-run) decisions under a candidate policy and reports changed results.
//!
//! Decisions are replayed in log order with the facts advanced incrementally, so a
//! verify costs one evaluation per decision (not one rebuild).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::{Envelope, Event, Stream};
use serde::Serialize;

use super::evaluator::{Evaluator, DEFAULT_INFERENCE_LIMIT};
use super::facts::{FactsView, FACT_STREAMS};
use super::policy::Policy;
use super::request::{RecordedQuery, Request};
use super::GovernanceError;
use crate::log::{EventLog, Pager};

/// One recorded decision with its position.
#[derive(Debug, Clone)]
pub struct RecordedDecision {
    /// Sequence in `governance.decisions`.
    pub sequence: u64,
    /// When it was recorded.
    pub timestamp: DateTime<Utc>,
    /// Who acted: the principal named on the event's envelope, if any.
    pub principal: Option<String>,
    /// The event.
    pub event: DecisionRecorded,
}

/// Everything an audit reads from the log.
#[derive(Debug, Default)]
pub struct AuditLog {
    /// Recorded policy texts by their recorded hash.
    pub policies: HashMap<String, String>,
    /// Decisions in log order.
    pub decisions: Vec<RecordedDecision>,
    facts: BTreeMap<Stream, Vec<Envelope>>,
}

impl AuditLog {
    /// Reads the governance and fact streams.
    pub async fn read(log: &dyn EventLog) -> Result<Self, GovernanceError> {
        let mut audit = AuditLog::default();
        for envelope in read_all(log, Stream::GovernanceDecisions).await? {
            match envelope.record.event {
                Event::PolicyLoaded(p) => {
                    audit.policies.insert(p.policy_hash, p.text);
                }
                Event::DecisionRecorded(d) => audit.decisions.push(RecordedDecision {
                    sequence: envelope.sequence,
                    timestamp: envelope.record.timestamp,
                    principal: envelope.record.principal,
                    event: d,
                }),
                _ => {}
            }
        }
        for stream in FACT_STREAMS {
            audit.facts.insert(stream, read_all(log, stream).await?);
        }
        Ok(audit)
    }
}

/// Calls `each` with every recorded decision, in log order, holding one page of the
/// stream at a time: what `audit decisions` lists, without the fact streams
/// [`AuditLog::read`] loads, whose memory follows the whole history. `each`
/// answering `Break` ends the reading there (the listing's reader went away).
pub async fn each_decision(
    log: &dyn EventLog,
    mut each: impl FnMut(RecordedDecision) -> ControlFlow<()>,
) -> Result<(), GovernanceError> {
    let stream = Stream::GovernanceDecisions;
    let Some(from) = log.first_sequence(stream).await? else {
        return Ok(());
    };
    let mut pager = Pager::new(log, stream, from, None);
    while let Some(page) = pager.next_page().await? {
        for envelope in page {
            if let Event::DecisionRecorded(d) = envelope.record.event {
                let flow = each(RecordedDecision {
                    sequence: envelope.sequence,
                    timestamp: envelope.record.timestamp,
                    principal: envelope.record.principal,
                    event: d,
                });
                if flow.is_break() {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

async fn read_all(log: &dyn EventLog, stream: Stream) -> Result<Vec<Envelope>, GovernanceError> {
    let Some(from) = log.first_sequence(stream).await? else {
        return Ok(Vec::new());
    };
    Ok(Pager::new(log, stream, from, None).collect().await?)
}

/// A decision whose re-evaluation does not match the record.
#[derive(Debug, Clone, Serialize)]
pub struct Mismatch {
    /// Sequence of the decision event.
    pub sequence: u64,
    /// Decision id.
    pub decision_id: String,
    /// What differs.
    pub reason: String,
}

/// Result of [`verify`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    /// Decisions re-evaluated.
    pub checked: usize,
    /// Fail-closed decisions caused by an unavailable engine (nothing to re-evaluate).
    pub skipped: usize,
    /// Decisions that differ.
    pub mismatches: Vec<Mismatch>,
}

/// A decision whose result would change under the candidate policy.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// Sequence of the decision event.
    pub sequence: u64,
    /// Decision id.
    pub decision_id: String,
    /// Subject.
    pub subject: String,
    /// Action.
    pub action: String,
    /// Resource.
    pub resource: String,
    /// Recorded result.
    pub recorded: String,
    /// Result under the candidate.
    pub candidate: String,
}

/// Result of [`diff`].
#[derive(Debug, Clone, Default, Serialize)]
pub struct DiffReport {
    /// Decisions compared.
    pub compared: usize,
    /// Those whose result changes.
    pub changes: Vec<Change>,
    /// Changes per action.
    pub by_action: BTreeMap<String, usize>,
    /// Changes per subject.
    pub by_subject: BTreeMap<String, usize>,
}

/// Replays facts into one evaluator, moving forward incrementally.
struct Replayer {
    evaluator: Evaluator,
    view: FactsView,
}

impl Replayer {
    fn new(policy: &Policy) -> Result<Self, GovernanceError> {
        Ok(Replayer {
            evaluator: Evaluator::load(policy, DEFAULT_INFERENCE_LIMIT)?,
            view: FactsView::new(),
        })
    }

    /// Moves the facts forward to `target`, folded with `window` (the decision's):
    /// from scratch when the view is past the target or kept another window.
    fn advance(
        &mut self,
        audit: &AuditLog,
        target: &BTreeMap<String, u64>,
        window: Option<u64>,
    ) -> Result<(), GovernanceError> {
        let behind = FACT_STREAMS
            .iter()
            .any(|s| target.get(s.as_str()).copied().unwrap_or(0) < self.view.position(*s));
        if behind || self.view.window() != window {
            self.evaluator.clear_facts()?;
            self.view = FactsView::with_window(window);
        }
        for stream in FACT_STREAMS {
            let goal = target.get(stream.as_str()).copied().unwrap_or(0);
            let events = audit.facts.get(&stream).map(Vec::as_slice).unwrap_or(&[]);
            // From the first event not folded yet (a stream is in sequence order): each
            // decision folds only the events since the previous one, not the stream
            // from its start again.
            let folded = self.view.position(stream);
            let next = events.partition_point(|e| e.sequence < folded);
            let mut changes = Vec::new();
            for envelope in &events[next..] {
                if envelope.sequence >= goal {
                    break;
                }
                changes.extend(self.view.apply(envelope));
            }
            if self.view.position(stream) < goal {
                return Err(GovernanceError::Prolog(format!(
                    "{stream} events before {goal} are no longer on the log"
                )));
            }
            self.evaluator.apply(&changes)?;
        }
        Ok(())
    }
}

/// The query a decision recorded (context, fact positions, what was asked); for a
/// record without one (or unreadable), an empty query: no context, no positions.
fn recorded_query(d: &DecisionRecorded) -> RecordedQuery {
    d.query
        .as_deref()
        .and_then(|q| serde_json::from_str(q).ok())
        .unwrap_or(RecordedQuery {
            goal: String::new(),
            subject_kind: d.subject_kind,
            context: BTreeMap::new(),
            facts_at: BTreeMap::new(),
            fact_window: None,
            error_kind: None,
            asked_action: None,
            asked_resource: None,
        })
}

fn request_of(d: &DecisionRecorded) -> (Request, RecordedQuery) {
    let recorded = recorded_query(d);
    let request = Request {
        subject_kind: d.subject_kind,
        subject: d.subject.clone(),
        action: recorded
            .asked_action
            .clone()
            .unwrap_or_else(|| d.action.clone()),
        resource: recorded
            .asked_resource
            .clone()
            .unwrap_or_else(|| d.resource.clone()),
        context: recorded.context.clone(),
        principal: None,
    };
    (request, recorded)
}

fn name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "unknown".into(),
    }
}

/// The order in which to replay the decisions: by fact window, then by the fact
/// positions each was decided at, then by sequence. The engine decides one request at
/// a time and its positions only grow, so this is the order it evaluated them in, and
/// the facts only ever move forward. The log's order is not: concurrent requests' decisions
/// land in either order, and a cached decision (no positions recorded) can fall
/// between two others. Each such step back would refold the facts from the start.
fn replay_order(audit: &AuditLog) -> Vec<usize> {
    let mut order: Vec<usize> = (0..audit.decisions.len()).collect();
    order.sort_by_cached_key(|&i| {
        let rd = &audit.decisions[i];
        let recorded = recorded_query(&rd.event);
        let positions: Vec<u64> = FACT_STREAMS
            .iter()
            .map(|s| recorded.facts_at.get(s.as_str()).copied().unwrap_or(0))
            .collect();
        (recorded.fact_window, positions, rd.sequence)
    });
    order
}

/// Re-evaluates every recorded decision under its recorded policy; mismatches in log
/// order.
pub fn verify(audit: &AuditLog) -> VerifyReport {
    let mut report = VerifyReport::default();
    let mut replayers: HashMap<String, Result<Replayer, String>> = HashMap::new();
    for rd in replay_order(audit).into_iter().map(|i| &audit.decisions[i]) {
        let d = &rd.event;
        let (request, recorded) = request_of(d);
        let mismatch = |reason: String| Mismatch {
            sequence: rd.sequence,
            decision_id: d.decision_id.to_string(),
            reason,
        };
        if recorded.error_kind.as_deref() == Some("engine") {
            report.skipped += 1;
            continue;
        }
        report.checked += 1;
        let Some(text) = audit.policies.get(&d.policy_hash) else {
            report.mismatches.push(mismatch(format!(
                "no policy recorded with hash {}",
                d.policy_hash
            )));
            continue;
        };
        let replayer = replayers.entry(d.policy_hash.clone()).or_insert_with(|| {
            let policy = Policy::from_bundle("log", text);
            if policy.hash() != d.policy_hash {
                return Err(format!(
                    "the recorded policy text hashes to {}, not {}: it was altered",
                    policy.hash(),
                    d.policy_hash
                ));
            }
            Replayer::new(&policy).map_err(|e| e.to_string())
        });
        let replayer = match replayer {
            Ok(r) => r,
            Err(e) => {
                report.mismatches.push(mismatch(e.clone()));
                continue;
            }
        };
        if let Err(e) = replayer.advance(audit, &recorded.facts_at, recorded.fact_window) {
            report
                .mismatches
                .push(mismatch(format!("cannot rebuild the facts: {e}")));
            continue;
        }
        match replayer.evaluator.decide(&request) {
            Ok(o) => {
                let mut diffs = Vec::new();
                if o.result != d.result {
                    diffs.push(format!(
                        "result {} recorded, {} re-evaluated",
                        name(&d.result),
                        name(&o.result)
                    ));
                }
                if recorded.error_kind.is_none() && o.trace != d.rule_trace {
                    diffs.push(format!(
                        "trace {:?} recorded, {:?} re-evaluated",
                        d.rule_trace, o.trace
                    ));
                }
                if recorded.error_kind.is_none() && o.articles != d.articles_applied {
                    diffs.push(format!(
                        "articles {:?} recorded, {:?} re-evaluated",
                        d.articles_applied, o.articles
                    ));
                }
                if recorded.error_kind.is_some() {
                    diffs.push("recorded a Prolog error, re-evaluation succeeded".into());
                }
                if !diffs.is_empty() {
                    report.mismatches.push(mismatch(diffs.join("; ")));
                }
            }
            Err(e) => {
                if recorded.error_kind.as_deref() != Some("prolog")
                    || d.result != orchestrata_schemas::events::types::DecisionResult::Deny
                {
                    report
                        .mismatches
                        .push(mismatch(format!("re-evaluation failed: {e}")));
                }
            }
        }
    }
    report.mismatches.sort_by_key(|m| m.sequence);
    report
}

/// Re-evaluates the recorded (non-dry-run) decisions under `candidate`; changes in log
/// order.
pub fn diff(audit: &AuditLog, candidate: &Policy) -> Result<DiffReport, GovernanceError> {
    let mut replayer = Replayer::new(candidate)?;
    let mut report = DiffReport::default();
    for rd in replay_order(audit).into_iter().map(|i| &audit.decisions[i]) {
        let d = &rd.event;
        if d.dry_run {
            continue;
        }
        let (request, recorded) = request_of(d);
        if recorded.error_kind.as_deref() == Some("engine") {
            continue;
        }
        report.compared += 1;
        replayer.advance(audit, &recorded.facts_at, recorded.fact_window)?;
        let candidate_result = match replayer.evaluator.decide(&request) {
            Ok(o) => name(&o.result),
            Err(_) => "deny".to_owned(),
        };
        let recorded_result = name(&d.result);
        if candidate_result != recorded_result {
            *report.by_action.entry(d.action.clone()).or_default() += 1;
            *report.by_subject.entry(d.subject.clone()).or_default() += 1;
            report.changes.push(Change {
                sequence: rd.sequence,
                decision_id: d.decision_id.to_string(),
                subject: d.subject.clone(),
                action: d.action.clone(),
                resource: d.resource.clone(),
                recorded: recorded_result,
                candidate: candidate_result,
            });
        }
    }
    report.changes.sort_by_key(|c| c.sequence);
    Ok(report)
}
