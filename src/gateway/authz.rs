//! Authorization of methods and topics, and the audit record of each decision.
//!
//! A method needs the scope its row in the method table names; a topic the scope of
//! the contract's `event_topics`. Every denial, and every allowed call of a mutating
//! method or subscription, is appended to `governance.decisions` as a
//! `decision_recorded` event (subject kind `client`), so audits see who was let in to
//! do what. Allowed reads are not recorded: they change nothing and would put an fsync
//! on every `gateway.ping`.

use std::time::Instant;

use chrono::Utc;
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::{DecisionResult, SubjectKind};
use orchestrata_schemas::events::EventRecord;
use uuid::Uuid;

use super::auth::Scope;
use super::error::RpcError;
use super::state::Shared;

/// Policy hash recorded for decisions taken by the gateway's scope table.
pub const SCOPE_TABLE_POLICY: &str = "gateway-scope-table-v1";

/// Decides whether a client with `have` may do `action` needing `need`; records the
/// decision when `record` (or when denied) and answers -32001 `insufficient_scope` on
/// denial.
pub async fn decide(
    gw: &Shared,
    client_id: &str,
    have: Scope,
    need: Scope,
    action: &str,
    resource: &str,
    record: bool,
) -> Result<(), RpcError> {
    let started = Instant::now();
    let allowed = have.covers(need);
    if record || !allowed {
        let rule = format!(
            "scope_sufficient({}, {}) = {allowed}",
            have.as_str(),
            need.as_str()
        );
        let event = DecisionRecorded {
            decision_id: Uuid::new_v4(),
            subject_kind: SubjectKind::Client,
            subject: client_id.to_owned(),
            action: action.to_owned(),
            resource: resource.to_owned(),
            result: if allowed {
                DecisionResult::Allow
            } else {
                DecisionResult::Deny
            },
            rule_trace: vec![rule],
            articles_applied: Vec::new(),
            policy_hash: SCOPE_TABLE_POLICY.into(),
            latency_us: i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX),
            query: Some(format!("gateway_can_execute('{client_id}', '{action}')")),
            dry_run: false,
            reason: Some(format!(
                "client scope {} {} required scope {}",
                have.as_str(),
                if allowed { "covers" } else { "does not cover" },
                need.as_str()
            )),
        };
        let record = EventRecord::new("gateway", client_id, event, Utc::now());
        // Fail closed: an allow that cannot be audited is not granted.
        gw.append(&record).await?;
    }
    if allowed {
        Ok(())
    } else {
        Err(RpcError::insufficient_scope(
            action,
            have.as_str(),
            need.as_str(),
        ))
    }
}
