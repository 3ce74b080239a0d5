//! Acting as a Volk: the check every method makes before it commands the kernel on a
//! Volk's behalf.
//!
//! `cxp.send` sends *as* a Volk (governance then judges that Volk), `cxp.ack` and
//! `cxp.work` act *as the packet's recipient*. A connection may do so only for a
//! Volk its [`Principal`] was granted ([`Principal::standing`]); for principals the
//! policy admitted (`prolog_policy`) the policy answers per Volk through
//! `decide(client(Name), 'gateway.act_as', Alias, [], R)` — its `gateway_acts_as/2` —
//! recorded like every decision and failing closed without governance.

use orchestrata_schemas::events::types::DecisionResult;

use super::error::{ErrorCode, RpcError};
use super::principal::{Principal, Standing};
use super::state::Call;
use crate::governance::Request;

/// The caller's principal (-32001 `authentication_required` if there is none, which
/// dispatch already prevents for every method but `auth.authenticate`).
pub fn principal(call: &Call) -> Result<Principal, RpcError> {
    call.client
        .principal()
        .ok_or_else(RpcError::authentication_required)
}

/// The Volk a `cxp.send` with optional `from` is sent as: see
/// [`Principal::sender`]; a policy principal's `from` is put to the policy.
pub async fn sender(call: &Call, from: Option<&str>) -> Result<String, RpcError> {
    let principal = principal(call)?;
    let alias = principal.sender(from)?;
    confirm(call, &principal, &alias).await?;
    Ok(alias)
}

/// Ok when the caller may act as `alias`; -32001 `not_acting_as` otherwise.
pub async fn act_as(call: &Call, alias: &str) -> Result<(), RpcError> {
    let principal = principal(call)?;
    confirm(call, &principal, alias).await
}

async fn confirm(call: &Call, principal: &Principal, alias: &str) -> Result<(), RpcError> {
    match principal.may_act_as(alias)? {
        Standing::Granted => Ok(()),
        Standing::AskPolicy => {
            let Some(g) = call.gw.services.governance.as_ref() else {
                return Err(principal.refuse(alias).with(
                    "detail",
                    "this principal acts as the policy allows, and this gateway has no governance to ask",
                ));
            };
            let request = Request::client(&principal.name, "gateway.act_as", alias)
                .by(Some(principal.name.clone()));
            let decision = g.decide(request).await.map_err(|e| {
                RpcError::new(ErrorCode::Unauthorized, "governance_unavailable")
                    .with("detail", format!("governance could not decide: {e}"))
            })?;
            if decision.result == DecisionResult::Allow {
                Ok(())
            } else if let Some(error) = decision.error {
                // The policy could not answer (engine down or restarting, Prolog
                // error): fail closed, and say so instead of blaming the client.
                Err(
                    RpcError::new(ErrorCode::Unauthorized, "governance_unavailable")
                        .with("detail", error)
                        .with("decision_id", decision.decision_id.to_string()),
                )
            } else {
                Err(principal
                    .refuse(alias)
                    .with("decision_id", decision.decision_id.to_string()))
            }
        }
    }
}
