//! `agents.spawn`, `agents.assign`, `agents.terminate` (our additions; spec 005
//! US-007..010, FR9): single juniors from the outside, over the profiles of
//! `agents.drivers` ([`crate::agents::juniors::Juniors`]).
//!
//! The caller must be allowed to act as the junior's parent (-32001 `not_acting_as`);
//! the spawn and the termination are governed kernel commands issued by the parent
//! (`volk.register` with `kind = junior`: at most five live juniors per senior;
//! `volk.deregister`). Answers come at once; a task's answer follows as a
//! `junior_result` packet to the parent on `cxp.traffic`.

use serde::Deserialize;
use serde_json::{json, Value};

use super::workflow::rpc;
use crate::agents::juniors::JuniorRequest;
use crate::agents::profiles::Delegator;
use crate::agents::service::LifespanSpec;
use crate::gateway::error::RpcError;
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;
use crate::gateway::{acting, owner};
use orchestrata_projections::agents::AgentKind;

/// The reason `agents.terminate` records when the request gives none.
const DEFAULT_REASON: &str = "terminated_by_request";

fn delegator(call: &Call) -> Result<Delegator, RpcError> {
    call.gw.services.delegator.clone().ok_or_else(|| {
        RpcError::internal(
            "delegation_unavailable",
            "no junior profiles are configured (agents.drivers)",
        )
    })
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Lifespan {
    Named(String),
    Deadline { deadline_ms: u64 },
    Session { session_id: String },
}

#[derive(Deserialize)]
struct SpawnParams {
    parent: String,
    driver: String,
    task: Option<String>,
    lifespan: Option<Lifespan>,
    purpose: Option<String>,
    timeout_s: Option<u64>,
}

fn lifespan_json(l: &LifespanSpec) -> Value {
    match l {
        LifespanSpec::Task(_) => json!("task"),
        LifespanSpec::Deadline(ms) => json!({ "deadline_ms": ms }),
        LifespanSpec::Session(s) => json!({ "session_id": s }),
    }
}

/// Spawns a junior; answers `{alias, parent, driver, kind, task_id, lifespan, status}`.
pub async fn spawn(call: Call) -> RpcResult {
    let d = delegator(&call)?;
    let p: SpawnParams = call.parse()?;
    let lifespan = match p.lifespan {
        None => None,
        Some(Lifespan::Named(n)) if n == "task" => Some(LifespanSpec::Task(String::new())),
        Some(Lifespan::Named(other)) => {
            return Err(RpcError::invalid_params(
                "invalid_field",
                format!("lifespan: `{other}` is not `task`, {{deadline_ms}} or {{session_id}}"),
            )
            .with("field", "lifespan"))
        }
        Some(Lifespan::Deadline { deadline_ms }) => Some(LifespanSpec::Deadline(deadline_ms)),
        Some(Lifespan::Session { session_id }) => Some(LifespanSpec::Session(session_id)),
    };
    acting::act_as(&call, &p.parent).await?;
    let spawned = d
        .juniors()
        .spawn(JuniorRequest {
            parent: p.parent.clone(),
            profile: p.driver.clone(),
            task: p.task,
            lifespan,
            purpose: p.purpose,
            timeout_s: p.timeout_s,
        })
        .await
        .map_err(rpc)?;
    tracing::info!(alias = %spawned.alias, parent = %p.parent, driver = %p.driver, "junior spawned");
    Ok(json!({
        "alias": spawned.alias,
        "parent": p.parent,
        "driver": p.driver,
        "kind": spawned.kind.as_str(),
        "task_id": spawned.task_id,
        "lifespan": lifespan_json(&spawned.lifespan),
        "status": if spawned.task_id.is_some() { "running" } else { "idle" },
    }))
}

#[derive(Deserialize)]
struct AssignParams {
    junior: String,
    task: String,
}

/// Gives a living junior its next task; answers `{alias, task_id, status}`.
pub async fn assign(call: Call) -> RpcResult {
    let d = delegator(&call)?;
    let p: AssignParams = call.parse()?;
    let parent = answerable(&d, &p.junior, "junior").await?;
    acting::act_as(&call, &parent).await?;
    let task_id = d.juniors().assign(&p.junior, &p.task).map_err(rpc)?;
    Ok(json!({ "alias": p.junior, "task_id": task_id, "status": "running" }))
}

#[derive(Deserialize)]
struct TerminateParams {
    alias: String,
    reason: Option<String>,
}

/// Terminates a live agent and its subtree; answers `{alias, reason, status}`. A
/// junior is its parent's: the caller must act as the parent (-32001
/// `not_acting_as`); a senior Volk (the roster, a registered Volk) only an admin may
/// terminate (-32001 `not_owner`).
pub async fn terminate(call: Call) -> RpcResult {
    let d = delegator(&call)?;
    let p: TerminateParams = call.parse()?;
    let node = d.juniors().live(&p.alias).await.map_err(rpc)?;
    let Some(node) = node else {
        return Err(RpcError::invalid_params(
            "unknown_agent",
            format!("alias: no live agent `{}`", p.alias),
        )
        .with("field", "alias"));
    };
    match (node.kind, node.parent) {
        (AgentKind::Junior, Some(parent)) => acting::act_as(&call, &parent).await?,
        _ => owner::require_admin(&call, &format!("senior Volk {}", p.alias))?,
    }
    let reason = p
        .reason
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_REASON.to_owned());
    d.juniors()
        .terminate(&p.alias, &reason)
        .await
        .map_err(rpc)?;
    Ok(json!({ "alias": p.alias, "reason": reason, "status": "terminated" }))
}

async fn answerable(d: &Delegator, alias: &str, field: &'static str) -> Result<String, RpcError> {
    d.juniors()
        .answerable(alias)
        .await
        .map_err(rpc)?
        .ok_or_else(|| {
            RpcError::invalid_params("unknown_agent", format!("{field}: no live agent `{alias}`"))
                .with("field", field)
        })
}
