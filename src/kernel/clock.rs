//! [`Clock`]: where the kernel reads the time and waits for retry deadlines.
//!
//! The kernel stamps every event it appends with [`Clock::now`] and sleeps on
//! [`Clock::sleep_until`] for the Postman's backoff timers. [`TokioClock`] derives both
//! from tokio's time, so a test that runs with paused time (`tokio::time::pause()` or
//! `#[tokio::test(start_paused = true)]`) sees retries fire in a deterministic order
//! without really sleeping.

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;

/// A source of time for the kernel.
pub trait Clock: Send + Sync + 'static {
    /// The current time; event timestamps come from here.
    fn now(&self) -> DateTime<Utc>;

    /// A future that completes once [`Clock::now`] has reached `at`.
    fn sleep_until(&self, at: DateTime<Utc>) -> BoxFuture<'static, ()>;
}

/// Wall time at creation, advanced by tokio's monotonic clock (which tests can pause).
#[derive(Debug, Clone)]
pub struct TokioClock {
    base_utc: DateTime<Utc>,
    base_instant: tokio::time::Instant,
}

impl TokioClock {
    /// A clock starting at the current wall time.
    pub fn new() -> Self {
        TokioClock {
            base_utc: Utc::now(),
            base_instant: tokio::time::Instant::now(),
        }
    }

    /// A clock reading `start` now (deterministic timestamps in tests).
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        TokioClock {
            base_utc: start,
            base_instant: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = self.base_instant.elapsed();
        self.base_utc + chrono::Duration::from_std(elapsed).unwrap_or(chrono::Duration::MAX)
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> BoxFuture<'static, ()> {
        let offset = (at - self.base_utc).to_std().unwrap_or(Duration::ZERO);
        let deadline = self.base_instant + offset;
        Box::pin(tokio::time::sleep_until(deadline))
    }
}
