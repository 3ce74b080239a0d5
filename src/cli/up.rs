//! `orchestrata up [--role all|kernel|gateway|projector]`: open the log and run the
//! role's components until Ctrl-C / SIGTERM (see [`crate::roles`]).
//!
//! The kernel (roles `all`, `kernel`) registers the standard roster at first start and
//! executes commands from the `commands` stream; the gateway (roles `all`, `gateway`)
//! serves WebSocket JSON-RPC; the projector folds the log into the view store.

use anyhow::Context;
use chrono::Utc;
use clap::Args;
use orchestrata_schemas::events::kernel::KernelStopped;
use orchestrata_schemas::events::{EventRecord, Stream};

use super::stack;
use super::LogArgs;
use crate::config::{Backend, SystemConfig};
use crate::log;
use crate::projection::ViewStore;
use crate::roles::Role;

/// Arguments of `orchestrata up`.
#[derive(Debug, Args)]
pub struct UpArgs {
    /// Where the gateway listens (WebSocket on `/`, HTTP /health, /ready, /metrics)
    /// [default: gateway.listen of the config, else 127.0.0.1:18790].
    #[arg(long, value_name = "HOST:PORT", env = "ORCHESTRATA_LISTEN")]
    listen: Option<String>,
    /// Redis shared by several gateway instances: HMAC nonces, auth decision cache,
    /// static-token store, client registry [default: gateway.redis_url of the config
    /// (env ORCHESTRATA_GATEWAY__REDIS_URL), else kept in memory].
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// Which part to run: `all` (embedded: kernel + gateway), or one of `kernel`,
    /// `gateway`, `projector` against a shared Kafka log.
    #[arg(long, value_enum, env = "ORCHESTRATA_ROLE", default_value = "all")]
    role: Role,
}

pub(super) async fn run(args: UpArgs, log_args: LogArgs) -> anyhow::Result<()> {
    // Installed first: a stop requested while the components start is honoured once
    // they are up, instead of killing the process half-started.
    let stop = StopSignals::install()?;
    let system = SystemConfig::load(log_args.config.as_deref())?;
    let config = log_args.config()?;
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
    // The kernel's rebuild, governance's fact fold and the views' load each read the
    // history at a restart: the kernel's runs on its own task beside the other two.
    let booting = role.runs_kernel().then(|| {
        let (system, config, log) = (system.clone(), config.clone(), log.clone());
        tokio::spawn(async move { stack::boot_kernel(&system, &config, log, backend).await })
    });
    let governance = if role.runs_kernel() || role.runs_gateway() {
        Some(stack::start_governance(&system, log.clone()).await?)
    } else {
        None
    };
    // The projector of record keeps its views on disk; a split gateway folds its own
    // copy in memory so it can answer reads and wait for its own writes.
    let projections = if role.runs_projector() {
        let store = stack::disk_store(&system, &config)?;
        Some(stack::start_projections(&system, log.clone(), store, role == Role::Projector).await?)
    } else if role.runs_gateway() {
        let store = ViewStore::temporary().context("opening the gateway's view store")?;
        Some(stack::start_projections(&system, log.clone(), store, false).await?)
    } else {
        None
    };
    let kernel = match (booting, &governance) {
        (Some(task), Some(g)) => {
            let booted = task.await.context("the kernel's start task")??;
            Some(stack::start_kernel(&system, booted, g.clone()).await?)
        }
        _ => None,
    };
    // The projector of record also mirrors the graph view into Neo4j when one is set.
    let neo4j = match (&projections, &system.gateway.neo4j, role.runs_projector()) {
        (Some((p, _)), Some(config), true) => {
            say(&format!(
                "projector: writing the knowledge graph to Neo4j at {} as {}",
                config.uri, config.user
            ));
            Some(crate::projection::neo4j::spawn_neo4j_sink(
                p.graph().clone(),
                config.clone(),
                crate::projection::neo4j::SinkConfig::default(),
            ))
        }
        _ => None,
    };
    let gateway = if role.runs_gateway() {
        let port = stack::kernel_port(kernel.as_ref(), &system, log.clone(), role).await?;
        let views = projections.as_ref().map(|(p, _)| stack::views(p));
        let (workflows, delegator) = match &kernel {
            Some(k) => stack::agent_services(&system, &config, k.agents.clone()).await?,
            None => (None, None),
        };
        if let Some(w) = &workflows {
            let closed = w
                .recover()
                .await
                .context("closing the workflow runs the last stop interrupted")?;
            if !closed.is_empty() {
                say(&format!(
                    "workflows: closed {} run(s) interrupted by the last stop: {}",
                    closed.len(),
                    closed.join(" ")
                ));
            }
        }
        if let Some(k) = &kernel {
            let ended = k
                .agents
                .terminate_live_juniors("interrupted")
                .await
                .context("ending the juniors the last stop interrupted")?;
            if !ended.is_empty() {
                say(&format!(
                    "juniors: terminated {} interrupted by the last stop: {}",
                    ended.len(),
                    ended.join(" ")
                ));
            }
        }
        let launched = super::launch::launch(super::launch::Launch {
            listen: args.listen.as_deref(),
            redis: args.redis.as_deref(),
            config_file: log_args.config.as_deref(),
            log_config: &config,
            log: log.clone(),
            components: super::launch::Components {
                kernel: views.map(|v| (port, v)),
                governance: governance.clone(),
                workflows,
                delegator,
            },
        })
        .await?;
        let addr = launched.running.local_addr();
        tracing::info!(listen = %addr, "gateway listening");
        let (ws, http) = if launched.running.uses_tls() {
            ("wss", "HTTPS")
        } else {
            ("ws", "HTTP")
        };
        say(&format!(
            "gateway listening on {ws}://{addr}/ ({http} /health /ready /metrics)"
        ));
        say(&format!(
            "operator console: {}://{addr}/console",
            if launched.running.uses_tls() {
                "https"
            } else {
                "http"
            }
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
    if !role.runs_kernel() {
        say("ready. Press Ctrl-C to stop.");
    }
    stop.wait().await;
    tracing::info!(role = role.as_str(), "stopping");
    if let Some(gateway) = gateway {
        gateway.shutdown().await.context("stopping the gateway")?;
    }
    if let Some(sink) = neo4j {
        sink.stop().await;
    }
    if let Some((views, progress)) = projections {
        progress.abort();
        views.stop().await.context("stopping the projector")?;
        if role.runs_projector() {
            say("projector stopped; views committed.");
        }
    }
    if let Some(g) = &governance {
        g.stop_engine();
    }
    let Some(k) = kernel else {
        log.flush().await.context("flushing the event log")?;
        say("log flushed. Bye.");
        return Ok(());
    };
    let (_, node) = k.stop().await;
    let stopped = EventRecord::new(
        "kernel",
        node.clone(),
        KernelStopped {
            node,
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
pub(super) fn say(line: &str) {
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
