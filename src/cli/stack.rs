//! The components one `orchestrata up` process runs, started in dependency order and
//! stopped in reverse: kernel (with governance and the commands consumer), projection
//! runner, workflows, gateway — whichever of them its role includes. The kernel's
//! rebuild from the log runs on its own task beside governance's start and the views'
//! load (each folds the history at a restart); it takes commands only once governed.
//!
//! | role        | kernel | governance | views                    | gateway's kernel     |
//! |-------------|--------|------------|--------------------------|----------------------|
//! | `all`       | yes    | yes        | on disk (`views_dir`)    | in-process           |
//! | `kernel`    | yes    | yes        | —                        | —                    |
//! | `gateway`   | —      | yes        | in memory, from the log  | through `commands`   |
//! | `projector` | —      | —          | on disk (`views_dir`)    | —                    |

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::Utc;
use orchestrata_schemas::events::kernel::KernelStarted;
use orchestrata_schemas::events::{EventRecord, Stream};

use super::up::say;
use crate::agents::profiles::Delegator;
use crate::agents::settings::AgentSettings;
use crate::agents::workflow::{PipelineConfig, Workflows};
use crate::agents::{AgentMetrics, Agents};
use crate::config::{LogConfig, SystemConfig};
use crate::gateway::backends::Views;
use crate::gateway::kernel_port::KernelPort;
use crate::governance::Governance;
use crate::kernel::{Kernel, RemoteKernel};
use crate::log::{self, EventLog};
use crate::projection::{self, Projections, ViewStore};
use crate::roles::Role;

