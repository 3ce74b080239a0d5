//! `orchestrata up [--role all|kernel|gateway|projector]`: open the log and run the
//! role's components until Ctrl-C / SIGTERM (see [`crate::roles`]).
//!
//! The kernel (roles `all`, `kernel`) registers the standard roster at first start and
//! executes commands from the `commands` stream; the gateway (roles `all`, `gateway`)
//! serves WebSocket JSON-RPC; the projector folds the log into the view store.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::Utc;
use clap::Args;
use orchestrata_schemas::events::kernel::{KernelStarted, KernelStopped};
use orchestrata_schemas::events::{EventRecord, Stream};

use super::LogArgs;
use crate::config::{Backend, SystemConfig};
use crate::log::{self, EventLog};
use crate::projection::{self, Projections, ViewStore};
use crate::roles::Role;

/// Arguments of `orchestrata up`.
#[derive(Debug, Args)]
pub struct UpArgs {
    #[command(flatten)]
    log: LogArgs,
    /// Where the gateway listens (WebSocket on `/`, HTTP /health, /ready, /metrics)
    /// [default: gateway.listen of the config, else 127.0.0.1:18790].
    #[arg(long, value_name = "HOST:PORT", env = "ORCHESTRATA_LISTEN")]
    listen: Option<String>,
    /// Which part to run: `all` (embedded: kernel + gateway), or one of `kernel`,
    /// `gateway`, `projector` against a shared Kafka log.
    #[arg(long, value_enum, env = "ORCHESTRATA_ROLE", default_value = "all")]
    role: Role,
}

/// The kernel's node name: `kernel.node` when configured, else `$HOSTNAME`.
fn node(system: &SystemConfig) -> String {
    if system.kernel.node != crate::kernel::KernelConfig::default().node {
        return system.kernel.node.clone();
    }
    std::env::var("HOSTNAME").unwrap_or_else(|_| "orchestrata".into())
}

struct KernelPart {
    kernel: crate::kernel::Kernel,
    commands: tokio::task::JoinHandle<()>,
    retention: tokio::task::JoinHandle<()>,
    node: String,
}

