//! [`RedisState`]: shared state in Redis for several gateway instances, with an
//! in-memory mirror that carries the instance through a Redis outage (ERR-009).
//!
//! Every command runs with a short response timeout. An I/O error, refusal or timeout
//! marks Redis down: from then on commands are not even attempted (callers get
//! [`SharedError::Unavailable`] at once, so a dead Redis costs no latency), and one
//! background task reconnects with exponential backoff (100 ms doubling to 5 s). When
//! Redis answers again the instance re-publishes its registry entries and drops the
//! entries of clients that left during the outage.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, Client, RedisError};
use async_trait::async_trait;

use super::memory::MemoryState;
use super::{token_digest, AuthDecision, ClientEntry, SharedError, SharedState, StoredGrant};

/// Key prefix of everything the gateway stores.
pub const PREFIX: &str = "orchestrata:gateway:";
/// How long one Redis command may take before Redis counts as down.
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// First and longest reconnect delay.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));
/// Registry entries expire unless refreshed (a crashed instance's clients vanish); the
/// shortest lifetime [`RedisState::with_registry_ttl`] accepts.
const CLIENT_TTL: Duration = Duration::from_secs(120);

pub(super) struct Inner {
    pub(super) client: Client,
    pub(super) conn: Mutex<Option<MultiplexedConnection>>,
    pub(super) up: AtomicBool,
    pub(super) reconnecting: AtomicBool,
    pub(super) local: MemoryState,
    pub(super) client_ttl_ms: AtomicU64,
}

/// Shared state in Redis. Cheap to clone.
#[derive(Clone)]
pub struct RedisState {
    pub(super) inner: Arc<Inner>,
}

pub(super) fn key(parts: &[&str]) -> String {
    let mut k = String::from(PREFIX);
    k.push_str(&parts.join(":"));
    k
}

fn transport(e: &RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal()
}

fn config() -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
}

impl RedisState {
    /// Connects to `url` (`redis://HOST:PORT[/DB]`) for the instance `instance_id`.
    ///
    /// A malformed URL is an error; an unreachable Redis is not: the state starts
    /// down (failing closed) and connects in the background.
    pub async fn connect(url: &str, instance_id: &str) -> Result<Self, SharedError> {
        let client = Client::open(url).map_err(|e| SharedError::Invalid {
            field: "gateway.redis_url",
            reason: format!("`{url}` is not a Redis URL: {e}"),
        })?;
        let state = RedisState {
            inner: Arc::new(Inner {
                client,
                conn: Mutex::new(None),
                up: AtomicBool::new(false),
                reconnecting: AtomicBool::new(false),
                local: MemoryState::new(instance_id),
                client_ttl_ms: AtomicU64::new(CLIENT_TTL.as_millis() as u64),
            }),
        };
        match state.open().await {
            Ok(conn) => state.set_up(conn),
            Err(e) => {
                tracing::warn!(error = %e, "redis unreachable at start; failing closed until it answers");
                state.spawn_reconnect();
            }
        }
        Ok(state)
    }

    /// Lets registry entries live `ttl` (at least 120 s) between refreshes. Entries are
    /// refreshed on every heartbeat, so give several heartbeat intervals.
    pub fn with_registry_ttl(self, ttl: Duration) -> Self {
        let ms = u64::try_from(ttl.max(CLIENT_TTL).as_millis()).unwrap_or(u64::MAX);
        self.inner.client_ttl_ms.store(ms, Ordering::Relaxed);
        self
    }

    async fn open(&self) -> Result<MultiplexedConnection, RedisError> {
        let mut conn = self
            .inner
            .client
            .get_multiplexed_async_connection_with_config(&config())
            .await?;
        ::redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await?;
        Ok(conn)
    }

