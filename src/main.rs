//! The `orchestrata` binary. See [`orchestrata::cli`].
//!
//! Logs go to stderr through `tracing`: human-readable when stderr is a terminal, JSON
//! lines otherwise (or as `logging.format` says). Levels: `RUST_LOG` when set, else
//! `ORCHESTRATA_LOG`, else `logging.level` and `logging.modules` of the config file.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Parser;
use orchestrata::cli::{run, Cli};
use orchestrata::config::{LogFormat, LoggingConfig, SystemConfig};
use tracing_subscriber::EnvFilter;

/// mimalloc instead of glibc's malloc. A server that commits for hours allocates from
/// many threads (tokio workers, the log writer, the governance engine, the projection
/// runner); glibc gives each its own arena and returns little of it, so resident memory
/// climbed with the history served well beyond the live heap (docs/performance.md,
/// "Resident memory and the allocator"). mimalloc's v2 line (the `v2` feature in
/// Cargo.toml): with v3, the crate's default, the same server held ~2x its live heap
/// and grew ~3x as fast ("The allocator's v2 line", same file).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The `--config FILE` of the command line, else `ORCHESTRATA_CONFIG`.
fn config_path() -> Option<PathBuf> {
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--config" {
            return args.next().map(PathBuf::from);
        }
        if let Some(value) = arg.to_str().and_then(|a| a.strip_prefix("--config=")) {
            return Some(PathBuf::from(value));
        }
    }
    std::env::var_os("ORCHESTRATA_CONFIG").map(PathBuf::from)
}

/// Installs the subscriber. A config that does not load leaves the defaults here; the
/// command itself reports the error.
fn init_tracing() {
    let logging = SystemConfig::load(config_path().as_deref())
        .map(|c| c.logging)
        .unwrap_or_else(|_| LoggingConfig {
            level: "warn".into(),
            ..LoggingConfig::default()
        });
    let filter = EnvFilter::try_from_env("RUST_LOG")
        .or_else(|_| EnvFilter::try_from_env("ORCHESTRATA_LOG"))
        .unwrap_or_else(|_| EnvFilter::new(logging.directive()));
    let json = match logging.format {
        LogFormat::Json => true,
        LogFormat::Text => false,
        LogFormat::Auto => !std::io::stderr().is_terminal(),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    init_tracing();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::debug!(error = %format!("{e:#}"), "command failed");
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
