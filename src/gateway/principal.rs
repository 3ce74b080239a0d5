//! Principals: who is acting behind a connection.
//!
//! Every credential the gateway accepts resolves to one [`Principal`]: a static token
//! grant (`gateway.tokens`, `GATEWAY_TOKEN`), an HMAC client (`gateway.hmac.clients`),
//! or a client the governance policy admits (`prolog_policy`). A principal has
//!
//! - a **name**, recorded on every event its commands cause (`orchestrata audit
//!   decisions --principal NAME`, `governance.query {"principal": NAME}`);
//! - a **scope** (`read_only` < `read_write` < `admin`), checked per method;
//! - the **Volks it may act as** ([`ActsAs`]): `cxp.send` sends *as* a Volk, and
//!   governance judges that Volk, so a client may only name a Volk it was granted;
//! - a **default Volk**, the sender of a `cxp.send` that names no `from` (the spec's
//!   own example names none).
//!
//! `admin` may act as any Volk. The token `orchestrata up` reads from `GATEWAY_TOKEN`
//! (or generates) is the [`operator`](Principal::operator): it acts as the operator
//! Volk `U:GW`, which the kernel registers with the standard roster and the default
//! policy lets address every Volk (it stands where the human stands, above the root).
//!
//! ```
//! use orchestrata::gateway::principal::{ActsAs, Principal};
//! use orchestrata::gateway::Scope;
//! let p = Principal::operator(Scope::ReadWrite);
//! assert_eq!(p.sender(None).unwrap(), "U:GW");
//! assert!(p.sender(Some("U:Vz")).is_err()); // may not send as another Volk
//! let bot = Principal::new("billing-bot", Scope::ReadWrite, ActsAs::listed(["U:Cx"]), None);
//! assert_eq!(bot.sender(None).unwrap(), "U:Cx"); // the only Volk it acts as
//! ```

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::auth::Scope;
use super::error::{ErrorCode, RpcError};

/// The operator Volk: the default sender of the `orchestrata up` token (registered
/// by the kernel with the standard roster).
pub use crate::kernel::roster::OPERATOR_VOLK;

/// The principal name of the `GATEWAY_TOKEN` / generated / `static_token` grant.
pub const OPERATOR_NAME: &str = "operator";

/// Which Volks a principal may act as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActsAs {
    /// Exactly these aliases (possibly none: the principal observes, or acts only on
    /// things that name no Volk).
    Listed(Vec<String>),
    /// The governance policy answers per alias: `decide(client(Name),
    /// 'gateway.act_as', Alias, ...)`, i.e. the policy's `gateway_acts_as/2`. Used for
    /// clients the policy itself admits (`prolog_policy`).
    Policy,
    /// Any Volk (admin principals).
    Any,
}

impl ActsAs {
    /// `Listed` from any list of aliases.
    pub fn listed<S: Into<String>>(aliases: impl IntoIterator<Item = S>) -> Self {
        ActsAs::Listed(aliases.into_iter().map(Into::into).collect())
    }
}

/// Who is acting: see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// Recorded on every event this principal's commands cause.
    pub name: String,
    /// What it may call.
    pub scope: Scope,
    /// Whom it may act as.
    pub acts_as: ActsAs,
    /// The sender of a `cxp.send` without `from`.
    pub default_volk: Option<String>,
}

/// What a principal may do as a Volk, before governance is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// The grant itself allows it.
    Granted,
    /// Only the policy can tell (`gateway_acts_as/2`).
    AskPolicy,
}

impl Principal {
    /// A principal; an admin acts as any Volk whatever `acts_as` says, and a missing
    /// default Volk is the only listed alias when exactly one is listed.
    pub fn new(
        name: impl Into<String>,
        scope: Scope,
        acts_as: ActsAs,
        default_volk: Option<String>,
    ) -> Self {
        let acts_as = if scope == Scope::Admin {
            ActsAs::Any
        } else {
            acts_as
        };
        let default_volk = default_volk.or_else(|| match &acts_as {
            ActsAs::Listed(list) if list.len() == 1 => list.first().cloned(),
            _ => None,
        });
        Principal {
            name: name.into(),
            scope,
            acts_as,
            default_volk,
        }
    }

    /// The `orchestrata up` token's principal: named `operator`, acting as `U:GW`.
    pub fn operator(scope: Scope) -> Self {
        Principal::new(
            OPERATOR_NAME,
            scope,
            ActsAs::listed([OPERATOR_VOLK]),
            Some(OPERATOR_VOLK.into()),
        )
    }

