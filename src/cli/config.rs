//! `orchestrata config check FILE` and `orchestrata config print`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;

use crate::agents::settings::AgentSettings;
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
    /// The file is the global `--config FILE` (else `ORCHESTRATA_CONFIG`); none:
    /// defaults and environment only.
    Print,
}

/// Runs `orchestrata config ...`.
pub(super) async fn run(command: ConfigCommand, log_args: super::LogArgs) -> anyhow::Result<()> {
    match command {
        ConfigCommand::Check { file } => {
            let config = SystemConfig::load(Some(&file))?;
            // What `up` reads besides: the agents' sections.
            AgentSettings::from_section(&config.agents)
                .with_context(|| format!("{} is not a valid configuration", file.display()))?;
            writeln!(
                std::io::stdout(),
                "ok: {} is a valid configuration",
                file.display()
            )?;
            for o in &config.overrides {
                writeln!(std::io::stdout(), "  {} overrides {}", o.var, o.key())?;
            }
            Ok(())
        }
        ConfigCommand::Print => {
            let config = SystemConfig::load(log_args.config.as_deref())?;
            let text = serde_yaml_ng::to_string(&config.effective())
                .context("writing the configuration as YAML")?;
            write!(std::io::stdout(), "{text}")?;
            Ok(())
        }
    }
}
