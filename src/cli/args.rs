//! The log-selecting flags shared by every subcommand.
//!
//! They are global (`global = true` on the top-level [`super::Cli`]): `--data-dir`,
//! `--kafka` and `--config` are accepted before or after any subcommand, at any depth
//! (`orchestrata --data-dir D audit decisions` and `orchestrata audit decisions
//! --data-dir D` are the same command).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::config::LogConfig;

/// Which log to open. Flags override the config file; `--kafka` wins over `--data-dir`.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// YAML config file (its `log:` section is read).
    #[arg(long, value_name = "FILE", env = "ORCHESTRATA_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Embedded (sled) log directory [default: ./data].
    #[arg(long, value_name = "DIR", conflicts_with = "kafka", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Kafka bootstrap servers, `host:port[,host:port]`, instead of the embedded log.
    #[arg(long, value_name = "BROKERS", global = true)]
    pub kafka: Option<String>,
}

impl LogArgs {
    /// The effective configuration: file (if any), then flags.
    pub fn config(&self) -> anyhow::Result<LogConfig> {
        // clap does not enforce `conflicts_with` between global flags given at different
        // levels (`--kafka K log info --data-dir D`): checked here, whatever the order.
        if self.data_dir.is_some() && self.kafka.is_some() {
            anyhow::bail!(
                "the argument '--data-dir <DIR>' cannot be used with '--kafka <BROKERS>': \
                 choose the embedded log or a Kafka cluster"
            );
        }
        let mut config = match &self.config {
            Some(path) => crate::config::load_log(path)
                .with_context(|| format!("loading config file {}", path.display()))?,
            // No file: defaults with the environment's ORCHESTRATA_LOG__* overrides.
            None => LogConfig::from_yaml(&crate::config::merged_yaml(None)?)?,
        };
        config.override_with(self.data_dir.clone(), self.kafka.clone());
        Ok(config)
    }
}
