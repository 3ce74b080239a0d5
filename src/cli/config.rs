//! `orchestrata config check FILE` and `orchestrata config print`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;

use crate::config::SystemConfig;

/// `orchestrata config ...`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate FILE (with the environment's ORCHESTRATA_<SECTION>__<KEY> overrides):
    /// prints `ok` and the overrides used, or the first bad key with its line and reason
    /// and exits with status 1.
    Check {
        /// The YAML config file.
        file: PathBuf,
    },
    /// Print the effective configuration (defaults, file, environment) as YAML, with
    /// secrets (tokens, keys, passwords) shown as `***`.
    Print {
        /// YAML config file; none: defaults and environment only.
        #[arg(long, value_name = "FILE", env = "ORCHESTRATA_CONFIG")]
        config: Option<PathBuf>,
    },
}

/// Runs `orchestrata config ...`.
pub(super) async fn run(command: ConfigCommand) -> anyhow::Result<()> {
    match command {
        ConfigCommand::Check { file } => {
            let config = SystemConfig::load(Some(&file))?;
            println!("ok: {} is a valid configuration", file.display());
            for o in &config.overrides {
                println!("  {} overrides {}", o.var, o.key());
            }
            Ok(())
        }
        ConfigCommand::Print { config } => {
            let config = SystemConfig::load(config.as_deref())?;
            let text = serde_yaml_ng::to_string(&config.effective())
                .context("writing the configuration as YAML")?;
            print!("{text}");
            Ok(())
        }
    }
}
