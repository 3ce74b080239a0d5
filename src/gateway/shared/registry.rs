//! The client registry half of [`RedisState`]: a HASH per client
//! (`orchestrata:gateway:client:{id}`, expiring unless refreshed) and the SET
//! `orchestrata:gateway:clients` of their ids, plus the re-publication after an outage.

use std::sync::atomic::Ordering;

use super::redis::{key, RedisState};
use super::{ClientEntry, SharedError, SharedState};

impl RedisState {
    /// After an outage: publish this instance's clients again, drop the ones that left.
    pub(super) async fn resync(&self) {
        let local = self.inner.local.local_clients();
        for entry in &local {
            let _ = self.publish(entry).await;
        }
        if let Ok(all) = self.remote_clients().await {
            for entry in all {
                if entry.instance_id == self.inner.local.instance_id()
                    && !self.inner.local.has_client(&entry.client_id)
                {
                    let _ = self.unpublish(&entry.client_id).await;
                }
            }
        }
    }

    /// Writes `e`'s HASH (with its expiry) and adds its id to the SET, atomically.
    pub(super) async fn publish(&self, e: &ClientEntry) -> Result<(), SharedError> {
        let json = serde_json::to_string(e).map_err(|err| SharedError::Backend(err.to_string()))?;
        let k = key(&["client", &e.client_id]);
        let meta = e.client_metadata.to_string();
        let connected = e.connected_at.to_rfc3339();
        let ttl_ms = self.inner.client_ttl_ms.load(Ordering::Relaxed);
        self.query::<()>(|| {
            let mut p = ::redis::pipe();
            p.atomic()
                .hset_multiple(
                    &k,
                    &[
                        ("connected_at", connected.as_str()),
                        ("auth_scope", e.auth_scope.as_str()),
                        ("client_metadata", meta.as_str()),
                        ("instance_id", e.instance_id.as_str()),
                        ("entry", json.as_str()),
                    ],
                )
                .ignore()
                .pexpire(&k, i64::try_from(ttl_ms).unwrap_or(i64::MAX))
                .ignore()
                .sadd(key(&["clients"]), &e.client_id)
                .ignore();
            p
        })
        .await
    }

    /// Deletes a client's HASH and removes its id from the SET.
    pub(super) async fn unpublish(&self, client_id: &str) -> Result<(), SharedError> {
        self.query::<()>(|| {
            let mut p = ::redis::pipe();
            p.atomic()
                .del(key(&["client", client_id]))
                .ignore()
                .srem(key(&["clients"]), client_id)
                .ignore();
            p
        })
        .await
    }

    /// Every entry in Redis; ids whose HASH expired (their instance died) are pruned.
    pub(super) async fn remote_clients(&self) -> Result<Vec<ClientEntry>, SharedError> {
        let (ids,): (Vec<String>,) = self
            .query(|| {
                let mut p = ::redis::pipe();
                p.smembers(key(&["clients"]));
                p
            })
            .await?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let (entry,): (Option<String>,) = self
                .query(|| {
                    let mut p = ::redis::pipe();
                    p.hget(key(&["client", &id]), "entry");
                    p
                })
                .await?;
            match entry.and_then(|j| serde_json::from_str::<ClientEntry>(&j).ok()) {
                Some(e) => out.push(e),
                // Expired (its instance died) or unreadable: drop it from the set.
                None => {
                    let _ = self
                        .query::<()>(|| {
                            let mut p = ::redis::pipe();
                            p.srem(key(&["clients"]), &id).ignore();
                            p
                        })
                        .await;
                }
            }
        }
        Ok(out)
    }
}
