//! `workflow.start / pause / resume / cancel / get` (REQ-014-076..080).
//!
//! Every mutation is a kernel command issued by the calling client, so it is governed
//! and on the log; `workflow.get` answers from the workflow view, folded once per event
//! of `workflow.events` by the projection runner (the run's state is a projection, not
//! gateway memory), after waiting until that view has folded the log's end as of the
//! call, so a run started just before is seen.

use orchestrata_schemas::events::Stream;
use serde_json::{json, Value};

use crate::agents::workflow::Workflows;
use crate::agents::AgentError;
use crate::gateway::error::{ErrorCode, RpcError};
use crate::gateway::methods::RpcResult;
use crate::gateway::owner;
use crate::gateway::state::Call;
use crate::kernel::KernelError;

pub(super) fn workflows(call: &Call) -> Result<Workflows, RpcError> {
    call.gw
        .services
        .workflows
        .clone()
        .ok_or_else(|| RpcError::new(ErrorCode::InternalError, "workflows_unavailable"))
}

fn text<'a>(params: &'a Value, key: &str) -> Option<&'a str> {
    params.get(key).and_then(Value::as_str)
}

/// Agent errors as RPC errors: bad input and refusals are `invalid_params` (with the
/// kernel's code), anything else internal.
pub(super) fn rpc(e: AgentError) -> RpcError {
    match &e {
        AgentError::Invalid { field, .. } | AgentError::Config { field, .. } => {
            RpcError::invalid_params("invalid_field", e.to_string()).with("field", *field)
        }
        AgentError::Kernel(k @ (KernelError::Stopped | KernelError::GovernanceFailed(_))) => {
            RpcError::internal("kernel_failed", k)
        }
        AgentError::Kernel(k) => RpcError::invalid_params(k.code(), k.to_string()),
        _ => RpcError::invalid_params("refused", e.to_string()),
    }
}

/// Starts a run; answers its id at once (the run proceeds in the background).
pub async fn start(call: Call) -> RpcResult {
    let w = workflows(&call)?;
    let name = text(&call.params, "name").unwrap_or_default();
    let params = call.params.get("params").cloned().unwrap_or(Value::Null);
    let session = text(&call.params, "session_id").map(str::to_owned);
    let principal = call.client.principal().map(|p| p.name);
    let (id, _run) = w
        .start(call.client.id(), principal, name, params, session)
        .await
        .map_err(rpc)?;
    Ok(json!({ "workflow_id": id, "status": "running" }))
}

/// Ok when the caller started run `id` or is an admin; -32001 `not_owner` otherwise.
/// A run the view does not know is left to the kernel to refuse as before.
async fn owned(call: &Call, id: &str) -> Result<(), RpcError> {
    caught_up(call).await?;
    let owner = match call.gw.workflows.read().run(id) {
        Some(run) => run.owner.clone(),
        None => return Ok(()),
    };
    owner::require(call, &format!("workflow {id}"), owner.as_deref())
}

/// Waits until the workflow view has folded `workflow.events` up to the log's end.
async fn caught_up(call: &Call) -> Result<(), RpcError> {
    let last = call
        .gw
        .services
        .log
        .bounds(Stream::WorkflowEvents)
        .await
        .map_err(|e| RpcError::internal("log_failed", e))?
        .last;
    if let Some(sequence) = last {
        call.gw
            .workflows
            .wait_for(
                Stream::WorkflowEvents,
                sequence,
                call.gw.config.read_your_write_timeout,
            )
            .await
            .map_err(|e| RpcError::internal("view_lagging", e).with("sequence", sequence))?;
    }
    Ok(())
}

/// Pauses a run (its owner's or an admin's).
pub async fn pause(call: Call) -> RpcResult {
    let w = workflows(&call)?;
    let id = text(&call.params, "workflow_id").unwrap_or_default();
    owned(&call, id).await?;
    let reason = text(&call.params, "reason").map(str::to_owned);
    w.pause(call.client.id(), id, reason).await.map_err(rpc)?;
    Ok(json!({ "workflow_id": id, "status": "paused" }))
}

/// Resumes a run (its owner's or an admin's).
pub async fn resume(call: Call) -> RpcResult {
    let w = workflows(&call)?;
    let id = text(&call.params, "workflow_id").unwrap_or_default();
    owned(&call, id).await?;
    w.resume(call.client.id(), id).await.map_err(rpc)?;
    Ok(json!({ "workflow_id": id, "status": "running" }))
}

/// Cancels a run (its owner's or an admin's).
pub async fn cancel(call: Call) -> RpcResult {
    let w = workflows(&call)?;
    let id = text(&call.params, "workflow_id").unwrap_or_default();
    owned(&call, id).await?;
    let reason = text(&call.params, "reason").map(str::to_owned);
    w.cancel(call.client.id(), id, reason).await.map_err(rpc)?;
    Ok(json!({ "workflow_id": id, "status": "cancelled" }))
}

/// A run's state, from the workflow view once it has folded `workflow.events` up to
/// the log's current end (read-your-write; -32603 `view_lagging` past
/// `read_your_write_timeout`).
// ISSUE-15: workflow.get never re-reads workflow.events from sequence 0
pub async fn get(call: Call) -> RpcResult {
    let id = text(&call.params, "workflow_id").unwrap_or_default();
    caught_up(&call).await?;
    let view = call.gw.workflows.read();
    let run = view.run(id).ok_or_else(|| {
        RpcError::invalid_params("unknown_workflow", format!("no workflow `{id}`"))
    })?;
    serde_json::to_value(run).map_err(|e| RpcError::internal("encoding_failed", e))
}
