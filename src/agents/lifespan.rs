//! The lifespan supervisor: deadlines end agents without anyone asking.
//!
//! Task- and session-bound juniors end when their task completes or their session
//! closes ([`Agents::complete_task`], [`Agents::close_session`]). Deadline-bound ones
//! end here: one task sleeps on the [`Clock`] until the earliest deadline in the tree
//! (or until a spawn/terminate changes it), then terminates whatever expired. Deadlines
//! come from event timestamps (spawn time + `lifespan_ms`), so a restarted supervisor
//! finds them in the replayed tree; tests drive it with paused tokio time.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::service::Agents;
use crate::kernel::Clock;

/// How long the supervisor sleeps when no deadline is pending.
const IDLE: Duration = Duration::from_secs(3600);

/// Starts the supervisor; abort the handle to stop it.
pub fn supervise(agents: Agents, clock: Arc<dyn Clock>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let changed = agents.changed().clone();
            let woken = changed.notified();
            let next = match agents.read(|t| t.next_deadline()).await {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!(error = %e, "lifespan supervisor stops: the kernel is gone");
                    return;
                }
            };
            match next {
                Some(at) if at <= clock.now() => {
                    if let Err(e) = agents.expire(clock.now()).await {
                        tracing::warn!(error = %e, "terminating expired agents failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
                Some(at) => {
                    tokio::select! {
                        _ = clock.sleep_until(at) => {}
                        _ = woken => {}
                    }
                }
                None => {
                    tokio::select! {
                        _ = tokio::time::sleep(IDLE) => {}
                        _ = woken => {}
                    }
                }
            }
        }
    })
}
