//! The sections of the whole-system config that have no component-owned parser:
//! `kernel`, `projections`, `governance`, `logging` (and `agents`, kept as written).
//!
//! ```yaml
//! kernel:      { node: kernel-1, inbox_capacity: 10000, max_retries: 3,
//!                backoff_base_ms: 1000, backoff_max_ms: 60000, max_batch: 1024,
//!                register_roster: true, hot_entries: 65536 }  # hot: packets, threads kept in memory
//! projections: { views_dir: ./data/views, batch_events: 10000, batch_ms: 200,
//!                store_cache_mb: 32, hot_entries: 4096 }  # hot: threads, packets, decisions kept in memory
//! governance:  { policy_dir: ./policy, cache_capacity: 10000, timeout_ms: 2000,
//!                inference_limit: 1000000 }
//! logging:     { format: auto, level: info, modules: { orchestrata::gateway: debug } }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::governance::GovernanceConfig;
use crate::kernel::KernelConfig;
use crate::projection::RunnerConfig;

/// A value out of range: the dotted key and why.
pub type Invalid = (String, String);

fn at_least_one<T: PartialOrd + Default + Copy>(
    key: &str,
    value: Option<T>,
    target: &mut T,
) -> Result<(), Invalid> {
    match value {
        Some(v) if v <= T::default() => Err((key.into(), "must be at least 1".into())),
        Some(v) => {
            *target = v;
            Ok(())
        }
        None => Ok(()),
    }
}

/// `kernel:` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileKernel {
    node: Option<String>,
    inbox_capacity: Option<usize>,
    max_retries: Option<u32>,
    backoff_base_ms: Option<u64>,
    backoff_max_ms: Option<u64>,
    max_batch: Option<usize>,
    register_roster: Option<bool>,
    hot_entries: Option<usize>,
}

impl FileKernel {
    pub(crate) fn into_config(self) -> Result<KernelConfig, Invalid> {
        let mut c = KernelConfig::default();
        if let Some(node) = self.node {
            if node.trim().is_empty() {
                return Err(("kernel.node".into(), "must not be empty".into()));
            }
            c.node = node;
        }
        at_least_one(
            "kernel.inbox_capacity",
            self.inbox_capacity,
            &mut c.inbox_capacity,
        )?;
        if let Some(r) = self.max_retries {
            c.max_retries = r;
        }
        let mut base = 0u64;
        at_least_one("kernel.backoff_base_ms", self.backoff_base_ms, &mut base)?;
        if base > 0 {
            c.backoff_base = Duration::from_millis(base);
        }
        let mut max = 0u64;
        at_least_one("kernel.backoff_max_ms", self.backoff_max_ms, &mut max)?;
        if max > 0 {
            c.backoff_max = Duration::from_millis(max);
        }
        if c.backoff_max < c.backoff_base {
            return Err((
                "kernel.backoff_max_ms".into(),
                "must not be below kernel.backoff_base_ms".into(),
            ));
        }
        at_least_one("kernel.max_batch", self.max_batch, &mut c.max_batch)?;
        if let Some(r) = self.register_roster {
            c.register_roster = r;
        }
        at_least_one("kernel.hot_entries", self.hot_entries, &mut c.hot_entries)?;
        Ok(c)
    }
}

/// Where the projector keeps its views and when it commits them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionsSection {
    /// View store directory; `None`: `<log data_dir>/views` (see
    /// [`views_dir`](crate::projection::views_dir)).
    pub views_dir: Option<PathBuf>,
    /// Commit batching of the live runner.
    pub runner: RunnerConfig,
    /// The view store's sled page cache, in bytes.
    pub store_cache_bytes: u64,
}

impl Default for ProjectionsSection {
    fn default() -> Self {
        ProjectionsSection {
            views_dir: None,
            runner: RunnerConfig::default(),
            store_cache_bytes: crate::config::DEFAULT_SLED_CACHE_BYTES,
        }
    }
}

/// `projections:` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileProjections {
    views_dir: Option<PathBuf>,
    batch_events: Option<usize>,
    batch_ms: Option<u64>,
    store_cache_mb: Option<u64>,
    hot_entries: Option<usize>,
}

