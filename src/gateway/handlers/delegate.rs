//! `agents.delegate` (our addition; spec 005 US-009, FR11, FR12): a senior hands one
//! task to 1–5 juniors at once, each running a program of `agents.drivers` named by the
//! request; their answers come back to the senior as `junior_result` packets and the
//! merged answer goes to the senior's parent as a `synthesis` packet, all on
//! `cxp.traffic`, with the juniors' spawns and terminations on `volk.lifecycle`.
//! Before the synthesis, the senior scores each answer with `agents.review.checkers`
//! (a `junior_score` packet each); `synthesis` (`best`, the default, or `merge`)
//! chooses between the best answer and a merge in score order
//! ([`crate::agents::synthesis`]).
//!
//! The caller must be allowed to act as the senior (-32001 `not_acting_as`), and every
//! step is a governed kernel command issued by the senior (the spawns are
//! `volk.register` with `kind = junior`: at most five live juniors per senior, Article
//! XII). The answer comes at once with the task id; the juniors run on.

use serde::Deserialize;
use serde_json::json;

use super::workflow::rpc;
use crate::agents::synthesis::Strategy;
use crate::gateway::acting;
use crate::gateway::error::RpcError;
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;

#[derive(Deserialize)]
struct Params {
    senior: String,
    task: String,
    juniors: Vec<String>,
    #[serde(default)]
    synthesis: Option<String>,
}

/// Starts the fan-out; answers `{task_id, senior, juniors, synthesis, status:
/// "running"}`.
pub async fn delegate(call: Call) -> RpcResult {
    let p: Params = call.parse()?;
    let delegator = call.gw.services.delegator.clone().ok_or_else(|| {
        RpcError::internal(
            "delegation_unavailable",
            "no junior programs are configured (agents.drivers)",
        )
    })?;
    let strategy: Strategy = p
        .synthesis
        .as_deref()
        .unwrap_or("best")
        .parse()
        .map_err(rpc)?;
    acting::act_as(&call, &p.senior).await?;
    let (task_id, _run) = delegator
        .start(&p.senior, &p.task, &p.juniors, strategy)
        .await
        .map_err(rpc)?;
    tracing::info!(%task_id, senior = %p.senior, juniors = p.juniors.len(), "delegation started");
    Ok(json!({
        "task_id": task_id,
        "senior": p.senior,
        "juniors": p.juniors,
        "synthesis": strategy.as_str(),
        "status": "running",
    }))
}