    fn set_up(&self, conn: MultiplexedConnection) {
        *self.inner.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn);
        self.inner.up.store(true, Ordering::SeqCst);
    }

    fn mark_down(&self, why: &RedisError) {
        if self.inner.up.swap(false, Ordering::SeqCst) {
            tracing::warn!(error = %why, "redis unavailable; serving from memory, failing closed on uncached auth");
        }
        self.spawn_reconnect();
    }

    fn spawn_reconnect(&self) {
        if self.inner.reconnecting.swap(true, Ordering::SeqCst) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            let mut delay = BACKOFF.0;
            loop {
                tokio::time::sleep(delay).await;
                if Arc::strong_count(&this.inner) == 1 {
                    break; // Nobody else holds the state any more.
                }
                match this.open().await {
                    Ok(conn) => {
                        this.set_up(conn);
                        this.resync().await;
                        tracing::info!("redis reachable again; shared state restored");
                        break;
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, ?delay, "redis still unreachable");
                        delay = (delay * 2).min(BACKOFF.1);
                    }
                }
            }
            this.inner.reconnecting.store(false, Ordering::SeqCst);
        });
    }

    fn connection(&self) -> Result<MultiplexedConnection, SharedError> {
        if !self.inner.up.load(Ordering::SeqCst) {
            return Err(SharedError::Unavailable(
                "redis is down (reconnecting)".into(),
            ));
        }
        self.inner
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| SharedError::Unavailable("redis not connected".into()))
    }

    /// Runs one command (or pipeline) built by `build`, mapping transport failures to
    /// [`SharedError::Unavailable`] and marking Redis down.
    pub(super) async fn query<T: ::redis::FromRedisValue>(
        &self,
        build: impl FnOnce() -> ::redis::Pipeline,
    ) -> Result<T, SharedError> {
        let mut conn = self.connection()?;
        let pipe = build();
        match pipe.query_async::<T>(&mut conn).await {
            Ok(v) => Ok(v),
            Err(e) if transport(&e) => {
                self.mark_down(&e);
                Err(SharedError::Unavailable(e.to_string()))
            }
            Err(e) => Err(SharedError::Backend(e.to_string())),
        }
    }
}

#[async_trait]
impl SharedState for RedisState {
    fn instance_id(&self) -> &str {
        self.inner.local.instance_id()
    }

