//! `gateway.info`, `gateway.ping`, `gateway.clients`.

use chrono::{SecondsFormat, Utc};
use serde_json::{json, Map, Value};

use crate::gateway::methods::{self, RpcResult};
use crate::gateway::state::Call;
use crate::gateway::topic::TOPICS;

/// Version, uptime since the gateway started, every method (capabilities), every
/// topic with its required scope and live subscription count, and the method table.
pub async fn info(call: Call) -> RpcResult {
    let gw = &call.gw;
    let mut counts = Map::new();
    for (stream, _) in TOPICS {
        let n = gw
            .metrics
            .subscriptions
            .with_label_values(&[stream.as_str()])
            .get();
        counts.insert(stream.as_str().into(), json!(n));
    }
    let table: Vec<Value> = methods::METHODS
        .iter()
        .map(|m| {
            json!({
                "name": m.name,
                "scope": methods::scope_name(m.scope),
                "mutates": m.mutates,
                "exposed": m.exposed,
                "summary": m.summary,
            })
        })
        .collect();
    Ok(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_seconds": gw.started.elapsed().as_secs_f64(),
        "started_at": gw.started_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "capabilities": methods::names(),
        "topics": TOPICS.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        "topic_scopes": TOPICS.iter().map(|(s, sc)| (s.as_str().to_owned(), json!(sc.as_str()))).collect::<Map<_, _>>(),
        "subscription_counts": counts,
        "methods": table,
    }))
}

/// The server's clock, for round-trip and skew measurement.
pub async fn ping(_call: Call) -> RpcResult {
    Ok(json!({
        "server_timestamp": Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true),
    }))
}

/// Every connected client of every gateway instance sharing state (REQ-014-111,
/// REQ-014-112): id, instance, connection time, last activity, scope, metadata and
/// subscription ids. This instance's clients are read live; other instances' from the
/// shared registry (as of their last heartbeat). While shared state is away only this
/// instance's clients are listed, and `shared_state_available` says so.
pub async fn clients(call: Call) -> RpcResult {
    let state = &call.gw.services.shared_state;
    let me = state.instance_id().to_owned();
    let local: Vec<_> = call.gw.clients().values().cloned().collect();
    let mut out = Vec::new();
    for c in local {
        let st = c.lock();
        out.push(json!({
            "client_id": c.id(),
            "instance_id": me,
            "connected_at": c.connected_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            "last_activity": st.last_activity.to_rfc3339_opts(SecondsFormat::Millis, true),
            "auth_scope": st.auth.as_ref().map(|a| a.scope().as_str()),
            "client_metadata": st.auth.as_ref().map(|a| a.metadata.clone()),
            "subscriptions": st.subscriptions.keys().cloned().collect::<Vec<_>>(),
            "remote_addr": c.remote_addr.map(|a| a.to_string()),
        }));
    }
    let shared = state.clients().await.unwrap_or_else(|e| {
        tracing::debug!(error = %e, "shared client registry unreadable");
        Vec::new()
    });
    for e in shared.into_iter().filter(|e| e.instance_id != me) {
        out.push(json!({
            "client_id": e.client_id,
            "instance_id": e.instance_id,
            "connected_at": e.connected_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            "last_activity": e.last_activity.to_rfc3339_opts(SecondsFormat::Millis, true),
            "auth_scope": e.auth_scope.as_str(),
            "client_metadata": e.client_metadata,
            "subscriptions": e.subscriptions,
            "remote_addr": e.remote_addr,
        }));
    }
    out.sort_by(|a, b| a["connected_at"].as_str().cmp(&b["connected_at"].as_str()));
    Ok(json!({
        "clients": out,
        "total": out.len(),
        "instance_id": me,
        "shared_state": state.backend(),
        "shared_state_available": state.available(),
    }))
}
