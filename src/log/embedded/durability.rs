//! Group commit: how sled appends become durable under each [`FsyncPolicy`].
//!
//! Every append takes a ticket (the running count of events written). A flush records
//! the highest ticket it covers. Under `every_append` an appender waits until its ticket
//! is covered: the first waiter to take the flush lock flushes everything written so
//! far, and all appenders that queued behind it find their ticket already covered and
//! return without flushing again — many concurrent appends share one fsync.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::FsyncPolicy;
use crate::log::LogError;

/// Tracks written vs. flushed events of one sled database.
pub(super) struct Durability {
    db: sled::Db,
    path: PathBuf,
    policy: FsyncPolicy,
    written: AtomicU64,
    flushed: AtomicU64,
    flush_lock: tokio::sync::Mutex<()>,
}

impl Durability {
    pub(super) fn new(db: sled::Db, path: PathBuf, policy: FsyncPolicy) -> Arc<Self> {
        let durability = Arc::new(Durability {
            db,
            path,
            policy,
            written: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
            flush_lock: tokio::sync::Mutex::new(()),
        });
        if let FsyncPolicy::EveryMs(ms) = policy {
            let weak = Arc::downgrade(&durability);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(ms));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let Some(d) = weak.upgrade() else { break };
                    let ticket = d.written.load(Ordering::Acquire);
                    if let Err(e) = d.flush_through(ticket).await {
                        tracing::error!(error = %e, "periodic sled flush failed");
                    }
                }
            });
        }
        durability
    }

    /// Records `events` newly written events; returns the ticket to wait for.
    /// Call while holding the stream's write lock so tickets follow sequence order.
    pub(super) fn note_written(&self, events: u64) -> u64 {
        self.written.fetch_add(events, Ordering::AcqRel) + events
    }

    /// Whether tails see an event only once it is on disk (`every_append`), so no reader
    /// ever acts on an event a crash could take back.
    pub(super) fn visible_after_flush(&self) -> bool {
        matches!(self.policy, FsyncPolicy::EveryAppend)
    }

    /// Waits as long as the policy says ticket `ticket` must wait.
    pub(super) async fn after_write(&self, ticket: u64) -> Result<(), LogError> {
        match self.policy {
            FsyncPolicy::EveryAppend => self.flush_through(ticket).await,
            FsyncPolicy::EveryN(n) => {
                if ticket.saturating_sub(self.flushed.load(Ordering::Acquire)) >= n {
                    self.flush_through(ticket).await
                } else {
                    Ok(())
                }
            }
            FsyncPolicy::EveryMs(_) => Ok(()),
        }
    }

    /// Makes sure every event up to `ticket` is on disk, sharing flushes between waiters.
    pub(super) async fn flush_through(&self, ticket: u64) -> Result<(), LogError> {
        if self.flushed.load(Ordering::Acquire) >= ticket {
            return Ok(());
        }
        let _leader = self.flush_lock.lock().await;
        if self.flushed.load(Ordering::Acquire) >= ticket {
            return Ok(());
        }
        let covered = self.written.load(Ordering::Acquire);
        let db = self.db.clone();
        let flushed = tokio::task::spawn_blocking(move || db.flush())
            .await
            .map_err(|e| LogError::Task(format!("sled flush task: {e}")))?;
        flushed.map_err(|e| LogError::sled(&self.path, e))?;
        self.flushed.fetch_max(covered, Ordering::AcqRel);
        Ok(())
    }

    /// Flushes everything written so far.
    pub(super) async fn flush_all(&self) -> Result<(), LogError> {
        self.flush_through(self.written.load(Ordering::Acquire))
            .await
    }
}