    /// Whether this principal may act as `alias` by its grant alone, or only if the
    /// policy says so; `None` when it may not.
    pub fn standing(&self, alias: &str) -> Option<Standing> {
        match &self.acts_as {
            ActsAs::Any => Some(Standing::Granted),
            ActsAs::Policy => Some(Standing::AskPolicy),
            ActsAs::Listed(list) => list.iter().any(|a| a == alias).then_some(Standing::Granted),
        }
    }

    /// The Volk a `cxp.send` is sent from: `from` when given and this principal may act
    /// as it (policy principals are checked by the caller, see [`Standing`]), else the
    /// default Volk. -32001 `not_acting_as` for a Volk outside the grant, -32602
    /// `from_required` when neither is there.
    pub fn sender(&self, from: Option<&str>) -> Result<String, RpcError> {
        match from {
            Some(alias) => {
                self.may_act_as(alias)?;
                Ok(alias.to_owned())
            }
            None => self.default_volk.clone().ok_or_else(|| {
                RpcError::invalid_params(
                    "from_required",
                    format!(
                        "principal `{}` has no default Volk; name the sending Volk in `from`",
                        self.name
                    ),
                )
                .with("field", "from")
            }),
        }
    }

    /// Ok when the grant lets this principal act as `alias` (or leaves it to the
    /// policy); else -32001 `not_acting_as` naming what it may act as.
    pub fn may_act_as(&self, alias: &str) -> Result<Standing, RpcError> {
        self.standing(alias).ok_or_else(|| self.refuse(alias))
    }

    /// -32001 `not_acting_as`: this principal may not act as `alias`.
    pub fn refuse(&self, alias: &str) -> RpcError {
        let allowed = match &self.acts_as {
            ActsAs::Listed(list) => json!(list),
            ActsAs::Policy => json!("policy"),
            ActsAs::Any => json!("any"),
        };
        RpcError::new(ErrorCode::Unauthorized, "not_acting_as")
            .with(
                "detail",
                format!("principal `{}` may not act as {alias}", self.name),
            )
            .with("principal", self.name.clone())
            .with("volk", alias.to_owned())
            .with("acts_as", allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_sends_as_its_volk_only() {
        let p = Principal::operator(Scope::ReadWrite);
        assert_eq!(p.sender(None).ok(), Some(OPERATOR_VOLK.to_owned()));
        assert_eq!(p.sender(Some(OPERATOR_VOLK)).ok(), Some("U:GW".into()));
        let err = p.sender(Some("U:Ox")).err().map(|e| e.reason);
        assert_eq!(err.as_deref(), Some("not_acting_as"));
    }

    #[test]
    fn admin_acts_as_anyone_and_needs_from_without_default() {
        let p = Principal::new("ops", Scope::Admin, ActsAs::listed(["U:Cx"]), None);
        assert_eq!(p.acts_as, ActsAs::Any);
        assert_eq!(p.sender(Some("U:Ox")).ok(), Some("U:Ox".into()));
        let err = p.sender(None).err().map(|e| e.reason);
        assert_eq!(err.as_deref(), Some("from_required"));
    }

    #[test]
    fn one_listed_alias_is_the_default() {
        let p = Principal::new("bot", Scope::ReadWrite, ActsAs::listed(["U:Cx"]), None);
        assert_eq!(p.default_volk.as_deref(), Some("U:Cx"));
        let two = Principal::new(
            "b2",
            Scope::ReadWrite,
            ActsAs::listed(["U:Cx", "U:Qa"]),
            None,
        );
        assert_eq!(two.default_volk, None);
        assert!(two.may_act_as("U:Qa").is_ok());
        assert!(two.may_act_as("U:Vz").is_err());
    }

    #[test]
    fn policy_principals_defer_to_the_policy() {
        let p = Principal::new("c", Scope::ReadWrite, ActsAs::Policy, None);
        assert_eq!(p.may_act_as("U:Vz").ok(), Some(Standing::AskPolicy));
    }

    #[test]
    fn read_only_with_nothing_listed_acts_as_nobody() {
        let p = Principal::new(
            "viewer",
            Scope::ReadOnly,
            ActsAs::listed(Vec::<String>::new()),
            None,
        );
        assert!(p.may_act_as("U:GW").is_err());
    }
}