pub(super) async fn run(args: UpArgs) -> anyhow::Result<()> {
    // Installed first: a stop requested while the components start is honoured once
    // they are up, instead of killing the process half-started.
    let stop = StopSignals::install()?;
    let system = SystemConfig::load(args.log.config.as_deref())?;
    let config = args.log.config()?;
    let role = args.role;
    let log = log::open(&config).await.context("opening the event log")?;
    let backend = match &config.backend {
        Backend::Sled { .. } => "sled",
        Backend::Kafka { .. } => "kafka",
    };
    tracing::info!(role = role.as_str(), backend, location = %log.location(), "log open");
    let streams: Vec<&str> = Stream::ALL.iter().map(|s| s.as_str()).collect();
    say(&format!(
        "orchestrata {} ({}): log ready at {} ({backend}), streams: {}",
        env!("CARGO_PKG_VERSION"),
        role.as_str(),
        log.location(),
        streams.join(", ")
    ));
    let kernel = if role.runs_kernel() {
        Some(start_kernel(&system, &config, log.clone(), backend).await?)
    } else {
        None
    };
    let gateway = if role.runs_gateway() {
        let launched = crate::gateway::launch::launch(crate::gateway::launch::Launch {
            listen: args.listen.as_deref(),
            config_file: args.log.config.as_deref(),
            log_config: &config,
            log: log.clone(),
        })
        .await?;
        let addr = launched.running.local_addr();
        tracing::info!(listen = %addr, "gateway listening");
        say(&format!(
            "gateway listening on ws://{addr}/ (HTTP /health /ready /metrics)"
        ));
        if let Some((token, path)) = &launched.generated {
            say(&format!(
                "gateway token (shown once, also in {}): {token}",
                path.display()
            ));
        }
        Some(launched.running)
    } else {
        None
    };
    let projector = if role.runs_projector() {
        Some(start_projector(&system, &config, log.clone()).await?)
    } else {
        None
    };
    if !role.runs_kernel() {
        say("ready. Press Ctrl-C to stop.");
    }
    stop.wait().await;
    tracing::info!(role = role.as_str(), "stopping");
    if let Some(gateway) = gateway {
        gateway.shutdown().await.context("stopping the gateway")?;
    }
    if let Some((views, progress)) = projector {
        progress.abort();
        views.stop().await.context("stopping the projector")?;
        say("projector stopped; views committed.");
    }
    let Some(k) = kernel else {
        log.flush().await.context("flushing the event log")?;
        say("log flushed. Bye.");
        return Ok(());
    };
    k.commands.abort();
    k.kernel.stop().await;
    k.retention.abort();
    let stopped = EventRecord::new(
        "kernel",
        k.node.clone(),
        KernelStopped {
            node: k.node,
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

async fn start_kernel(
    system: &SystemConfig,
    config: &crate::config::LogConfig,
    log: Arc<dyn EventLog>,
    backend: &str,
) -> anyhow::Result<KernelPart> {
    let node = node(system);
    let started = EventRecord::new(
        "kernel",
        node.clone(),
        KernelStarted {
            node: node.clone(),
            version: env!("CARGO_PKG_VERSION").into(),
            backend: backend.into(),
        },
        Utc::now(),
    );
    let sequence = log
        .append(&started)
        .await
        .context("recording kernel started")?;
    say(&format!(
        "kernel.events #{sequence}: kernel started. Press Ctrl-C to stop."
    ));
    let retention = log::spawn_retention(log.clone(), config, Duration::from_secs(1));
    let (kernel, report) = crate::kernel::Kernel::start(
        log,
        crate::kernel::KernelConfig {
            node: node.clone(),
            ..system.kernel.clone()
        },
        Arc::new(crate::kernel::TokioClock::new()),
    )
    .await
    .context("starting the kernel")?;
    let commands = kernel.consume_commands();
    tracing::info!(node = %node, events_folded = report.events_folded, volks = report.volks, "kernel started");
    say(&format!(
        "kernel: folded {} events; {} Volks registered{}; executing commands from the `commands` stream; Postman running",
        report.events_folded,
        report.volks,
        if report.roster_registered {
            " (standard roster registered now: U:Ox U:PS U:Vz U:Qa U:Ar U:Ux U:PM U:Cx)"
        } else {
            ""
        }
    ));
    Ok(KernelPart {
        kernel,
        commands,
        retention,
        node,
    })
}

/// Starts every view live and a task printing `projector: cxp.traffic #N` as the
/// thread view advances.
async fn start_projector(
    system: &SystemConfig,
    config: &crate::config::LogConfig,
    log: Arc<dyn EventLog>,
) -> anyhow::Result<(Projections, tokio::task::JoinHandle<()>)> {
    let dir = system
        .projections
        .views_dir
        .clone()
        .unwrap_or_else(|| projection::views_dir(config));
    let store = ViewStore::open(&dir)
        .with_context(|| format!("opening the view store {}", dir.display()))?;
    let views = Projections::start(log, store, system.projections.runner)
        .await
        .context("starting the projection runner")?;
    say(&format!("projector: folding views into {}", dir.display()));
    let threads = views.threads().clone();
    let progress = tokio::spawn(async move {
        let mut shown = None;
        loop {
            let seq = threads.checkpoint().last(Stream::CxpTraffic);
            if seq != shown {
                if let Some(seq) = seq {
                    tracing::info!(stream = "cxp.traffic", sequence = seq, "views advanced");
                    say(&format!("projector: cxp.traffic #{seq}"));
                }
                shown = seq;
            }
            let next = seq.map_or(0, |s| s + 1);
            let _ = threads
                .wait_for(Stream::CxpTraffic, next, Duration::from_millis(500))
                .await;
        }
    });
    Ok((views, progress))
}

/// Prints a status line; a closed stdout must not stop the shutdown sequence.
fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// SIGTERM and SIGINT (Ctrl-C), listened to from the start of `up`.
struct StopSignals {
    term: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn install() -> anyhow::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopSignals {
            term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            interrupt: signal(SignalKind::interrupt()).context("installing the Ctrl-C handler")?,
        })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}
