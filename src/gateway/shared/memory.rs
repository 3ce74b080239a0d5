//! [`MemoryState`]: shared state for one gateway instance, and the Redis backend's
//! fallback mirror.
//!
//! Entries with a time to live carry their deadline and are swept lazily: an expired
//! entry is treated as absent when read and removed when it is found.
//!
//! Both tables a client can grow are bounded ([`Limits`]):
//!
//! - the `prolog_policy` decision cache is an LRU of [`Limits::auth_entries`] client
//!   ids: a flood of made-up client ids evicts the least recently used decisions (a
//!   miss only costs a policy query), it never grows the process;
//! - nonces are never forgotten inside their window (forgetting one would let its
//!   request be replayed). When [`Limits::nonces`] live nonces are held, expired ones
//!   are swept; if every one is still live, new HMAC authentications are refused with
//!   [`SharedError::Full`] (answered as -32001 `shared_state_unavailable` naming the
//!   reason) until nonces expire. Only correctly signed requests claim nonces, so only
//!   a holder of a valid secret can fill the table.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{
    new_instance_id, token_digest, AuthDecision, ClientEntry, SharedError, SharedState, StoredGrant,
};

/// Live nonces remembered at most by default.
pub const MAX_NONCES: usize = 1_000_000;
/// `prolog_policy` decisions cached at most by default.
pub const MAX_AUTH_ENTRIES: usize = 10_000;

/// Bounds of the in-memory tables a client can grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Live nonces held at most; one more HMAC authentication is refused.
    pub nonces: usize,
    /// Cached `prolog_policy` decisions at most; the least recently used is evicted.
    pub auth_entries: NonZeroUsize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            nonces: MAX_NONCES,
            auth_entries: NonZeroUsize::new(MAX_AUTH_ENTRIES).unwrap_or(NonZeroUsize::MIN),
        }
    }
}

struct Tables {
    nonces: HashMap<String, Instant>,
    auth: lru::LruCache<String, (AuthDecision, Instant)>,
    tokens: HashMap<String, (StoredGrant, Option<Instant>)>,
    clients: HashMap<String, ClientEntry>,
}

/// In-process shared state: correct for one instance, never unavailable.
pub struct MemoryState {
    instance_id: String,
    limits: Limits,
    tables: Mutex<Tables>,
}

impl Default for MemoryState {
    fn default() -> Self {
        MemoryState::new(new_instance_id())
    }
}

impl MemoryState {
    /// Empty state for the instance `instance_id`, with the default `Limits`.
    pub fn new(instance_id: impl Into<String>) -> Self {
        MemoryState::with_limits(instance_id, Limits::default())
    }

