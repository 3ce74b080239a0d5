//! `agents.escalations` and `agents.resolve_escalation`: the human queue of spec 005
//! (escalations that went beyond the root of the hierarchy) and its resolution.
//!
//! The queue is part of the kernel's agent tree (folded from `volk.lifecycle`):
//! `human_escalation_queued` adds an entry, `human_escalation_resolved` (command
//! `resolve_escalation`, issued by the caller) records the human's decision on it. A
//! resolved entry stays readable (`status: "resolved"`) but leaves the open queue.

use serde::Deserialize;
use serde_json::{json, Value};

use super::workflow::{rpc, workflows};
use crate::agents::HumanEscalation;
use crate::gateway::backends;
use crate::gateway::error::RpcError;
use crate::gateway::kernel_port::KernelPort;
use crate::gateway::methods::RpcResult;
use crate::gateway::owner;
use crate::gateway::principal::OPERATOR_NAME;
use crate::gateway::state::Call;
use crate::kernel::cmd;
use orchestrata_schemas::events::CommandKind;

/// The whole queue, oldest first, from the in-process kernel (or the workflow
/// runner's, which is the same kernel).
async fn queue(call: &Call) -> Result<Vec<HumanEscalation>, RpcError> {
    if let Some(KernelPort::Local(kernel)) = &call.gw.services.kernel {
        return kernel
            .read(|s| s.agents().human_queue().to_vec())
            .await
            .map_err(backends::kernel_error);
    }
    match workflows(call) {
        Ok(w) => w.agents().human_queue().await.map_err(rpc),
        Err(_) => Err(RpcError::internal(
            "kernel_unavailable",
            "the human queue is read from an in-process kernel (role all or kernel)",
        )),
    }
}

fn entry(e: &HumanEscalation) -> Value {
    let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        let status = if e.resolution.is_some() {
            "resolved"
        } else {
            "open"
        };
        map.insert("status".into(), json!(status));
    }
    v
}

#[derive(Deserialize)]
struct ListParams {
    #[serde(default = "open")]
    status: String,
}

fn open() -> String {
    "open".into()
}

/// The queue's entries with `status` `open` (default), `resolved` or `all`, oldest
/// first.
pub async fn escalations(call: Call) -> RpcResult {
    let p: ListParams = call.parse()?;
    let all = queue(&call).await?;
    let chosen: Vec<Value> = all
        .iter()
        .filter(|e| match p.status.as_str() {
            "open" => e.resolution.is_none(),
            "resolved" => e.resolution.is_some(),
            _ => true,
        })
        .map(entry)
        .collect();
    Ok(json!({ "escalations": chosen, "total": chosen.len() }))
}

#[derive(Deserialize)]
struct ResolveParams {
    escalation_id: String,
    decision: String,
    notes: Option<String>,
}

/// Records the caller's decision on an open entry: unknown entry -32602
/// `invalid_field` (`escalation_id`), already resolved -32602 `invalid_transition`.
///
/// The human queue is the human's: the operator principal (the `orchestrata up`
/// token) or an admin resolves it; any other principal is refused -32001 `not_owner`
/// (a model or bot acting as a Volk may not approve its own escalation).
pub async fn resolve(call: Call) -> RpcResult {
    let p: ResolveParams = call.parse()?;
    owner::require(
        &call,
        &format!("escalation {}", p.escalation_id),
        Some(OPERATOR_NAME),
    )?;
    let action = CommandKind::ResolveEscalation {
        escalation_id: p.escalation_id.clone(),
        decision: p.decision,
        notes: p.notes,
    };
    let outcome = backends::execute(&call, cmd::command(&call.client_id(), action)).await?;
    let sequence = outcome.last_sequence(orchestrata_schemas::events::Stream::VolkLifecycle);
    let all = queue(&call).await?;
    let resolved = all
        .iter()
        .find(|e| e.escalation_id == p.escalation_id)
        .ok_or_else(|| RpcError::internal("escalation_missing", "resolved but not found"))?;
    let mut answer = entry(resolved);
    if let Value::Object(map) = &mut answer {
        map.insert("sequence".into(), json!(sequence));
    }
    Ok(answer)
}
