//! `governance.query` (recorded decisions, from the decisions view),
//! `governance.evaluate` (a dry run through the governance service) and
//! `governance.rules` (the loaded predicates; admin) (REQ-014-036..050, ERR-016).
//!
//! Every decision — the kernel's, the gateway's scope checks, dry runs — is a
//! `decision_recorded` event on `governance.decisions`; `governance.query` pages through
//! the view folded from it, newest first. `governance.evaluate` asks the policy without
//! acting: its only effect is one decision recorded with `dry_run = true`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use orchestrata_projections::decision::{DecisionEntry, DecisionQuery};
use orchestrata_schemas::events::types::{DecisionResult, SubjectKind};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::gateway::backends;
use crate::gateway::error::RpcError;
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;
use crate::governance::{Governance, GovernanceError, Request};

/// Page size of `governance.query` when the caller gives no `limit`.
pub const DEFAULT_LIMIT: usize = 50;

/// The governance service, or -32603 `governance_unavailable`.
fn governance(call: &Call) -> Result<Governance, RpcError> {
    call.gw.services.governance.clone().ok_or_else(|| {
        RpcError::internal(
            "governance_unavailable",
            "this gateway was started without a governance engine",
        )
    })
}

/// One decision as answered by `governance.query` (REQ-014-032, 033): the recorded
/// event with its sequence and time, the contract's names `volk_id`, `prolog_query`
/// and `evaluation_latency_ms`, and `principal`, who acted (issue 14; `null` when no
/// principal caused it).
fn decision_json(e: &DecisionEntry) -> RpcResult {
    let mut value = serde_json::to_value(&e.decision)
        .map_err(|err| RpcError::internal("encoding_failed", err))?;
    if let Value::Object(map) = &mut value {
        map.insert("sequence".into(), json!(e.sequence));
        map.insert("timestamp".into(), json!(e.at));
        map.insert("principal".into(), json!(e.principal));
        map.insert("volk_id".into(), json!(e.decision.subject));
        map.insert("prolog_query".into(), json!(e.decision.query));
        map.insert(
            "evaluation_latency_ms".into(),
            json!(e.decision.latency_us as f64 / 1000.0),
        );
    }
    Ok(value)
}

#[derive(Deserialize)]
struct QueryParams {
    date_from: Option<DateTime<Utc>>,
    date_to: Option<DateTime<Utc>>,
    volk_id: Option<String>,
    principal: Option<String>,
    result: Option<DecisionResult>,
    action: Option<String>,
    dry_run: Option<bool>,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

/// Recorded decisions in `[date_from, date_to)`, filtered by subject (`volk_id`), the
/// principal who acted (`principal`), `result`, `action` and `dry_run` (AND), newest
/// first, `offset`/`limit` paginated, with `total` matches.
pub async fn query(call: Call) -> RpcResult {
    let p: QueryParams = call.parse()?;
    if let (Some(from), Some(to)) = (p.date_from, p.date_to) {
        if from > to {
            return Err(RpcError::invalid_params(
                "invalid_range",
                format!("date_from {from} is after date_to {to}"),
            )
            .with("field", "date_from"));
        }
    }
    let views = backends::views(&call)?;
    let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
    let query = DecisionQuery {
        subject: p.volk_id,
        principal: p.principal,
        action: p.action,
        result: p.result,
        from: p.date_from,
        until: p.date_to,
        dry_run: p.dry_run,
    };
    let (total, page) = views
        .decisions
        .newest(&*call.gw.services.log, &query, p.offset, limit)
        .await
        .map_err(|e| RpcError::internal("projections_unavailable", e))?;
    let page = page
        .iter()
        .map(decision_json)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({
        "decisions": page,
        "total": total,
        "offset": p.offset,
        "limit": limit,
        "has_more": p.offset.saturating_add(limit) < total,
    }))
}

#[derive(Deserialize)]
struct EvaluateParams {
    volk_id: String,
    action: String,
    #[serde(default)]
    resource: String,
    subject_kind: Option<SubjectKind>,
    #[serde(default)]
    context: Map<String, Value>,
}

/// Asks the policy what it would decide, without acting (REQ-014-041..044): the
/// result, the rule trace (as the contract's `prolog_trace` text and as a list), the
/// articles applied, and the id and sequence of the dry-run decision recorded. A Prolog
/// error (ERR-016) or an engine failure is -32603 with `data.prolog_error`.
pub async fn evaluate(call: Call) -> RpcResult {
    let p: EvaluateParams = call.parse()?;
    let g = governance(&call)?;
    let mut request = match p.subject_kind.unwrap_or(SubjectKind::Volk) {
        SubjectKind::Volk => Request::volk(&p.volk_id, &p.action, &p.resource),
        SubjectKind::Client => Request::client(&p.volk_id, &p.action, &p.resource),
    };
    request.context = p.context.into_iter().collect::<BTreeMap<_, _>>();
    // The dry run is recorded as the caller's (issue 14: attribution).
    let request = request.by(call.client.principal().map(|p| p.name));
    let goal = request.goal_text();
    let decision = g.evaluate(request).await.map_err(governance_error)?;
    if let Some(error) = &decision.error {
        let prolog = GovernanceError::Prolog(String::new()).to_string();
        let reason = if error.starts_with(&prolog) {
            "prolog_error"
        } else {
            "governance_engine_unavailable"
        };
        return Err(RpcError::internal(reason, error)
            .with("prolog_error", error.as_str())
            .with("decision_id", decision.decision_id.to_string())
            .with("sequence", decision.sequence));
    }
    Ok(json!({
        "result": decision.result,
        "prolog_trace": decision.trace.join(" -> "),
        "rule_trace": decision.trace,
        "articles_applied": decision.articles,
        "prolog_query": goal,
        "dry_run": true,
        "decision_id": decision.decision_id,
        "policy_hash": decision.policy_hash,
        "evaluation_latency_ms": decision.latency.as_secs_f64() * 1000.0,
        "sequence": decision.sequence,
    }))
}

/// Governance refusals as RPC errors: a request field it cannot use is -32602
/// `invalid_field` naming the field (as the gateway param), anything else -32603.
fn governance_error(e: GovernanceError) -> RpcError {
    match &e {
        GovernanceError::InvalidRequest { field, reason } => {
            let param = match *field {
                "subject" => "volk_id",
                other => other,
            };
            RpcError::invalid_params("invalid_field", format!("{param}: {reason}"))
                .with("field", param)
        }
        GovernanceError::Log(_) | GovernanceError::NotRecorded(_) => {
            RpcError::internal("log_failed", e)
        }
        _ => RpcError::internal("governance_failed", e),
    }
}

#[derive(Deserialize)]
struct RulesParams {
    category: Option<String>,
    search: Option<String>,
}

/// The loaded predicates (REQ-014-046..050): each with predicate, arity, source file,
/// line number and category, filtered by `category` and by a case-insensitive
/// substring of the predicate name (`search`); as a flat list grouped by category and
/// as a `categories` map.
pub async fn rules(call: Call) -> RpcResult {
    let p: RulesParams = call.parse()?;
    let g = governance(&call)?;
    let rules = g.rules(p.category.as_deref(), p.search.as_deref());
    let mut categories: BTreeMap<&str, Vec<&crate::governance::RuleInfo>> = BTreeMap::new();
    for r in &rules {
        categories.entry(r.category.as_str()).or_default().push(r);
    }
    Ok(json!({
        "rules": rules,
        "categories": categories,
        "total": rules.len(),
        "policy_hash": g.policy_hash(),
    }))
}
