//! `volk.list`, `volk.get` (read the Volk view) and `volk.register`, `volk.deregister`
//! (admin; kernel commands, answered once the Volk view has applied them)
//! (REQ-014-016..020, REQ-014-026..030).

use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::{CommandKind, Stream};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::gateway::backends::{self, Views};
use crate::gateway::error::RpcError;
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;
use crate::kernel::cmd;

/// Page size of `volk.list` when the caller gives no `limit`.
pub const DEFAULT_LIMIT: usize = 50;

/// One Volk as answered: the view's state plus its last activity (lifecycle or packets).
fn volk_json(views: &Views, alias: &str) -> RpcResult {
    let volks = views.volks.read();
    let state = volks.volk(alias).ok_or_else(|| {
        RpcError::invalid_params("unknown_volk", format!("no Volk `{alias}`"))
            .with("field", "alias")
    })?;
    let mut value =
        serde_json::to_value(state).map_err(|e| RpcError::internal("encoding_failed", e))?;
    if let Value::Object(map) = &mut value {
        map.insert("last_activity".into(), json!(volks.last_activity(alias)));
        count_active_tasks(map, state.active_tasks.len());
    }
    Ok(value)
}

/// The contract's `active_tasks` is a count (spec 014, `volk.list`); the tasks
/// themselves follow as `active_task_details` (task id -> task).
fn count_active_tasks(map: &mut serde_json::Map<String, Value>, count: usize) {
    if let Some(tasks) = map.remove("active_tasks") {
        map.insert("active_task_details".into(), tasks);
    }
    map.insert("active_tasks".into(), json!(count));
}

#[derive(Deserialize)]
struct ListParams {
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

/// Registered Volks by alias, `offset`/`limit` paginated, with `total`. An `offset`
/// past the end (even 2^64 - 1) answers an empty page with `has_more: false`.
pub async fn list(call: Call) -> RpcResult {
    let p: ListParams = call.parse()?;
    let views = backends::views(&call)?;
    let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
    let volks = views.volks.read();
    let total = volks.volks(true).count();
    let mut page = Vec::with_capacity(limit.min(total));
    for v in volks.volks(true).skip(p.offset).take(limit) {
        let mut value =
            serde_json::to_value(v).map_err(|e| RpcError::internal("encoding_failed", e))?;
        if let Value::Object(map) = &mut value {
            map.insert("last_activity".into(), json!(volks.last_activity(&v.alias)));
            count_active_tasks(map, v.active_tasks.len());
        }
        page.push(value);
    }
    Ok(json!({
        "volks": page,
        "total": total,
        "offset": p.offset,
        "limit": limit,
        // Checked: `offset` is the client's number, up to 2^64 - 1 (an empty page).
        "has_more": p.offset.checked_add(limit).is_some_and(|end| end < total),
    }))
}

/// One Volk (registered or deregistered); unknown alias is -32602 `unknown_volk`.
pub async fn get(call: Call) -> RpcResult {
    let alias = call.params["alias"].as_str().unwrap_or_default().to_owned();
    let views = backends::views(&call)?;
    volk_json(&views, &alias)
}

#[derive(Deserialize)]
struct RegisterParams {
    alias: String,
    capabilities: Vec<String>,
    parent: Option<String>,
    protocols: Option<Vec<String>>,
    metadata: Option<Value>,
}

/// Registers a Volk through the kernel (an existing alias is -32602 `volk_exists`).
pub async fn register(call: Call) -> RpcResult {
    let p: RegisterParams = call.parse()?;
    let views = backends::views(&call)?;
    let command = cmd::command(
        &call.client_id(),
        CommandKind::RegisterVolk {
            alias: p.alias.clone(),
            capabilities: p.capabilities,
            parent: p.parent,
            protocols: p.protocols.unwrap_or_else(|| vec!["cxp/1.0".into()]),
            metadata: Json(p.metadata.unwrap_or_else(|| json!({}))),
        },
    );
    let outcome = backends::execute(&call, command).await?;
    views
        .settle(&views.volks, &outcome, Stream::VolkLifecycle)
        .await?;
    Ok(json!({
        "registered": true,
        "volk": volk_json(&views, &p.alias)?,
        "sequence": outcome.last_sequence(Stream::VolkLifecycle),
    }))
}

#[derive(Deserialize)]
struct DeregisterParams {
    alias: String,
    reason: Option<String>,
}

/// Deregisters a Volk through the kernel (unknown alias is -32602 `unknown_volk`).
pub async fn deregister(call: Call) -> RpcResult {
    let p: DeregisterParams = call.parse()?;
    let views = backends::views(&call)?;
    let reason = p.reason.as_deref().unwrap_or("deregistered via gateway");
    let command = cmd::deregister(&call.client_id(), &p.alias, reason);
    let outcome = backends::execute(&call, command).await?;
    views
        .settle(&views.volks, &outcome, Stream::VolkLifecycle)
        .await?;
    Ok(json!({
        "deregistered": true,
        "volk": volk_json(&views, &p.alias)?,
        "sequence": outcome.last_sequence(Stream::VolkLifecycle),
    }))
}
