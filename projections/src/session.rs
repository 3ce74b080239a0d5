//! [`SessionView`]: work sessions, their context and facts, and portfolio statistics.
//!
//! Folds `session.events`. A session is **open** from `opened` (and again after
//! `recovered`, i.e. resumed) and **closed** on `closed`, which records its summary and
//! the tasks carried over. Its duration is the sum of its open periods, in event time.
//! Its context is the JSON merge patch (RFC 7396) of every `context_updated`.
//!
//! Portfolio statistics ([`SessionView::portfolio`]): a *completed* session is a closed
//! one with nothing carried over, and the completion rate is completed / closed.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::{Envelope, Event, Stream};
use serde::{Deserialize, Serialize};

use crate::{Checkpoint, Page, PageRequest, Transition, View, ViewName};

/// Whether a session is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Running (opened or resumed).
    Open,
    /// Ended.
    Closed,
}

/// A fact asserted in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// Kind of fact.
    pub fact_type: String,
    /// The fact.
    pub data: Json,
    /// Who asserted it.
    pub asserted_by: String,
    /// Event time.
    pub at: DateTime<Utc>,
}

/// An error reported in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionError {
    /// Stable error code.
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// Whether the session could go on.
    pub recoverable: bool,
    /// Event time.
    pub at: DateTime<Utc>,
}

/// One session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// The session id.
    pub session_id: String,
    /// Its portfolio.
    pub portfolio_id: String,
    /// What it should achieve.
    pub goals: Vec<String>,
    /// Who opened it.
    pub opened_by: String,
    /// The principal that opened it (on the `opened` event's envelope), its owner:
    /// only it or an admin may close it or write into it. `None` for a session opened
    /// by no principal (the system, or a log from before principals).
    #[serde(default)]
    pub owner: Option<String>,
    /// Event time of `opened`.
    pub opened_at: DateTime<Utc>,
    /// Event time of the last `closed` (`None` while never closed).
    pub closed_at: Option<DateTime<Utc>>,
    /// Current status.
    pub status: SessionStatus,
    /// Every status it went through.
    pub status_history: Vec<Transition<SessionStatus>>,
    /// The context: merge of every context patch (a JSON object).
    pub context: serde_json::Value,
    /// Facts asserted, in log order.
    pub facts: Vec<Fact>,
    /// Errors reported, in log order.
    pub errors: Vec<SessionError>,
    /// Summary given at the last close.
    pub summary: Option<String>,
    /// Tasks carried over at the last close.
    pub carryover: Vec<String>,
    /// Total milliseconds spent open in closed periods (the current open period is not
    /// counted until it closes).
    pub duration_ms: i64,
    /// Start of the current open period.
    open_since: Option<DateTime<Utc>>,
}

/// Statistics of one portfolio's sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortfolioStats {
    /// Sessions ever opened.
    pub total: u64,
    /// Sessions open now.
    pub active: u64,
    /// Sessions closed now.
    pub closed: u64,
    /// Closed sessions that carried nothing over.
    pub completed: u64,
    /// `completed / closed` (0 when none closed).
    pub completion_rate: f64,
    /// Sum of the sessions' closed open-time.
    pub total_duration_ms: i64,
    /// `total_duration_ms / closed` (0 when none closed).
    pub mean_duration_ms: i64,
}

/// The sessions view.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    checkpoint: Checkpoint,
    /// Boxed so tree nodes move pointers, not whole session states, on insert.
    sessions: BTreeMap<String, Box<SessionState>>,
    /// Sequence of `opened` -> session id (the list order and cursor).
    by_sequence: BTreeMap<u64, String>,
    by_portfolio: BTreeMap<String, BTreeSet<String>>,
}

