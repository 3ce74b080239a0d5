//! Ownership: whose a session, a workflow run or a junior is, and the check every
//! method on one makes before it acts (see `docs/security.md`, "Who may do what").
//!
//! A session is its opener's (the principal on the event that opened it), a workflow
//! run its starter's, a junior its parent's (checked by acting as the parent, see
//! [`super::acting`]). An admin principal may act on anything; anyone else on what is
//! theirs only: `-32001 not_owner` otherwise, naming the resource and its owner.

use super::acting;
use super::auth::Scope;
use super::error::{ErrorCode, RpcError};
use super::state::Call;

/// Ok when the caller is an admin or the principal named `owner`; -32001
/// `not_owner` otherwise. `owner = None` (a resource from before owners were
/// recorded, or one the system made) is an admin's only.
pub fn require(call: &Call, resource: &str, owner: Option<&str>) -> Result<(), RpcError> {
    let principal = acting::principal(call)?;
    if principal.scope == Scope::Admin || owner == Some(principal.name.as_str()) {
        return Ok(());
    }
    Err(refuse(&principal.name, resource, owner))
}

/// Ok when the caller is an admin; -32001 `not_owner` otherwise.
pub fn require_admin(call: &Call, resource: &str) -> Result<(), RpcError> {
    require(call, resource, None)
}

/// -32001 `not_owner`: `principal` may not act on `resource`, which is `owner`'s.
pub fn refuse(principal: &str, resource: &str, owner: Option<&str>) -> RpcError {
    let whose = owner.map_or_else(
        || "only an admin may act on it".to_owned(),
        |o| format!("it belongs to principal `{o}`"),
    );
    RpcError::new(ErrorCode::Unauthorized, "not_owner")
        .with(
            "detail",
            format!("principal `{principal}` may not act on {resource}: {whose}"),
        )
        .with("principal", principal.to_owned())
        .with("resource", resource.to_owned())
        .with("owner", owner.map_or(serde_json::Value::Null, |o| o.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // ISSUE-60: the refusal names who asked, what, and whose it is.
    #[test]
    fn the_refusal_names_principal_resource_and_owner() {
        let err = refuse("cx-bot", "session s-1", Some("operator"));
        assert_eq!(err.reason, "not_owner");
        let text = serde_json::to_string(&err.extra).unwrap_or_default();
        assert!(
            text.contains("cx-bot") && text.contains("session s-1") && text.contains("operator"),
            "{text}"
        );
    }
}
