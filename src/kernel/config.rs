//! [`KernelConfig`]: the kernel's knobs (Postman capacity, retry budget and backoff).

use std::path::PathBuf;
use std::time::Duration;

use super::state::SpillConfig;

/// Packets (and threads) the aggregate keeps in memory by default; ~2 KB each.
pub const DEFAULT_HOT_ENTRIES: usize = 65_536;

/// How the kernel and its Postman behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelConfig {
    /// Name of this kernel process in events and messages.
    pub node: String,
    /// Most packets a recipient may hold at once: queued for it plus delivered and not yet
    /// acknowledged. A packet arriving at a full mailbox fails (and is retried).
    pub inbox_capacity: usize,
    /// How many times the Postman re-queues a failed packet before giving up (then the
    /// packet stays `failed` and its sender gets a `delivery_failed` packet).
    pub max_retries: u32,
    /// Backoff before the first retry; each further retry waits twice as long.
    pub backoff_base: Duration,
    /// Upper bound of the backoff.
    pub backoff_max: Duration,
    /// Most commands folded into one group append.
    pub max_batch: usize,
    /// Register the standard roster (spec 005) when the log has no Volk yet.
    pub register_roster: bool,
    /// Packets, and threads, the aggregate keeps in memory; the least recently changed
    /// others wait in an unlinked scratch file under `spill_dir` (issue 18). Only with
    /// a `spill_dir`.
    pub hot_entries: usize,
    /// Where the aggregate spills; `None`: everything stays in memory (tests, tools).
    /// `orchestrata up` sets the views directory: a local disk on either backend.
    pub spill_dir: Option<PathBuf>,
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            node: "kernel".into(),
            inbox_capacity: 10_000,
            max_retries: orchestrata_schemas::cxp::DEFAULT_MAX_RETRIES,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            max_batch: 1024,
            register_roster: true,
            hot_entries: DEFAULT_HOT_ENTRIES,
            spill_dir: None,
        }
    }
}

impl KernelConfig {
    /// How the aggregate spills, if it does.
    pub fn spill(&self) -> Option<SpillConfig> {
        self.spill_dir.as_ref().map(|dir| SpillConfig {
            dir: dir.clone(),
            hot: self.hot_entries,
        })
    }

    /// The wait before retry number `retries_used + 1`: `base * 2^retries_used`, capped.
    pub fn backoff(&self, retries_used: u32) -> Duration {
        let factor = 1u32.checked_shl(retries_used.min(31)).unwrap_or(u32::MAX);
        self.backoff_base
            .checked_mul(factor)
            .unwrap_or(self.backoff_max)
            .min(self.backoff_max)
    }
}