impl View for SessionView {
    const NAME: ViewName = ViewName::Session;
    const STREAMS: &'static [Stream] = &[Stream::SessionEvents];

    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    fn apply(&mut self, envelope: &Envelope) -> bool {
        if envelope.stream != Stream::SessionEvents
            || !self.checkpoint.admit(envelope.stream, envelope.sequence)
        {
            return false;
        }
        let at = envelope.record.timestamp;
        let sequence = envelope.sequence;
        let transition = |status, by: Option<&str>, note: Option<&String>| Transition {
            status,
            at,
            sequence,
            by: by.map(str::to_owned),
            note: note.cloned(),
        };
        match &envelope.record.event {
            Event::SessionOpened(e) => {
                if self.sessions.contains_key(&e.session_id) {
                    return true; // opened twice: the first one counts
                }
                self.by_sequence.insert(sequence, e.session_id.clone());
                match self.by_portfolio.get_mut(&e.portfolio_id) {
                    Some(ids) => {
                        ids.insert(e.session_id.clone());
                    }
                    None => {
                        let ids = BTreeSet::from([e.session_id.clone()]);
                        self.by_portfolio.insert(e.portfolio_id.clone(), ids);
                    }
                }
                self.sessions.insert(
                    e.session_id.clone(),
                    Box::new(SessionState {
                        session_id: e.session_id.clone(),
                        portfolio_id: e.portfolio_id.clone(),
                        goals: e.goals.clone(),
                        opened_by: e.opened_by.clone(),
                        owner: envelope.record.principal.clone(),
                        opened_at: at,
                        closed_at: None,
                        status: SessionStatus::Open,
                        status_history: vec![transition(
                            SessionStatus::Open,
                            Some(&e.opened_by),
                            None,
                        )],
                        context: serde_json::Value::Object(Default::default()),
                        facts: Vec::new(),
                        errors: Vec::new(),
                        summary: None,
                        carryover: Vec::new(),
                        duration_ms: 0,
                        open_since: Some(at),
                    }),
                );
            }
            Event::SessionClosed(e) => {
                if let Some(s) = self.sessions.get_mut(&e.session_id) {
                    if let Some(since) = s.open_since.take() {
                        s.duration_ms += (at - since).num_milliseconds().max(0);
                    }
                    s.status = SessionStatus::Closed;
                    s.closed_at = Some(at);
                    s.summary = Some(e.summary.clone());
                    s.carryover.clone_from(&e.carryover);
                    s.status_history.push(transition(
                        SessionStatus::Closed,
                        None,
                        Some(&e.summary),
                    ));
                }
            }
            Event::SessionRecovered(e) => {
                if let Some(s) = self.sessions.get_mut(&e.session_id) {
                    if s.status == SessionStatus::Closed {
                        s.open_since = Some(at);
                    }
                    s.status = SessionStatus::Open;
                    s.status_history.push(transition(
                        SessionStatus::Open,
                        Some(&e.recovered_by),
                        e.reason.as_ref(),
                    ));
                }
            }
            Event::SessionContextUpdated(e) => {
                if let Some(s) = self.sessions.get_mut(&e.session_id) {
                    merge_patch(&mut s.context, &e.patch.0);
                }
            }
            Event::SessionFactAsserted(e) => {
                if let Some(s) = self.sessions.get_mut(&e.session_id) {
                    s.facts.push(Fact {
                        fact_type: e.fact_type.clone(),
                        data: e.data.clone(),
                        asserted_by: e.asserted_by.clone(),
                        at,
                    });
                }
            }
            Event::SessionErrorOccurred(e) => {
                if let Some(s) = self.sessions.get_mut(&e.session_id) {
                    s.errors.push(SessionError {
                        code: e.code.clone(),
                        message: e.message.clone(),
                        recoverable: e.recoverable,
                        at,
                    });
                }
            }
            _ => {}
        }
        true
    }
}

impl SessionView {
    /// The session with this id.
    pub fn session(&self, session_id: &str) -> Option<&SessionState> {
        self.sessions.get(session_id).map(|s| &**s)
    }

    /// Sessions in the order they were opened, optionally only those with `status`.
    pub fn sessions(
        &self,
        status: Option<SessionStatus>,
        page: &PageRequest,
    ) -> Page<&SessionState> {
        page.collect(
            self.by_sequence
                .range(page.start()..)
                .filter_map(|(seq, id)| self.sessions.get(id).map(|s| (*seq, &**s)))
                .filter(|(_, s)| status.is_none_or(|st| st == s.status)),
        )
    }

    /// Statistics of one portfolio (`None` if it has no session).
    pub fn portfolio(&self, portfolio_id: &str) -> Option<PortfolioStats> {
        let ids = self.by_portfolio.get(portfolio_id)?;
        let mut stats = PortfolioStats {
            total: 0,
            active: 0,
            closed: 0,
            completed: 0,
            completion_rate: 0.0,
            total_duration_ms: 0,
            mean_duration_ms: 0,
        };
        for s in ids.iter().filter_map(|id| self.sessions.get(id)) {
            let s: &SessionState = s;
            stats.total += 1;
            stats.total_duration_ms += s.duration_ms;
            match s.status {
                SessionStatus::Open => stats.active += 1,
                SessionStatus::Closed => {
                    stats.closed += 1;
                    if s.carryover.is_empty() {
                        stats.completed += 1;
                    }
                }
            }
        }
        if stats.closed > 0 {
            stats.completion_rate = stats.completed as f64 / stats.closed as f64;
            stats.mean_duration_ms = stats.total_duration_ms / stats.closed as i64;
        }
        Some(stats)
    }

    /// Every portfolio with its statistics.
    pub fn portfolios(&self) -> BTreeMap<&str, PortfolioStats> {
        self.by_portfolio
            .keys()
            .filter_map(|p| self.portfolio(p).map(|s| (p.as_str(), s)))
            .collect()
    }

    /// Number of sessions open now.
    pub fn active_count(&self) -> usize {
        self.sessions
            .values()
            .filter(|s| s.status == SessionStatus::Open)
            .count()
    }
}

/// RFC 7396 JSON merge patch: objects merge key by key, `null` removes a key, anything
/// else replaces.
fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    let serde_json::Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = serde_json::Value::Object(Default::default());
    }
    if let serde_json::Value::Object(map) = target {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(key);
            } else {
                merge_patch(
                    map.entry(key.clone()).or_insert(serde_json::Value::Null),
                    value,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
