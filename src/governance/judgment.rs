//! [`Judgment`]: what one evaluation answered, before it is recorded.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::request::{Outcome, RecordedQuery, Request};

/// An evaluation before it is recorded (see [`Governance::judge`](super::Governance::judge)).
#[derive(Debug, Clone)]
pub struct Judgment {
    /// The policy's answer, or why there is none.
    pub outcome: Result<Outcome, String>,
    /// `prolog` or `engine` when `outcome` is an error.
    pub error_kind: Option<String>,
    /// Served from the cache.
    pub cached: bool,
    /// Hash of the policy consulted (`none` if no policy is loaded).
    pub policy_hash: String,
    /// Fact positions the evaluation saw.
    pub facts_at: BTreeMap<String, u64>,
    /// The packet window of the facts it saw (`None`: every packet).
    pub facts_window: Option<u64>,
    /// Evaluation time.
    pub latency: Duration,
}

impl Judgment {
    /// An answer served from a cache, asked at `started`: by the policy-only cache with
    /// no positions (it depends on no fact), by the roster cache with the positions of
    /// the moment it was served.
    pub(super) fn cached(
        outcome: Outcome,
        policy_hash: String,
        facts_at: BTreeMap<String, u64>,
        facts_window: Option<u64>,
        started: Instant,
    ) -> Self {
        Judgment {
            outcome: Ok(outcome),
            error_kind: None,
            cached: true,
            policy_hash,
            facts_at,
            facts_window,
            latency: started.elapsed(),
        }
    }

    /// What `request` asked and what this judgment saw — goal, context, fact positions
    /// and window, error kind: the record that lets `audit verify` ask again.
    pub fn recorded_query(&self, request: &Request) -> RecordedQuery {
        RecordedQuery {
            goal: request.goal_text(),
            subject_kind: request.subject_kind,
            context: request.context.clone(),
            facts_at: self.facts_at.clone(),
            fact_window: self.facts_window,
            error_kind: self.error_kind.clone(),
            asked_action: None,
            asked_resource: None,
        }
    }
}
