//! Events of the `governance.decisions` stream.
//!
//! Every governance decision and every policy load, so audits can be replayed offline.

use super::types::{DecisionResult, SubjectKind};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Governance decided whether a subject may perform an action on a resource.
///
/// Stream `governance.decisions`, event type `decision_recorded`, Avro `schemas/avro/governance.decisions.DecisionRecorded.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecorded {
    /// Unique decision id.
    #[serde(with = "crate::events::fields::uuid")]
    pub decision_id: Uuid,
    /// Client or Volk.
    pub subject_kind: SubjectKind,
    /// Client id or Volk alias.
    pub subject: String,
    /// What was asked, e.g. `cxp.send`.
    pub action: String,
    /// What it was asked on, e.g. a thread or Volk.
    pub resource: String,
    /// allow, deny or escalate.
    pub result: DecisionResult,
    /// The rules evaluated, in order (the Prolog trace).
    pub rule_trace: Vec<String>,
    /// Constitutional articles that applied, e.g. `Article III`.
    pub articles_applied: Vec<String>,
    /// Content hash of the policy that decided (see `PolicyLoaded`).
    pub policy_hash: String,
    /// Evaluation time in microseconds.
    pub latency_us: i64,
    /// The query evaluated, if recorded.
    pub query: Option<String>,
    /// True for `governance.evaluate` (no effect).
    pub dry_run: bool,
    /// Human-readable explanation.
    pub reason: Option<String>,
}

/// A policy was loaded; its full text is kept so audits can rebuild it.
///
/// Stream `governance.decisions`, event type `policy_loaded`, Avro `schemas/avro/governance.decisions.PolicyLoaded.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyLoaded {
    /// Content hash of `text` (the key decisions refer to).
    pub policy_hash: String,
    /// Where it came from (file path or name).
    pub origin: String,
    /// The full policy text.
    pub text: String,
    /// Number of rules in it.
    pub rule_count: i32,
}
