//! `orchestrata up`: open the log, record the kernel's start, run until stopped.

use std::time::Duration;

use anyhow::Context;
use chrono::Utc;
use clap::Args;
use orchestrata_schemas::events::kernel::{KernelStarted, KernelStopped};
use orchestrata_schemas::events::{EventRecord, Stream};

use super::LogArgs;
use crate::config::Backend;
use crate::log;

/// Arguments of `orchestrata up`.
#[derive(Debug, Args)]
pub struct UpArgs {
    #[command(flatten)]
    log: LogArgs,
    /// Where the gateway listens (WebSocket on `/`, HTTP /health, /ready, /metrics).
    #[arg(long, value_name = "HOST:PORT", env = "ORCHESTRATA_LISTEN", default_value = crate::gateway::DEFAULT_LISTEN)]
    listen: String,
}

fn node() -> String {
    std::env::var("HOSTNAME").unwrap_or_else(|_| "orchestrata".into())
}

pub(super) async fn run(args: UpArgs) -> anyhow::Result<()> {
    let config = args.log.config()?;
    let log = log::open(&config).await.context("opening the event log")?;
    let backend = match &config.backend {
        Backend::Sled { .. } => "sled",
        Backend::Kafka { .. } => "kafka",
    };
    let started = EventRecord::new(
        "kernel",
        node(),
        KernelStarted {
            node: node(),
            version: env!("CARGO_PKG_VERSION").into(),
            backend: backend.into(),
        },
        Utc::now(),
    );
    let sequence = log
        .append(&started)
        .await
        .context("recording kernel started")?;
    let retention = log::spawn_retention(log.clone(), &config, Duration::from_secs(1));
    let gateway = crate::gateway::launch::launch(crate::gateway::launch::Launch {
        listen: Some(&args.listen),
        config_file: args.log.config.as_deref(),
        log_config: &config,
        log: log.clone(),
    })
    .await?;
    let streams: Vec<&str> = Stream::ALL.iter().map(|s| s.as_str()).collect();
    say(&format!(
        "orchestrata {}: log ready at {} ({backend}), streams: {}",
        env!("CARGO_PKG_VERSION"),
        log.location(),
        streams.join(", ")
    ));
    say(&format!(
        "kernel.events #{sequence}: kernel started. Press Ctrl-C to stop."
    ));
    say(&format!(
        "gateway listening on ws://{}/ (HTTP /health /ready /metrics)",
        gateway.running.local_addr()
    ));
    if let Some((token, path)) = &gateway.generated {
        say(&format!(
            "gateway token (shown once, also in {}): {token}",
            path.display()
        ));
    }
    wait_for_stop().await?;
    gateway
        .running
        .shutdown()
        .await
        .context("stopping the gateway")?;
    retention.abort();
    let stopped = EventRecord::new(
        "kernel",
        node(),
        KernelStopped {
            node: node(),
            reason: "signal".into(),
            clean: true,
        },
        Utc::now(),
    );
    let sequence = log
        .append(&stopped)
        .await
        .context("recording kernel stopped")?;
    log.flush().await.context("flushing the event log")?;
    say(&format!(
        "kernel.events #{sequence}: kernel stopped; log flushed. Bye."
    ));
    Ok(())
}

/// Prints a status line; a closed stdout must not stop the shutdown sequence.
fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

async fn wait_for_stop() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
        _ = term.recv() => {}
    }
    Ok(())
}
