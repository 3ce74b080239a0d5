//! `auth.authenticate`: the only method callable before authentication.
//!
//! Three strategies (REQ-014-086..105): `static_token` (configured grants, then the
//! shared token store), `hmac` ([`crate::gateway::auth_hmac`]) and `prolog_policy`
//! ([`crate::gateway::auth_policy`]). Every failure answers -32001 with a
//! `data.reason` and is recorded on `governance.decisions` (never with the secret).
//! A success gives the connection its scope and puts it on the presence log; calling
//! again on an authenticated connection re-authenticates and, when the metadata
//! changed, records `metadata_updated`.

use chrono::Utc;
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::{DecisionResult, SubjectKind};
use orchestrata_schemas::events::EventRecord;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::gateway::auth::check_static_token;
use crate::gateway::auth_policy::shared_unavailable;
use crate::gateway::client::Auth;
use crate::gateway::error::{ErrorCode, RpcError};
use crate::gateway::methods::{self, RpcResult};
use crate::gateway::principal::{ActsAs, Principal};
use crate::gateway::shared::SharedError;
use crate::gateway::state::{Call, Shared};
use crate::gateway::{auth_hmac, auth_policy, presence};

/// Method families (`cxp`, `gateway`, ...) in table order.
pub fn families() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for name in methods::names() {
        let family = name.split('.').next().unwrap_or(name);
        if !out.contains(&family) {
            out.push(family);
        }
    }
    out
}

async fn static_token(gw: &Shared, params: &Value) -> Result<Principal, RpcError> {
    match check_static_token(params, &gw.config.tokens) {
        Ok(principal) => Ok(principal),
        // Not a configured token: maybe one added to the shared store (rotation).
        Err(e) if e.reason == "invalid_token" => {
            let token = params.get("token").and_then(Value::as_str).unwrap_or("");
            match gw
                .services
                .shared_state
                .token_grant(token, gw.config.auth_cache_ttl)
                .await
            {
                Ok(Some(g)) => Ok(Principal::new(
                    g.name.unwrap_or_else(|| "stored-token".into()),
                    g.scope,
                    ActsAs::Listed(Vec::new()),
                    None,
                )),
                Ok(None) => Err(e),
                Err(err @ SharedError::Unavailable(_)) => Err(shared_unavailable(&err)),
                Err(err) => Err(RpcError::new(ErrorCode::Unauthorized, "token_store_error")
                    .with("detail", err.to_string())),
            }
        }
        Err(e) => Err(e),
    }
}

async fn hmac(gw: &Shared, params: &Value) -> Result<Principal, RpcError> {
    let Some(cfg) = gw.config.hmac.as_ref() else {
        return Err(unsupported("hmac"));
    };
    let verified = auth_hmac::verify(cfg, params, Utc::now())?;
    let ttl = cfg.drift_window.saturating_mul(2);
    match gw
        .services
        .shared_state
        .claim_nonce(&verified.nonce, ttl)
        .await
    {
        Ok(true) => Ok(Principal::new(
            verified.client_id,
            verified.scope,
            ActsAs::Listed(verified.acts_as),
            verified.default_volk,
        )),
        Ok(false) => Err(RpcError::new(ErrorCode::Unauthorized, "nonce_replay").with(
            "detail",
            "this nonce was already used within the drift window; sign again with a fresh nonce",
        )),
        Err(e) => Err(shared_unavailable(&e)),
    }
}

fn unsupported(strategy: &str) -> RpcError {
    RpcError::new(ErrorCode::Unauthorized, "unsupported_strategy").with(
        "detail",
        format!("strategy `{strategy}` is not enabled on this gateway"),
    )
}

