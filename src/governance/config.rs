//! How governance runs: [`GovernanceConfig`], the service's settings (the
//! `governance:` section of the configuration, see `docs/configuration.md`).

use std::path::PathBuf;
use std::time::Duration;

use super::evaluator::DEFAULT_INFERENCE_LIMIT;

/// Default of [`GovernanceConfig::engine_renew_mb`].
pub const DEFAULT_ENGINE_RENEW_MB: u64 = 128;

/// How governance runs.
#[derive(Debug, Clone)]
pub struct GovernanceConfig {
    /// Directory of `.pl` files; `None` uses the default policy built into the binary.
    pub policy_dir: Option<PathBuf>,
    /// File keeping the facts view and its positions between runs (`None`: rebuild
    /// from the log on start).
    pub checkpoint: Option<PathBuf>,
    /// Decision cache capacity (entries).
    pub cache_capacity: usize,
    /// How long a decision may take before it fails closed.
    pub timeout: Duration,
    /// Prolog inferences a decision may spend.
    pub inference_limit: u64,
    /// Fold new fact events from the log before every uncached decision, so a
    /// decision sees every event appended before it was asked.
    pub sync_before_decide: bool,
    /// How many of the most recent packets policies see (`None`: every packet; see
    /// `fact_window.rs`).
    pub fact_window: Option<u64>,
    /// Estimated memory (MiB) the engine's machine may take on from asserts and
    /// queries before it is replaced by a fresh one holding only the current facts
    /// (0: never; see `renewal.rs`).
    pub engine_renew_mb: u64,
}

impl Default for GovernanceConfig {
    fn default() -> Self {
        GovernanceConfig {
            policy_dir: None,
            checkpoint: None,
            cache_capacity: 10_000,
            timeout: Duration::from_secs(2),
            inference_limit: DEFAULT_INFERENCE_LIMIT,
            sync_before_decide: true,
            fact_window: Some(super::DEFAULT_FACT_WINDOW),
            engine_renew_mb: DEFAULT_ENGINE_RENEW_MB,
        }
    }
}