    /// Empty state for the instance `instance_id` whose tables are bounded by `limits`.
    pub fn with_limits(instance_id: impl Into<String>, limits: Limits) -> Self {
        MemoryState {
            instance_id: instance_id.into(),
            limits,
            tables: Mutex::new(Tables {
                nonces: HashMap::new(),
                auth: lru::LruCache::new(limits.auth_entries),
                tokens: HashMap::new(),
                clients: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers a stored token's grant (by digest) for `ttl` (`None`: until revoked).
    pub(super) fn mirror_token(&self, digest: &str, grant: StoredGrant, ttl: Option<Duration>) {
        let deadline = ttl.map(|t| Instant::now() + t);
        self.lock()
            .tokens
            .insert(digest.to_owned(), (grant, deadline));
    }

    /// Forgets a stored token's grant by digest.
    pub(super) fn forget_token(&self, digest: &str) -> bool {
        self.lock().tokens.remove(digest).is_some()
    }

    /// The grant remembered for a token digest, unless expired.
    pub(super) fn token_by_digest(&self, digest: &str) -> Option<StoredGrant> {
        let mut t = self.lock();
        match t.tokens.get(digest) {
            Some((grant, deadline)) if deadline.is_none_or(|d| d > Instant::now()) => {
                Some(grant.clone())
            }
            Some(_) => {
                t.tokens.remove(digest);
                None
            }
            None => None,
        }
    }

    /// This instance's registered clients.
    pub(super) fn local_clients(&self) -> Vec<ClientEntry> {
        self.lock().clients.values().cloned().collect()
    }

    /// Whether `client_id` is registered here.
    pub(super) fn has_client(&self, client_id: &str) -> bool {
        self.lock().clients.contains_key(client_id)
    }
}

#[async_trait]
impl SharedState for MemoryState {
    fn instance_id(&self) -> &str {
        &self.instance_id
    }

    fn backend(&self) -> &'static str {
        "memory"
    }

    fn available(&self) -> bool {
        true
    }

    async fn claim_nonce(&self, nonce: &str, ttl: Duration) -> Result<bool, SharedError> {
        let now = Instant::now();
        let mut t = self.lock();
        if let Some(deadline) = t.nonces.get(nonce) {
            if *deadline > now {
                return Ok(false);
            }
        }
        if t.nonces.len() >= self.limits.nonces {
            t.nonces.retain(|_, deadline| *deadline > now);
            if t.nonces.len() >= self.limits.nonces {
                // Forgetting a live nonce would let its request be replayed: refuse.
                return Err(SharedError::Full(format!(
                    "{} nonces are live (gateway.hmac: at most {} within the drift window); \
                     new hmac authentications are refused until some expire",
                    t.nonces.len(),
                    self.limits.nonces
                )));
            }
        }
        t.nonces.insert(nonce.to_owned(), now + ttl);
        Ok(true)
    }

    async fn cached_auth(
        &self,
        client_id: &str,
        policy_hash: &str,
    ) -> Result<Option<AuthDecision>, SharedError> {
        let mut t = self.lock();
        match t.auth.get(client_id) {
            Some((d, deadline)) if *deadline > Instant::now() && d.policy_hash == policy_hash => {
                Ok(Some(d.clone()))
            }
            Some(_) => {
                t.auth.pop(client_id);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn cache_auth(
        &self,
        client_id: &str,
        decision: &AuthDecision,
        ttl: Duration,
    ) -> Result<(), SharedError> {
        // The least recently used decision makes room (an LRU: bounded).
        self.lock().auth.put(
            client_id.to_owned(),
            (decision.clone(), Instant::now() + ttl),
        );
        Ok(())
    }

    async fn invalidate_auth(&self) -> Result<u64, SharedError> {
        let mut t = self.lock();
        let n = t.auth.len() as u64;
        t.auth.clear();
        Ok(n)
    }

    async fn put_token(&self, token: &str, grant: StoredGrant) -> Result<(), SharedError> {
        self.mirror_token(&token_digest(token), grant, None);
        Ok(())
    }

    async fn revoke_token(&self, token: &str) -> Result<bool, SharedError> {
        Ok(self.forget_token(&token_digest(token)))
    }

    async fn token_grant(
        &self,
        token: &str,
        _mirror_ttl: Duration,
    ) -> Result<Option<StoredGrant>, SharedError> {
        Ok(self.token_by_digest(&token_digest(token)))
    }

    async fn register_client(&self, entry: &ClientEntry) -> Result<(), SharedError> {
        self.lock()
            .clients
            .insert(entry.client_id.clone(), entry.clone());
        Ok(())
    }

    async fn remove_client(&self, client_id: &str) -> Result<(), SharedError> {
        self.lock().clients.remove(client_id);
        Ok(())
    }

    async fn clients(&self) -> Result<Vec<ClientEntry>, SharedError> {
        Ok(self.local_clients())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::auth::Scope;

    // REQ-014-098
    #[tokio::test]
    async fn a_nonce_is_claimable_once_until_its_window_passes() {
        let m = MemoryState::new("t");
        let ttl = Duration::from_millis(30);
        assert_eq!(m.claim_nonce("n", ttl).await, Ok(true));
        assert_eq!(m.claim_nonce("n", ttl).await, Ok(false));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(
            m.claim_nonce("n", ttl).await,
            Ok(true),
            "expired: free again"
        );
    }

    // REQ-014-103 REQ-014-104
    #[tokio::test]
    async fn a_cached_decision_of_another_policy_or_past_its_ttl_is_a_miss() {
        let m = MemoryState::new("t");
        let d = AuthDecision {
            scope: Some(Scope::ReadOnly),
            reason: "ok".into(),
            policy_hash: "h1".into(),
        };
        m.cache_auth("c", &d, Duration::from_secs(300))
            .await
            .expect("cached");
        assert_eq!(m.cached_auth("c", "h1").await, Ok(Some(d.clone())));
        assert_eq!(m.cached_auth("c", "h2").await, Ok(None), "policy reloaded");
        assert_eq!(
            m.cached_auth("c", "h1").await,
            Ok(None),
            "stale entry dropped"
        );
        m.cache_auth("c", &d, Duration::from_millis(10))
            .await
            .expect("cached");
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(m.cached_auth("c", "h1").await, Ok(None), "expired");
        m.cache_auth("c", &d, Duration::from_secs(300))
            .await
            .expect("cached");
        assert_eq!(m.invalidate_auth().await, Ok(1));
        assert_eq!(m.cached_auth("c", "h1").await, Ok(None));
    }

    // REQ-014-098 ISSUE-14: unbounded nonce memory
    #[tokio::test]
    async fn a_full_nonce_table_refuses_rather_than_forgets_a_live_nonce() {
        let limits = Limits {
            nonces: 2,
            ..Limits::default()
        };
        let m = MemoryState::with_limits("t", limits);
        let long = Duration::from_secs(300);
        assert_eq!(m.claim_nonce("a", long).await, Ok(true));
        assert_eq!(m.claim_nonce("b", long).await, Ok(true));
        let full = m.claim_nonce("c", long).await;
        assert!(matches!(full, Err(SharedError::Full(_))), "{full:?}");
        // Live nonces are still remembered: no replay.
        assert_eq!(m.claim_nonce("a", long).await, Ok(false));
        // Expired ones are swept to make room.
        let m = MemoryState::with_limits("t", limits);
        assert_eq!(m.claim_nonce("a", Duration::from_millis(5)).await, Ok(true));
        assert_eq!(m.claim_nonce("b", long).await, Ok(true));
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(m.claim_nonce("c", long).await, Ok(true));
        assert_eq!(m.lock().nonces.len(), 2);
    }

    // REQ-014-103 ISSUE-14: unbounded auth cache
    #[tokio::test]
    async fn the_auth_cache_keeps_at_most_its_capacity_evicting_the_least_recent() {
        let limits = Limits {
            auth_entries: NonZeroUsize::new(3).expect("non-zero"),
            ..Limits::default()
        };
        let m = MemoryState::with_limits("t", limits);
        let d = AuthDecision {
            scope: None,
            reason: "denied".into(),
            policy_hash: "h".into(),
        };
        let ttl = Duration::from_secs(300);
        for id in ["c0", "c1", "c2"] {
            m.cache_auth(id, &d, ttl).await.expect("cached");
        }
        // c0 used recently: c1 is the least recently used.
        assert_eq!(m.cached_auth("c0", "h").await, Ok(Some(d.clone())));
        for i in 3..1000 {
            m.cache_auth(&format!("c{i}"), &d, ttl)
                .await
                .expect("cached");
            assert!(m.lock().auth.len() <= 3);
        }
        assert_eq!(m.cached_auth("c1", "h").await, Ok(None), "evicted");
        assert_eq!(m.cached_auth("c999", "h").await, Ok(Some(d)));
    }

    // REQ-014-094
    #[tokio::test]
    async fn stored_tokens_are_kept_by_digest_and_revocable() {
        let m = MemoryState::new("t");
        let g = StoredGrant {
            scope: Scope::Admin,
            name: None,
        };
        m.put_token("tok", g.clone()).await.expect("stored");
        assert!(m.lock().tokens.contains_key(&token_digest("tok")));
        assert!(
            !m.lock().tokens.contains_key("tok"),
            "never the plain token"
        );
        let grant = m.token_grant("tok", Duration::from_secs(1)).await;
        assert_eq!(grant, Ok(Some(g)));
        assert_eq!(m.revoke_token("tok").await, Ok(true));
        let gone = m.token_grant("tok", Duration::from_secs(1)).await;
        assert_eq!(gone, Ok(None));
    }
}
