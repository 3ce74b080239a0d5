//! State several gateway instances must agree on, behind one trait with two backends.
//!
//! A single gateway keeps it in memory ([`MemoryState`]). Several gateways behind a load
//! balancer share it in Redis ([`RedisState`], `gateway.redis_url` / `up --redis URL`):
//!
//! | what | why it must be shared | Redis key |
//! | --- | --- | --- |
//! | HMAC nonces | a nonce used on one instance must be refused on every other | `orchestrata:gateway:nonce:{nonce}` (SET NX PX drift window) |
//! | auth decisions | `prolog_policy` answers are cached for `auth_cache_ttl` (300 s) | `orchestrata:gateway:auth:{client_id}` |
//! | static tokens | rotation: add the new token, revoke the old, on every instance at once | `orchestrata:gateway:tokens` (HASH by SHA-256 of the token) |
//! | client registry | `gateway.clients` lists the clients of every instance | `orchestrata:gateway:client:{id}` + SET `orchestrata:gateway:clients` |
//!
//! Failure model (ERR-009): when Redis goes away the Redis backend keeps serving from its
//! in-memory mirror — sessions stay up, the registry shows this instance's clients, and
//! auth decisions and tokens seen before the outage keep working until their TTL. What
//! it has not seen it cannot vouch for: nonce claims and uncached lookups fail with
//! [`SharedError::Unavailable`], which the auth strategies turn into a denial. It
//! reconnects in the background with exponential backoff and re-publishes its clients
//! when Redis answers again.

mod memory;
mod redis;
mod registry;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use self::memory::MemoryState;
pub use self::redis::RedisState;
use super::auth::Scope;

/// Why shared state could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SharedError {
    /// The backend is unreachable right now (Redis down or reconnecting). Callers must
    /// fail closed.
    #[error("shared state unavailable: {0}")]
    Unavailable(String),
    /// The backend answered, but with something this gateway cannot use.
    #[error("shared state: {0}")]
    Backend(String),
    /// A bounded table is full of entries that must not be forgotten (live HMAC
    /// nonces); the request is refused. Callers must fail closed.
    #[error("shared state full: {0}")]
    Full(String),
    /// A setting is unusable, e.g. `gateway.redis_url`.
    #[error("config field {field}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

/// A cached `prolog_policy` answer for one client id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthDecision {
    /// The granted scope; `None` when access was denied.
    pub scope: Option<Scope>,
    /// Why (the evaluation's rule trace).
    pub reason: String,
    /// Hash of the policy that decided: an answer of another policy is stale, which is
    /// how a policy reload invalidates the cache on every instance at once.
    pub policy_hash: String,
}

/// What a stored static token grants (the token itself is never stored, only its
/// SHA-256).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredGrant {
    /// Granted scope.
    pub scope: Scope,
    /// Name for audit records.
    pub name: Option<String>,
}

/// One authenticated client as the registry shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientEntry {
    /// Connection id, e.g. `client-3f2a…`.
    pub client_id: String,
    /// The gateway instance it is connected to.
    pub instance_id: String,
    /// When it connected.
    pub connected_at: DateTime<Utc>,
    /// Last frame received (as of the last registry refresh).
    pub last_activity: DateTime<Utc>,
    /// read_only, read_write or admin.
    pub auth_scope: Scope,
    /// What the client said about itself.
    pub client_metadata: Value,
    /// Its subscription ids (as of the last refresh).
    pub subscriptions: Vec<String>,
    /// Peer address.
    pub remote_addr: Option<String>,
}

/// The shared-state operations the gateway needs. See the module docs for the keys and
/// the failure model.
#[async_trait]
pub trait SharedState: Send + Sync {
    /// This gateway instance's id (shown next to each client by `gateway.clients`).
    fn instance_id(&self) -> &str;

    /// `memory` or `redis`.
    fn backend(&self) -> &'static str;

    /// Whether the backend answers right now (always `true` in memory).
    fn available(&self) -> bool;

    /// Records `nonce` as used for `ttl`; `Ok(true)` on its first use, `Ok(false)` when
    /// it was already used (on any instance) within `ttl`.
    async fn claim_nonce(&self, nonce: &str, ttl: Duration) -> Result<bool, SharedError>;

    /// The cached decision for `client_id`, if one was made under `policy_hash` and has
    /// not expired.
    async fn cached_auth(
        &self,
        client_id: &str,
        policy_hash: &str,
    ) -> Result<Option<AuthDecision>, SharedError>;

    /// Caches `decision` for `client_id` for `ttl`.
    async fn cache_auth(
        &self,
        client_id: &str,
        decision: &AuthDecision,
        ttl: Duration,
    ) -> Result<(), SharedError>;

    /// Drops every cached decision; returns how many were dropped.
    async fn invalidate_auth(&self) -> Result<u64, SharedError>;

    /// Adds (or replaces) a static token in the store, so every instance accepts it.
    async fn put_token(&self, token: &str, grant: StoredGrant) -> Result<(), SharedError>;

    /// Removes a static token from the store; `true` if it was there.
    async fn revoke_token(&self, token: &str) -> Result<bool, SharedError>;

    /// What `token` grants according to the store (`None`: not a stored token).
    /// `mirror_ttl` bounds how long an answer may be served from memory while the
    /// backend is away.
    async fn token_grant(
        &self,
        token: &str,
        mirror_ttl: Duration,
    ) -> Result<Option<StoredGrant>, SharedError>;

    /// Adds or refreshes a client of this instance in the registry.
    async fn register_client(&self, entry: &ClientEntry) -> Result<(), SharedError>;

    /// Removes a client from the registry (REQ-014-117).
    async fn remove_client(&self, client_id: &str) -> Result<(), SharedError>;

    /// Every registered client of every instance (only this instance's while the
    /// backend is away).
    async fn clients(&self) -> Result<Vec<ClientEntry>, SharedError>;
}

/// The store key of a static token: hex SHA-256 of its bytes. Looking a token up by its
/// digest keeps the plain token out of the store and makes the lookup's timing
/// independent of how much of a guess matches a real token.
pub fn token_digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// `url` with any user name and password replaced by `<redacted>`, for display
/// (`redis://:pw@host:6379/` becomes `redis://<redacted>@host:6379/`).
pub fn redacted_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}<redacted>{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// A fresh instance id, e.g. `gw-3f2a9c01`.
pub fn new_instance_id() -> String {
    let simple = uuid::Uuid::new_v4().simple().to_string();
    format!("gw-{}", simple.get(..8).unwrap_or(&simple))
}

#[cfg(test)]
mod tests {
    use super::*;

    // REQ-014-083
    #[test]
    fn passwords_in_redis_urls_are_redacted_for_display() {
        assert_eq!(
            redacted_url("redis://:pw@10.0.0.5:6379/0"),
            "redis://<redacted>@10.0.0.5:6379/0"
        );
        assert_eq!(
            redacted_url("redis://127.0.0.1:6379/"),
            "redis://127.0.0.1:6379/"
        );
        assert_ne!(token_digest("a"), token_digest("b"));
        assert_eq!(token_digest("a").len(), 64);
    }
}
