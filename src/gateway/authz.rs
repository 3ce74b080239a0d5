//! Authorization of methods and topics, and the audit record of each decision.
//!
//! A method needs the scope its row in the method table names; a topic the scope of
//! the contract's `event_topics`. With governance attached the question goes to the
//! policy (`decide(client(Id), 'gateway.execute', Method, [scope-Held, required-Need], R)`,
//! answered by `gateway_can_execute/2` for policy clients and `token_can_execute/3` for
//! token clients), which can only tighten the table; decisions are cached by governance. Every denial, and every allowed call of a mutating
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
use super::error::{ErrorCode, RpcError};
use super::state::Shared;
use crate::governance::{Governance, RecordedQuery, Request};

/// Policy hash recorded for decisions taken by the gateway's scope table (a gateway
/// started without governance).
pub const SCOPE_TABLE_POLICY: &str = "gateway-scope-table-v1";

/// What the policy (or the scope table) answered.
struct Verdict {
    allowed: bool,
    trace: Vec<String>,
    policy_hash: String,
    query: String,
    reason: Option<String>,
}

/// The governance question for `action` on `resource`: `gateway.subscribe` for a
/// topic (`subscribe:<topic>`), `gateway.execute` for a method.
fn request(client_id: &str, have: Scope, need: Scope, action: &str, resource: &str) -> Request {
    let (asked, on) = match action.strip_prefix("subscribe:") {
        Some(_) => ("gateway.subscribe", resource),
        None => ("gateway.execute", action),
    };
    let mut request = Request::client(client_id, asked, on);
    request.context.insert("scope".into(), have.as_str().into());
    request
        .context
        .insert("required".into(), need.as_str().into());
    request
}

/// Asks the policy's `gateway_can_execute/2` / `gateway_can_subscribe/2` (through
/// `decide/5`, cached); fails closed when the policy cannot answer.
async fn by_policy(g: &Governance, request: &Request) -> Verdict {
    let judgment = g.judge(request).await;
    // What `audit verify` needs to ask the policy the same question again: the
    // context (the token's scope), the facts' positions, and the action and resource
    // asked, which are not the decision's (it names the method, not `gateway.execute`).
    let recorded = RecordedQuery {
        asked_action: Some(request.action.clone()),
        asked_resource: Some(request.resource.clone()),
        ..judgment.recorded_query(request)
    };
    let query = serde_json::to_string(&recorded).unwrap_or_else(|_| request.goal_text());
    match judgment.outcome {
        Ok(outcome) => Verdict {
            allowed: outcome.result == DecisionResult::Allow,
            trace: outcome.trace,
            policy_hash: judgment.policy_hash,
            query,
            reason: None,
        },
        Err(e) => Verdict {
            allowed: false,
            trace: vec!["fail_closed".into()],
            policy_hash: judgment.policy_hash,
            query,
            reason: Some(e),
        },
    }
}

/// The scope table alone, for a gateway without governance.
fn by_table(client_id: &str, have: Scope, need: Scope, action: &str) -> Verdict {
    let allowed = have.covers(need);
    Verdict {
        allowed,
        trace: vec![format!(
            "scope_sufficient({}, {}) = {allowed}",
            have.as_str(),
            need.as_str()
        )],
        policy_hash: SCOPE_TABLE_POLICY.into(),
        query: format!("gateway_can_execute('{client_id}', '{action}')"),
        reason: Some(format!(
            "client scope {} {} required scope {}",
            have.as_str(),
            if allowed { "covers" } else { "does not cover" },
            need.as_str()
        )),
    }
}

/// Decides whether a client with `have` may do `action` (a method, or
/// `subscribe:<topic>`) needing `need` by the method table: through the governance
/// policy when the gateway has one (the policy may tighten the table, never loosen
/// it), else by the table; answers -32001 `insufficient_scope` on denial. A denial is
/// recorded here, before the error is returned. The record of an allowed call (when
/// `record`) is returned, not appended: the caller appends it before the call acts, or
/// hands it to the kernel to append in the same batch as the command the call issues
/// (one append per call). Fail closed: an allow that cannot be recorded is not granted.
pub async fn decide(
    gw: &Shared,
    client_id: &str,
    have: Scope,
    need: Scope,
    action: &str,
    resource: &str,
    record: bool,
) -> Result<Option<EventRecord>, RpcError> {
    let started = Instant::now();
    let mut verdict = match &gw.services.governance {
        Some(g) => by_policy(g, &request(client_id, have, need, action, resource)).await,
        None => by_table(client_id, have, need, action),
    };
    // The table is a floor: whatever a site policy says, it cannot grant what the
    // token's scope does not cover.
    if verdict.allowed && !have.covers(need) {
        verdict.allowed = false;
        verdict.trace.push(format!(
            "scope_sufficient({}, {}) = false",
            have.as_str(),
            need.as_str()
        ));
    }
    let allowed = verdict.allowed;
    // ISSUE-14: a policy that could not answer (engine down, restarting, or a Prolog
    // error) is not a scope problem: say governance was unavailable.
    let unavailable = match (verdict.trace.as_slice(), &verdict.reason) {
        ([only], Some(error)) if only == "fail_closed" => Some(error.clone()),
        _ => None,
    };
    if record || !allowed {
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
            rule_trace: verdict.trace,
            articles_applied: Vec::new(),
            policy_hash: verdict.policy_hash,
            latency_us: i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX),
            query: Some(verdict.query),
            dry_run: false,
            reason: verdict.reason,
        };
        let principal = gw
            .clients()
            .get(client_id)
            .and_then(|c| c.principal())
            .map(|p| p.name);
        let record = EventRecord::new("gateway", client_id, event, Utc::now()).by(principal);
        if allowed {
            return Ok(Some(record));
        }
        gw.append(&record).await?;
    }
    if allowed {
        Ok(None)
    } else if let Some(error) = unavailable {
        Err(RpcError::new(ErrorCode::Unauthorized, "governance_unavailable").with("detail", error))
    } else {
        Err(RpcError::insufficient_scope(
            action,
            have.as_str(),
            need.as_str(),
        ))
    }
}
