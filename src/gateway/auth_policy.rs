//! The `prolog_policy` strategy: the governance policy decides who gets in, and how far.
//!
//! `{strategy: "prolog_policy", client_id}` asks governance
//! `decide(client(Id), 'gateway.access', Scope, [], R)` — the policy's
//! `gateway_access(ClientId, Scope)` (REQ-014-101) — for `admin`, then `read_write`, then
//! `read_only`; the first allowed scope is granted. Each question is a recorded
//! decision on `governance.decisions`. A denial carries the evaluation's rule trace as
//! `data.detail` (REQ-014-105).
//!
//! Answers are cached in shared state for `auth_cache_ttl` (300 s, REQ-014-103) under
//! the policy's hash, so loading another policy invalidates them on every instance
//! (REQ-014-104). Everything fails closed: no governance service, an engine error, or
//! shared state that is away while the answer is not cached all deny.

use serde_json::Value;

use super::auth::Scope;
use super::error::{ErrorCode, RpcError};
use super::shared::{AuthDecision, SharedError};
use super::state::Shared;
use crate::governance::Request;

/// Scopes asked for, most powerful first.
const ASK_ORDER: [Scope; 3] = [Scope::Admin, Scope::ReadWrite, Scope::ReadOnly];

/// Longest accepted client id.
pub const MAX_CLIENT_ID_LEN: usize = 256;

fn deny(reason: &str, detail: impl Into<String>) -> RpcError {
    RpcError::new(ErrorCode::Unauthorized, reason).with("detail", detail.into())
}

/// -32001 `shared_state_unavailable`: an answer that needs shared state nobody can
/// vouch for right now is a denial (ERR-009).
pub fn shared_unavailable(e: &SharedError) -> RpcError {
    deny(
        "shared_state_unavailable",
        format!("{e}; authentication that is not cached is refused until it is back"),
    )
}

/// The client id of a `prolog_policy` or `hmac` request.
pub fn client_id(params: &Value) -> Result<&str, RpcError> {
    match params.get("client_id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() && id.len() <= MAX_CLIENT_ID_LEN => Ok(id),
        Some(id) if !id.is_empty() => Err(deny(
            "invalid_client_id",
            format!(
                "field `client_id` is {} bytes, at most {MAX_CLIENT_ID_LEN}",
                id.len()
            ),
        )
        .with("field", "client_id")),
        _ => Err(deny(
            "missing_field",
            "field `client_id` is required for prolog_policy and must be a non-empty string",
        )
        .with("field", "client_id")),
    }
}

/// The scope the policy grants `params.client_id`, or the denial.
pub async fn authorize(gw: &Shared, params: &Value) -> Result<(String, Scope), RpcError> {
    let id = client_id(params)?;
    let Some(governance) = gw.services.governance.as_ref() else {
        return Err(deny(
            "governance_unavailable",
            "prolog_policy needs the governance service, which this gateway does not run",
        ));
    };
    let hash = governance.policy_hash().unwrap_or_else(|| "none".into());
    let state = &gw.services.shared_state;
    let decision = match state.cached_auth(id, &hash).await {
        Ok(Some(d)) => d,
        Ok(None) => {
            let d = evaluate(governance, id, &hash).await?;
            if let Err(e) = state.cache_auth(id, &d, gw.config.auth_cache_ttl).await {
                tracing::debug!(error = %e, client = %id, "auth decision not cached");
            }
            d
        }
        Err(e) => return Err(shared_unavailable(&e)),
    };
    match decision.scope {
        Some(scope) => Ok((id.to_owned(), scope)),
        None => Err(deny("policy_denied", decision.reason).with("client_id", id)),
    }
}

async fn evaluate(
    governance: &crate::governance::Governance,
    id: &str,
    hash: &str,
) -> Result<AuthDecision, RpcError> {
    let mut last_trace = Vec::new();
    for scope in ASK_ORDER {
        let d = governance
            .decide(Request::client(id, "gateway.access", scope.as_str()))
            .await
            .map_err(|e| deny("policy_error", format!("governance could not decide: {e}")))?;
        if let Some(error) = &d.error {
            // An engine or Prolog failure is a fail-closed deny; never cached.
            return Err(deny(
                "policy_error",
                format!("policy evaluation failed: {error}"),
            ));
        }
        if d.allowed() {
            return Ok(AuthDecision {
                scope: Some(scope),
                reason: format!("gateway_access({id}, {scope}) holds"),
                policy_hash: hash.to_owned(),
            });
        }
        last_trace = d.trace;
    }
    Ok(AuthDecision {
        scope: None,
        reason: format!(
            "gateway_access({id}, _) holds for no scope; trace: {}",
            last_trace.join(" -> ")
        ),
        policy_hash: hash.to_owned(),
    })
}