impl FileProjections {
    pub(crate) fn into_config(self) -> Result<ProjectionsSection, Invalid> {
        let mut c = ProjectionsSection {
            views_dir: self.views_dir,
            ..ProjectionsSection::default()
        };
        let mut mb = 0u64;
        at_least_one("projections.store_cache_mb", self.store_cache_mb, &mut mb)?;
        if mb > 0 {
            c.store_cache_bytes = mb.saturating_mul(1 << 20);
        }
        at_least_one(
            "projections.batch_events",
            self.batch_events,
            &mut c.runner.batch_events,
        )?;
        at_least_one(
            "projections.hot_entries",
            self.hot_entries,
            &mut c.runner.hot_entries,
        )?;
        let mut ms = 0u64;
        at_least_one("projections.batch_ms", self.batch_ms, &mut ms)?;
        if ms > 0 {
            c.runner.batch_interval = Duration::from_millis(ms);
        }
        Ok(c)
    }
}

/// `governance:` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileGovernance {
    policy_dir: Option<PathBuf>,
    checkpoint: Option<PathBuf>,
    cache_capacity: Option<usize>,
    timeout_ms: Option<u64>,
    inference_limit: Option<u64>,
    sync_before_decide: Option<bool>,
    fact_window: Option<u64>,
    engine_renew_mb: Option<u64>,
}

impl FileGovernance {
    pub(crate) fn into_config(self) -> Result<GovernanceConfig, Invalid> {
        let mut c = GovernanceConfig {
            policy_dir: self.policy_dir,
            checkpoint: self.checkpoint,
            ..GovernanceConfig::default()
        };
        at_least_one(
            "governance.cache_capacity",
            self.cache_capacity,
            &mut c.cache_capacity,
        )?;
        let mut ms = 0u64;
        at_least_one("governance.timeout_ms", self.timeout_ms, &mut ms)?;
        if ms > 0 {
            c.timeout = Duration::from_millis(ms);
        }
        at_least_one(
            "governance.inference_limit",
            self.inference_limit,
            &mut c.inference_limit,
        )?;
        if let Some(s) = self.sync_before_decide {
            c.sync_before_decide = s;
        }
        // 0: every packet / never renew.
        if let Some(w) = self.fact_window {
            c.fact_window = (w > 0).then_some(w);
        }
        if let Some(mb) = self.engine_renew_mb {
            c.engine_renew_mb = mb;
        }
        Ok(c)
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable on a terminal, JSON lines otherwise (the default).
    #[default]
    Auto,
    /// Always human-readable.
    Text,
    /// Always one JSON object per line.
    Json,
}

/// `logging:`: format and levels. `RUST_LOG`, when set, wins over `level` and `modules`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingConfig {
    /// Line format.
    pub format: LogFormat,
    /// Default level: `error`, `warn`, `info`, `debug` or `trace`.
    pub level: String,
    /// Level per module path, e.g. `orchestrata::gateway: debug`.
    pub modules: BTreeMap<String, String>,
}

impl Default for LoggingConfig {
    fn default() -> Self {
        LoggingConfig {
            format: LogFormat::Auto,
            level: "info".into(),
            modules: BTreeMap::new(),
        }
    }
}

const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

impl LoggingConfig {
    pub(crate) fn validate(&self) -> Result<(), Invalid> {
        let check = |key: String, level: &str| {
            if LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
                Ok(())
            } else {
                Err((
                    key,
                    format!("`{level}` is not a level; use one of {}", LEVELS.join(", ")),
                ))
            }
        };
        check("logging.level".into(), &self.level)?;
        for (module, level) in &self.modules {
            if module.is_empty() || module.contains([',', '=', ' ']) {
                return Err((
                    format!("logging.modules.{module}"),
                    "is not a module path".into(),
                ));
            }
            check(format!("logging.modules.{module}"), level)?;
        }
        Ok(())
    }

    /// The `tracing` filter directive: `level,module=level,...`.
    pub fn directive(&self) -> String {
        let mut d = self.level.to_ascii_lowercase();
        for (module, level) in &self.modules {
            d.push_str(&format!(",{module}={}", level.to_ascii_lowercase()));
        }
        d
    }
}
