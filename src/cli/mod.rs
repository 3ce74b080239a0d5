//! The `orchestrata` command line: `up`, `log info`, `replay`.
//!
//! Every subcommand takes the same global [`LogArgs`] (`--config`, `--data-dir`,
//! `--kafka`), before or after the subcommand, so a log opened by `orchestrata up` is
//! inspected with the same flags.

mod args;
mod audit;
mod config;
mod crash;
mod info;
mod launch;
mod mcp;
mod projections;
mod replay;
mod stack;
mod up;

pub use args::LogArgs;

use clap::{Parser, Subcommand};

/// Orchestrata: the event-sourced control plane for multi-agent systems.
#[derive(Debug, Parser)]
#[command(name = "orchestrata", version, about)]
pub struct Cli {
    /// The global log flags (`--config`, `--data-dir`, `--kafka`), accepted anywhere.
    #[command(flatten)]
    pub log: LogArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the event log and run until Ctrl-C / SIGTERM.
    Up(up::UpArgs),
    /// Inspect the event log.
    Log {
        /// What to inspect.
        #[command(subcommand)]
        command: LogCommand,
    },
    /// Print a stream's events as JSON lines (the gateway's event JSON).
    Replay(replay::ReplayArgs),
    /// Rebuild, inspect and print the views folded from the log.
    Projections {
        /// What to do.
        #[command(subcommand)]
        command: projections::ProjectionsCommand,
    },
    /// Validate a config file, or print the effective configuration.
    Config {
        /// What to do.
        #[command(subcommand)]
        command: config::ConfigCommand,
    },
    /// Offline audit of governance decisions: list, verify, diff against a policy.
    Audit(audit::AuditArgs),
    /// Serve the gateway's methods as MCP tools on stdin/stdout (GATEWAY_HOST,
    /// GATEWAY_PORT, GATEWAY_TOKEN from the environment).
    Mcp(mcp::McpArgs),
    /// Test hook: append events with fsync on every append and print each acknowledged
    /// sequence, forever (the crash test kills it).
    #[command(name = "__crash-append", hide = true)]
    CrashAppend(crash::CrashArgs),
}

/// `orchestrata log ...`.
#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Each stream's name, epoch, first and last sequence and event count.
    Info(info::InfoArgs),
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let log = cli.log;
    match cli.command {
        Command::Up(args) => up::run(args, log).await,
        Command::Log {
            command: LogCommand::Info(args),
        } => info::run(args, log).await,
        Command::Replay(args) => replay::run(args, log).await,
        Command::Projections { command } => projections::run(command, log).await,
        Command::Audit(args) => audit::run(args, log).await,
        Command::Mcp(args) => mcp::run(args).await,
        Command::Config { command } => config::run(command, log).await,
        Command::CrashAppend(args) => crash::run(args, log).await,
    }
}