/// The running kernel and its background tasks.
pub(super) struct KernelPart {
    pub kernel: Kernel,
    pub node: String,
    /// The one coordination API of the process: the lifespan supervisor wakes on its
    /// spawns, so every spawner (delegation, workflows) must use this one.
    pub agents: Agents,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl KernelPart {
    /// Stops the background tasks, then the kernel's writer.
    pub async fn stop(self) -> (Kernel, String) {
        for task in &self.tasks {
            task.abort();
        }
        self.kernel.stop().await;
        (self.kernel, self.node)
    }
}

/// The kernel's node name: `kernel.node` when configured, else `$HOSTNAME`.
pub(super) fn node(system: &SystemConfig) -> String {
    if system.kernel.node != crate::kernel::KernelConfig::default().node {
        return system.kernel.node.clone();
    }
    std::env::var("HOSTNAME").unwrap_or_else(|_| "orchestrata".into())
}

/// Starts governance: the policy of `governance.policy_dir` (or the built-in one).
pub(super) async fn start_governance(
    system: &SystemConfig,
    log: Arc<dyn EventLog>,
) -> anyhow::Result<Governance> {
    let governance = Governance::start(log, system.governance.clone())
        .await
        .context("starting governance")?;
    say(&format!(
        "governance: policy {} loaded ({})",
        governance.policy_hash().unwrap_or_else(|| "none".into()),
        system
            .governance
            .policy_dir
            .as_ref()
            .map_or("built-in policy".into(), |d| d.display().to_string())
    ));
    Ok(governance)
}

/// A kernel whose aggregate is rebuilt and whose writer runs, not governed yet: what
/// [`boot_kernel`] hands to [`start_kernel`].
pub(super) struct BootedKernel {
    kernel: Kernel,
    report: crate::kernel::StartReport,
    node: String,
    clock: Arc<crate::kernel::TokioClock>,
    retention: tokio::task::JoinHandle<()>,
}

/// Records `kernel started`, rebuilds the aggregate from the log, registers the
/// roster on a fresh log and enforces retention — everything of the kernel's start
/// that does not need governance, so `up` runs it beside governance's own fold of the
/// log (each reads the whole history at a restart: one core each instead of one after
/// the other). Nothing reaches the writer until [`start_kernel`] consumes `commands`.
pub(super) async fn boot_kernel(
    system: &SystemConfig,
    config: &LogConfig,
    log: Arc<dyn EventLog>,
    backend: &str,
) -> anyhow::Result<BootedKernel> {
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
    let clock = Arc::new(crate::kernel::TokioClock::new());
    let (kernel, report) = Kernel::start(
        log,
        crate::kernel::KernelConfig {
            node: node.clone(),
            // The views' directory is on a local disk whatever the log's backend.
            spill_dir: Some(views_dir(system, config)),
            ..system.kernel.clone()
        },
        clock.clone(),
    )
    .await
    .context("starting the kernel")?;
    Ok(BootedKernel {
        kernel,
        report,
        node,
        clock,
        retention,
    })
}

/// Puts a booted kernel under `governance` (which first folds what the kernel's start
/// appended: the roster, `kernel started`), then executes the `commands` stream and
/// supervises junior lifespans.
pub(super) async fn start_kernel(
    system: &SystemConfig,
    booted: BootedKernel,
    governance: Governance,
) -> anyhow::Result<KernelPart> {
    let BootedKernel {
        kernel,
        report,
        node,
        clock,
        retention,
    } = booted;
    governance
        .sync_facts()
        .await
        .context("governance folding the kernel's start")?;
    let kernel = kernel.with_governance(governance);
    let commands = kernel.consume_commands();
    let agents = agents(
        &AgentSettings::from_section(&system.agents)?,
        kernel.clone(),
    )?;
    let lifespans = crate::agents::lifespan::supervise(agents.clone(), clock);
    tracing::info!(node = %node, events_folded = report.events_folded, volks = report.volks, "kernel started");
    say(&format!(
        "kernel: folded {} events; {} Volks registered{}; executing commands from the `commands` stream; Postman running",
        report.events_folded,
        report.volks,
        if report.roster_registered {
            let aliases: Vec<&str> = crate::kernel::roster::STANDARD_ROSTER
                .iter()
                .map(|(alias, _, _)| *alias)
                .collect();
            format!(" (standard roster registered now: {})", aliases.join(" "))
        } else {
            String::new()
        }
    ));
    Ok(KernelPart {
        kernel,
        node,
        agents,
        tasks: vec![commands, retention, lifespans],
    })
}

/// The coordination API over `kernel`, with the escalation paths of `agents.escalation`.
fn agents(settings: &AgentSettings, kernel: Kernel) -> anyhow::Result<Agents> {
    let metrics = AgentMetrics::new().context("registering the agents' metrics")?;
    Ok(Agents::new(kernel, settings.escalation.clone(), metrics))
}

/// Who registers the configured providers (the issuer of `register_provider`).
const PROVIDER_REGISTRAR: &str = "orchestrata-up";

/// What the agents' settings make available to the gateway: workflow runs when
/// `agents.pipeline.coder` names the coding junior's command (`None` otherwise: the
/// `workflow.*` methods answer `workflows_unavailable`), and delegation when
/// `agents.drivers` names juniors (`None`: `agents.delegate`, `agents.spawn` answer
/// `delegation_unavailable`). Both share one coordination API. The configured
/// `agents.providers` are registered with the kernel first (`provider.events`).
pub(super) async fn agent_services(
    system: &SystemConfig,
    config: &LogConfig,
    agents: Agents,
) -> anyhow::Result<(Option<Workflows>, Option<Delegator>)> {
    let settings = AgentSettings::from_section(&system.agents)?;
    let registered = crate::agents::providers::register(
        agents.kernel(),
        PROVIDER_REGISTRAR,
        &settings.drivers.providers,
    )
    .await
    .context("registering agents.providers")?;
    if registered > 0 {
        say(&format!(
            "providers: registered {registered} of {} (provider.events)",
            settings.drivers.providers.len()
        ));
    }
    // The fan-out's answers are scored by the review loop's checkers.
    let scorer = crate::agents::synthesis::Scorer::from_review(&settings.review);
    let delegator = (!settings.drivers.profiles.is_empty()).then(|| {
        Delegator::with_setup(agents.clone(), settings.drivers.clone()).with_scorer(scorer)
    });
    let Some(pipeline) = settings.pipeline.clone() else {
        return Ok((None, delegator));
    };
    let Some((program, args)) = pipeline.coder.split_first() else {
        anyhow::bail!("agents.pipeline.coder is empty: give [program, args...]");
    };
    let workdir = pipeline
        .workdir
        .unwrap_or_else(|| projection::views_dir(config).with_file_name("workflows"));
    let task_timeout = Duration::from_secs(pipeline.task_timeout_s);
    let coder = crate::agents::drivers::cli::CliConfig::new(program).args(args.iter().cloned());
    let config = PipelineConfig {
        coder,
        review: settings.review.clone(),
        workdir,
        task_timeout,
        junior_retries: pipeline.junior_retries,
    };
    Ok((Some(Workflows::new(agents, config)), delegator))
}

/// Starts every view live over `store` and a task following the thread view; with
/// `announce` it prints `projector: cxp.traffic #N` as the view advances.
pub(super) async fn start_projections(
    system: &SystemConfig,
    log: Arc<dyn EventLog>,
    store: ViewStore,
    announce: bool,
) -> anyhow::Result<(Projections, tokio::task::JoinHandle<()>)> {
    let location = store.path().display().to_string();
    let views = Projections::start(log, store, system.projections.runner)
        .await
        .context("starting the projection runner")?;
    if announce {
        say(&format!("projector: folding views into {location}"));
    }
    let threads = views.threads().clone();
    let progress = tokio::spawn(async move {
        let mut shown = None;
        loop {
            let seq = threads.checkpoint().last(Stream::CxpTraffic);
            if seq != shown {
                if let Some(seq) = seq {
                    tracing::debug!(stream = "cxp.traffic", sequence = seq, "views advanced");
                    if announce {
                        say(&format!("projector: cxp.traffic #{seq}"));
                    }
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

/// The views' directory: configured, or the log's default.
fn views_dir(system: &SystemConfig, config: &LogConfig) -> std::path::PathBuf {
    system
        .projections
        .views_dir
        .clone()
        .unwrap_or_else(|| projection::views_dir(config))
}

/// The view store of a role that is the projector of record (`all`, `projector`).
pub(super) fn disk_store(system: &SystemConfig, config: &LogConfig) -> anyhow::Result<ViewStore> {
    let dir = views_dir(system, config);
    ViewStore::open_with_cache(&dir, system.projections.store_cache_bytes)
        .with_context(|| format!("opening the view store {}", dir.display()))
}

/// What a gateway of `role` acts through: the in-process kernel, or the kernel of the
/// deployment through the `commands` stream.
pub(super) async fn kernel_port(
    kernel: Option<&KernelPart>,
    system: &SystemConfig,
    log: Arc<dyn EventLog>,
    role: Role,
) -> anyhow::Result<KernelPort> {
    if let Some(k) = kernel {
        return Ok(KernelPort::Local(k.kernel.clone()));
    }
    let remote = RemoteKernel::connect(
        log,
        format!("gateway@{}", node(system)),
        crate::kernel::remote::DEFAULT_ANSWER_TIMEOUT,
    )
    .await
    .with_context(|| {
        format!(
            "role {}: watching the log for kernel answers",
            role.as_str()
        )
    })?;
    say("gateway: commands go to the `commands` stream; answers are read back from the log");
    Ok(KernelPort::Remote(remote))
}

/// Handles on the views a gateway answers from.
pub(super) fn views(projections: &Projections) -> Views {
    Views::of(projections)
}
