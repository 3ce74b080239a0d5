//! Authentication: the `static_token` strategy and the three scopes.
//!
//! A client proves itself with `auth.authenticate {strategy: "static_token", token}`.
//! The token is compared in constant time ([`subtle`]) against every configured grant;
//! the matching grant gives the connection its [`Scope`]. Empty and missing tokens are
//! rejected before any comparison. A token no configured grant matches may still be
//! in the shared token store ([`super::shared`], rotation across instances). The other
//! strategies live in [`super::auth_hmac`] and [`super::auth_policy`];
//! `handlers::auth` picks one by the `strategy` param.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::error::{ErrorCode, RpcError};
use super::principal::{ActsAs, Principal};

/// What an authenticated client may do. Ordered: `ReadOnly < ReadWrite < Admin`, and a
/// scope is sufficient for everything a lower one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Read views, subscribe to public topics, replay.
    ReadOnly,
    /// Also act: send packets, open and close sessions, dry-run governance.
    ReadWrite,
    /// Also manage: register and deregister Volks, list governance rules.
    Admin,
}

impl Scope {
    /// The wire name, e.g. `read_write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::ReadOnly => "read_only",
            Scope::ReadWrite => "read_write",
            Scope::Admin => "admin",
        }
    }

    /// Whether this scope covers `required`.
    pub fn covers(self, required: Scope) -> bool {
        self >= required
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read_only" => Ok(Scope::ReadOnly),
            "read_write" => Ok(Scope::ReadWrite),
            "admin" => Ok(Scope::Admin),
            other => Err(format!(
                "`{other}` is not a scope (read_only, read_write, admin)"
            )),
        }
    }
}

/// One accepted static token and what it grants: a [`Principal`] (see
/// [`super::principal`]).
///
/// ```yaml
/// tokens:
///   - { token: «secret», scope: read_write, name: intake-bot, acts_as: [U:Cx] }
///   - { token: «secret», scope: read_only, name: dashboard }   # acts as no Volk
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenGrant {
    /// The secret. Never logged, never returned (`config.get` redacts it).
    pub token: String,
    /// The scope it grants.
    pub scope: Scope,
    /// The principal's name, recorded on every event its commands cause, e.g.
    /// `dashboard`. Unnamed grants are called `token-<position>`.
    #[serde(default)]
    pub name: Option<String>,
    /// Volk aliases the holder may act as (`cxp.send` `from`, `cxp.ack` `by`, ...).
    /// Admin grants act as any Volk whatever this says.
    #[serde(default)]
    pub acts_as: Vec<String>,
    /// The sender of a `cxp.send` without `from`; defaults to the only alias of
    /// `acts_as` when it lists exactly one.
    #[serde(default)]
    pub default_volk: Option<String>,
}

impl TokenGrant {
    /// A grant of `scope` named `name` that acts as no Volk.
    pub fn new(token: impl Into<String>, scope: Scope, name: &str) -> Self {
        TokenGrant {
            token: token.into(),
            scope,
            name: Some(name.to_owned()),
            acts_as: Vec::new(),
            default_volk: None,
        }
    }

    /// The same grant, acting as `aliases` (the first is the default sender).
    pub fn acting_as<S: Into<String>>(mut self, aliases: impl IntoIterator<Item = S>) -> Self {
        self.acts_as = aliases.into_iter().map(Into::into).collect();
        self.default_volk = self.acts_as.first().cloned();
        self
    }

    /// The principal this grant (at `position` in the grant list) resolves to.
    pub fn principal(&self, position: usize) -> Principal {
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| format!("token-{position}"));
        Principal::new(
            name,
            self.scope,
            ActsAs::Listed(self.acts_as.clone()),
            self.default_volk.clone(),
        )
    }
}

impl fmt::Debug for TokenGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenGrant")
            .field("token", &"<redacted>")
            .field("scope", &self.scope)
            .field("name", &self.name)
            .field("acts_as", &self.acts_as)
            .field("default_volk", &self.default_volk)
            .finish()
    }
}

/// Checks `auth.authenticate` params against `grants`; returns the principal of the
/// matching grant.
///
/// Every grant is compared (no early exit), so timing does not reveal which grant a
/// prefix matched.
pub fn check_static_token(
    params: &serde_json::Value,
    grants: &[TokenGrant],
) -> Result<Principal, RpcError> {
    let strategy = params
        .get("strategy")
        .and_then(|s| s.as_str())
        .unwrap_or("");
    if strategy != "static_token" {
        return Err(
            RpcError::new(ErrorCode::Unauthorized, "unsupported_strategy").with(
                "detail",
                format!("strategy `{strategy}` is not static_token"),
            ),
        );
    }
    let token = match params.get("token") {
        None | Some(serde_json::Value::Null) => {
            return Err(RpcError::new(ErrorCode::Unauthorized, "missing_token")
                .with("detail", "field `token` is required for static_token"))
        }
        Some(t) => t.as_str().unwrap_or(""),
    };
    if token.is_empty() {
        return Err(RpcError::new(ErrorCode::Unauthorized, "empty_token")
            .with("detail", "field `token` is empty"));
    }
    let mut found: Option<Principal> = None;
    for (position, grant) in grants.iter().enumerate() {
        let equal = same_token(&grant.token, token);
        if equal && found.is_none() && !grant.token.is_empty() {
            found = Some(grant.principal(position));
        }
    }
    found.ok_or_else(|| {
        RpcError::new(ErrorCode::Unauthorized, "invalid_token")
            .with("detail", "the token does not match any configured token")
    })
}

/// Whether two tokens are equal, in time independent of where they differ *and of
/// their lengths*: `ct_eq` on byte slices returns at once when the lengths differ, so
/// the SHA-256 digests (always 32 bytes) are compared instead.
pub fn same_token(configured: &str, presented: &str) -> bool {
    use sha2::{Digest, Sha256};
    let a = Sha256::digest(configured.as_bytes());
    let b = Sha256::digest(presented.as_bytes());
    a.as_slice().ct_eq(b.as_slice()).into()
}