/// The principal the requested strategy proves. `prolog_policy` answers only where
/// `gateway.prolog_policy` is on: it admits a client on its claimed id alone.
async fn check(gw: &Shared, params: &Value) -> Result<Principal, RpcError> {
    let strategy = params.get("strategy").and_then(Value::as_str).unwrap_or("");
    match strategy {
        "static_token" => static_token(gw, params).await,
        "hmac" => hmac(gw, params).await,
        "prolog_policy" if gw.config.prolog_policy => auth_policy::authorize(gw, params)
            .await
            .map(|(id, scope)| Principal::new(id, scope, ActsAs::Policy, None)),
        other => Err(unsupported(other)),
    }
}

async fn record_failure(gw: &Shared, client_id: &str, params: &Value, error: &RpcError) {
    let strategy = params
        .get("strategy")
        .and_then(Value::as_str)
        .unwrap_or("none");
    let mut trace = vec![format!("{strategy}: {}", error.reason)];
    if let Some(detail) = error.extra.get("detail").and_then(Value::as_str) {
        trace.push(detail.to_owned());
    }
    let decision = DecisionRecorded {
        decision_id: Uuid::new_v4(),
        subject_kind: SubjectKind::Client,
        subject: client_id.to_owned(),
        action: "auth.authenticate".into(),
        resource: "gateway".into(),
        result: DecisionResult::Deny,
        rule_trace: trace,
        articles_applied: Vec::new(),
        policy_hash: crate::gateway::authz::SCOPE_TABLE_POLICY.into(),
        latency_us: 0,
        query: None,
        dry_run: false,
        reason: Some(error.reason.clone()),
    };
    let record = EventRecord::new("gateway", client_id, decision, Utc::now());
    if let Err(e) = gw.append(&record).await {
        tracing::warn!(client = %client_id, error = %e, "cannot record failed authentication");
    }
}

/// Checks the credentials of the requested strategy; on success the connection gets
/// the granted scope, a `gateway.presence` `connected` (or `metadata_updated`) event
/// is appended, the client is published to the shared registry, and the result lists
/// the method families. Failures answer -32001 with `data.reason` — `invalid_token`,
/// `empty_token`, `missing_token`, `unsupported_strategy`, `missing_field`,
/// `invalid_signature`, `invalid_timestamp`, `timestamp_drift`, `unknown_client`,
/// `nonce_replay`, `policy_denied`, `policy_error`, `governance_unavailable`,
/// `shared_state_unavailable` — and are recorded on `governance.decisions`.
pub async fn authenticate(call: Call) -> RpcResult {
    let gw = &call.gw;
    let client_id = call.client_id();
    let principal = match check(gw, &call.params).await {
        Ok(p) => p,
        Err(error) => {
            gw.metrics.auth_failure.inc();
            record_failure(gw, &client_id, &call.params, &error).await;
            return Err(error);
        }
    };
    let metadata = presence::metadata_of(&call.params);
    let previous = call.client.lock().auth.clone();
    match &previous {
        None => presence::connected(gw, &call.client, &principal, &metadata).await?,
        Some(p) if p.metadata != metadata => {
            presence::metadata_updated(gw, &call.client, &principal, &metadata).await?
        }
        Some(_) => {}
    }
    let (scope, name, default_volk) = (
        principal.scope,
        principal.name.clone(),
        principal.default_volk.clone(),
    );
    call.client.lock().auth = Some(Auth {
        principal,
        metadata,
    });
    presence::refresh(gw, &call.client).await;
    if previous.is_none() {
        // Off the answer's path: a remote kernel may take its time.
        let (gw, client) = (call.gw.clone(), call.client.clone());
        tokio::spawn(async move { crate::gateway::volk_health::connected(&gw, &client).await });
    }
    gw.metrics.auth_success.inc();
    Ok(json!({
        "authenticated": true,
        "client_id": client_id,
        "scope": scope.as_str(),
        "identity": name,
        "principal": name,
        "default_volk": default_volk,
        "expires_at": null,
        "gateway_version": env!("CARGO_PKG_VERSION"),
        "capabilities": families(),
    }))
}
