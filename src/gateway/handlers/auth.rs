//! `auth.authenticate`: the only method callable before authentication.

use chrono::Utc;
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::presence::ClientConnected;
use orchestrata_schemas::events::types::{DecisionResult, SubjectKind};
use orchestrata_schemas::events::EventRecord;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::gateway::auth::check_static_token;
use crate::gateway::client::Auth;
use crate::gateway::methods::{self, RpcResult};
use crate::gateway::state::Call;

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

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Checks the token; on success the connection gets the grant's scope, a
/// `gateway.presence` `connected` event is appended and the result lists the method
/// families. Failures answer -32001 with `data.reason` (`invalid_token`,
/// `empty_token`, `missing_token`, `unsupported_strategy`) and are recorded on
/// `governance.decisions`.
pub async fn authenticate(call: Call) -> RpcResult {
    let gw = &call.gw;
    let client_id = call.client_id();
    let grant = match check_static_token(&call.params, &gw.config.tokens) {
        Ok(g) => g.clone(),
        Err(error) => {
            gw.metrics.auth_failure.inc();
            let decision = DecisionRecorded {
                decision_id: Uuid::new_v4(),
                subject_kind: SubjectKind::Client,
                subject: client_id.clone(),
                action: "auth.authenticate".into(),
                resource: "gateway".into(),
                result: DecisionResult::Deny,
                rule_trace: vec![format!("static_token: {}", error.reason)],
                articles_applied: Vec::new(),
                policy_hash: crate::gateway::authz::SCOPE_TABLE_POLICY.into(),
                latency_us: 0,
                query: None,
                dry_run: false,
                reason: Some(error.reason.clone()),
            };
            let record = EventRecord::new("gateway", client_id.as_str(), decision, Utc::now());
            gw.append(&record).await?;
            return Err(error);
        }
    };
    let metadata = call
        .params
        .get("client_metadata")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    let connected = ClientConnected {
        client_id: client_id.clone(),
        client_name: text(&metadata, "client_name"),
        client_version: text(&metadata, "client_version"),
        purpose: text(&metadata, "purpose"),
        auth_scope: grant.scope.as_str().into(),
        remote_addr: call.client.remote_addr.map(|a| a.to_string()),
    };
    gw.append(&EventRecord::new(
        "gateway",
        client_id.as_str(),
        connected,
        Utc::now(),
    ))
    .await?;
    call.client.lock().auth = Some(Auth {
        scope: grant.scope,
        grant: grant.name.clone(),
        metadata,
    });
    gw.metrics.auth_success.inc();
    Ok(json!({
        "authenticated": true,
        "client_id": client_id,
        "scope": grant.scope.as_str(),
        "expires_at": null,
        "gateway_version": env!("CARGO_PKG_VERSION"),
        "capabilities": families(),
    }))
}
