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
/// and grew ~3x as fast ("The allocator's v2 line", same file). The `system-alloc`
/// feature leaves it out, for heap profilers that follow glibc's malloc.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Turns transparent huge pages off for this process, unless `MIMALLOC_ALLOW_THP` says
/// otherwise. mimalloc asks the kernel for huge pages on its arenas; a 2 MiB huge page
/// stays resident whole while any of it is in use, and a server whose heap is many
/// small long-lived entries (index ids, cached packets) keeps most of them partly used:
/// ~260 MB of a 1.1 GB resident set were huge pages at ~235 K sends, and without them
/// the server held 50-120 MB less at the same history with the same throughput
/// (docs/performance.md, "Huge pages off, smaller caches"). `MIMALLOC_ALLOW_THP=1`
/// keeps them (mimalloc reads it itself; `=0` makes mimalloc do what this does).
fn no_transparent_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and touches no memory of ours;
    // on a kernel without it the call fails with EINVAL and nothing changes.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

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

fn main() -> std::process::ExitCode {
    no_transparent_huge_pages();
    init_tracing();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::debug!(error = %format!("{e:#}"), "command failed");
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
