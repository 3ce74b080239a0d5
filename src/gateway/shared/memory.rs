//! [`MemoryState`]: shared state for one gateway instance, and the Redis backend's
//! fallback mirror.
//!
//! Entries with a time to live carry their deadline and are swept lazily: an expired
//! entry is treated as absent when read and removed when it is found.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{
    new_instance_id, token_digest, AuthDecision, ClientEntry, SharedError, SharedState, StoredGrant,
};

/// Nonces remembered at most; beyond this the oldest-deadline half is swept eagerly.
const MAX_NONCES: usize = 1_000_000;

#[derive(Default)]
struct Tables {
    nonces: HashMap<String, Instant>,
    auth: HashMap<String, (AuthDecision, Instant)>,
    tokens: HashMap<String, (StoredGrant, Option<Instant>)>,
    clients: HashMap<String, ClientEntry>,
}

/// In-process shared state: correct for one instance, never unavailable.
pub struct MemoryState {
    instance_id: String,
    tables: Mutex<Tables>,
}

impl Default for MemoryState {
    fn default() -> Self {
        MemoryState::new(new_instance_id())
    }
}

impl MemoryState {
    /// Empty state for the instance `instance_id`.
    pub fn new(instance_id: impl Into<String>) -> Self {
        MemoryState {
            instance_id: instance_id.into(),
            tables: Mutex::new(Tables::default()),
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
        if t.nonces.len() >= MAX_NONCES {
            t.nonces.retain(|_, deadline| *deadline > now);
        }
        match t.nonces.get(nonce) {
            Some(deadline) if *deadline > now => Ok(false),
            _ => {
                t.nonces.insert(nonce.to_owned(), now + ttl);
                Ok(true)
            }
        }
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
                t.auth.remove(client_id);
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
        self.lock().auth.insert(
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