    fn backend(&self) -> &'static str {
        "redis"
    }

    fn available(&self) -> bool {
        self.inner.up.load(Ordering::SeqCst)
    }

    async fn claim_nonce(&self, nonce: &str, ttl: Duration) -> Result<bool, SharedError> {
        let k = key(&["nonce", nonce]);
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let (set,): (Option<String>,) = self
            .query(|| {
                let mut p = ::redis::pipe();
                p.cmd("SET").arg(&k).arg("used").arg("NX").arg("PX").arg(ms);
                p
            })
            .await?;
        Ok(set.is_some())
    }

    async fn cached_auth(
        &self,
        client_id: &str,
        policy_hash: &str,
    ) -> Result<Option<AuthDecision>, SharedError> {
        let k = key(&["auth", client_id]);
        let found: Result<(Option<String>, i64), SharedError> = self
            .query(|| {
                let mut p = ::redis::pipe();
                p.get(&k).pttl(&k);
                p
            })
            .await;
        match found {
            Ok((Some(text), pttl)) => {
                let decision: Option<AuthDecision> = serde_json::from_str(&text).ok();
                match decision {
                    Some(d) if d.policy_hash == policy_hash => {
                        let ttl = Duration::from_millis(u64::try_from(pttl).unwrap_or(0));
                        if !ttl.is_zero() {
                            let _ = self.inner.local.cache_auth(client_id, &d, ttl).await;
                        }
                        Ok(Some(d))
                    }
                    // Decided under another policy, or unreadable: stale.
                    _ => {
                        let _ = self
                            .query::<()>(|| {
                                let mut p = ::redis::pipe();
                                p.del(&k).ignore();
                                p
                            })
                            .await;
                        Ok(None)
                    }
                }
            }
            Ok((None, _)) => Ok(None),
            Err(SharedError::Unavailable(why)) => {
                match self.inner.local.cached_auth(client_id, policy_hash).await? {
                    Some(d) => Ok(Some(d)),
                    None => Err(SharedError::Unavailable(why)),
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn cache_auth(
        &self,
        client_id: &str,
        decision: &AuthDecision,
        ttl: Duration,
    ) -> Result<(), SharedError> {
        self.inner
            .local
            .cache_auth(client_id, decision, ttl)
            .await?;
        let text =
            serde_json::to_string(decision).map_err(|e| SharedError::Backend(e.to_string()))?;
        let k = key(&["auth", client_id]);
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        self.query::<()>(|| {
            let mut p = ::redis::pipe();
            p.cmd("SET").arg(&k).arg(&text).arg("PX").arg(ms).ignore();
            p
        })
        .await
    }

    async fn invalidate_auth(&self) -> Result<u64, SharedError> {
        self.inner.local.invalidate_auth().await?;
        let pattern = key(&["auth", "*"]);
        let mut cursor: u64 = 0;
        let mut dropped = 0u64;
        loop {
            let ((next, keys),): ((u64, Vec<String>),) = self
                .query(|| {
                    let mut p = ::redis::pipe();
                    p.cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000);
                    p
                })
                .await?;
            if !keys.is_empty() {
                let (n,): (u64,) = self
                    .query(|| {
                        let mut p = ::redis::pipe();
                        p.del(keys);
                        p
                    })
                    .await?;
                dropped += n;
            }
            if next == 0 {
                return Ok(dropped);
            }
            cursor = next;
        }
    }

    async fn put_token(&self, token: &str, grant: StoredGrant) -> Result<(), SharedError> {
        let digest = token_digest(token);
        let text =
            serde_json::to_string(&grant).map_err(|e| SharedError::Backend(e.to_string()))?;
        self.query::<()>(|| {
            let mut p = ::redis::pipe();
            p.hset(key(&["tokens"]), &digest, &text).ignore();
            p
        })
        .await
    }

    async fn revoke_token(&self, token: &str) -> Result<bool, SharedError> {
        let digest = token_digest(token);
        self.inner.local.forget_token(&digest);
        let (n,): (i64,) = self
            .query(|| {
                let mut p = ::redis::pipe();
                p.hdel(key(&["tokens"]), &digest);
                p
            })
            .await?;
        Ok(n > 0)
    }

    async fn token_grant(
        &self,
        token: &str,
        mirror_ttl: Duration,
    ) -> Result<Option<StoredGrant>, SharedError> {
        let digest = token_digest(token);
        let found: Result<(Option<String>,), SharedError> = self
            .query(|| {
                let mut p = ::redis::pipe();
                p.hget(key(&["tokens"]), &digest);
                p
            })
            .await;
        match found {
            Ok((Some(text),)) => {
                let grant: StoredGrant = serde_json::from_str(&text)
                    .map_err(|e| SharedError::Backend(format!("stored token grant: {e}")))?;
                self.inner
                    .local
                    .mirror_token(&digest, grant.clone(), Some(mirror_ttl));
                Ok(Some(grant))
            }
            Ok((None,)) => {
                self.inner.local.forget_token(&digest);
                Ok(None)
            }
            Err(SharedError::Unavailable(why)) => match self.inner.local.token_by_digest(&digest) {
                Some(g) => Ok(Some(g)),
                None => Err(SharedError::Unavailable(why)),
            },
            Err(e) => Err(e),
        }
    }

    async fn register_client(&self, entry: &ClientEntry) -> Result<(), SharedError> {
        self.inner.local.register_client(entry).await?;
        // Sessions fall back to memory: a Redis outage never fails a client.
        if let Err(e) = self.publish(entry).await {
            tracing::debug!(error = %e, client = %entry.client_id, "registry entry kept in memory only");
        }
        Ok(())
    }

    async fn remove_client(&self, client_id: &str) -> Result<(), SharedError> {
        self.inner.local.remove_client(client_id).await?;
        if let Err(e) = self.unpublish(client_id).await {
            tracing::debug!(error = %e, client = %client_id, "registry entry removed from memory only");
        }
        Ok(())
    }

    async fn clients(&self) -> Result<Vec<ClientEntry>, SharedError> {
        let mut local = self.inner.local.local_clients();
        match self.remote_clients().await {
            Ok(remote) => {
                for e in remote {
                    if !local.iter().any(|l| l.client_id == e.client_id) {
                        local.push(e);
                    }
                }
                Ok(local)
            }
            Err(SharedError::Unavailable(_)) => Ok(local),
            Err(e) => Err(e),
        }
    }
}
