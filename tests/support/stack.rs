//! The stack most gateway tests stand on: a sled log in a temp dir, a kernel on it
//! (default settings, real clock, standard roster) and every view kept live by the
//! projection runner. Each test adds the governance and gateway settings it is about.

use std::sync::Arc;

use orchestrata::config::LogConfig;
use orchestrata::gateway::backends::Views;
use orchestrata::kernel::{Kernel, KernelConfig, TokioClock};
use orchestrata::log::EventLog;
use orchestrata::projection::{Projections, RunnerConfig, ViewStore};

/// Log, kernel and live views; keep it alive as long as the test uses them.
pub struct Core {
    /// The sled log.
    pub log: Arc<dyn EventLog>,
    /// The kernel, without governance.
    pub kernel: Kernel,
    /// Every view, live.
    pub projections: Projections,
    /// Log (`log/`) and views (`views/`) live here; declared last, so it is removed
    /// after everything that writes in it is dropped.
    pub dir: tempfile::TempDir,
}

impl Core {
    /// Starts log, kernel and projections in a fresh temp dir.
    pub async fn start() -> Core {
        Core::start_wrapped(|log| log).await
    }

    /// [`Core::start`] with everything on `wrap(log)` (a counting or fault-injecting
    /// wrapper around the real sled log, [`super::faulty_log::FaultyLog`]).
    pub async fn start_wrapped(wrap: impl FnOnce(Arc<dyn EventLog>) -> Arc<dyn EventLog>) -> Core {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = orchestrata::log::open(&LogConfig::sled(dir.path().join("log")))
            .await
            .expect("open sled log");
        Core::start_in(dir, wrap(log)).await
    }

    /// Kernel and projections on `log` (any backend, e.g. a Kafka log on a private
    /// broker); the views live in a fresh temp dir.
    pub async fn start_on(log: Arc<dyn EventLog>) -> Core {
        Core::start_in(tempfile::tempdir().expect("temp dir"), log).await
    }

    async fn start_in(dir: tempfile::TempDir, log: Arc<dyn EventLog>) -> Core {
        let (kernel, _) = Kernel::start(
            log.clone(),
            KernelConfig::default(),
            Arc::new(TokioClock::new()),
        )
        .await
        .expect("kernel starts");
        let store = ViewStore::open(dir.path().join("views")).expect("view store");
        let projections = Projections::start(log.clone(), store, RunnerConfig::default())
            .await
            .expect("projections start");
        Core {
            dir,
            log,
            kernel,
            projections,
        }
    }

    /// Handles on the live views, for `Services::with_kernel`.
    pub fn views(&self) -> Views {
        Views::of(&self.projections)
    }
}

/// A gateway on loopback over a [`Core`] whose kernel is governed: the default install
/// as a client meets it (a real governance engine for the kernel and the gateway).
pub struct Governed {
    /// The gateway.
    pub running: orchestrata::gateway::RunningGateway,
    /// The sled log.
    pub log: Arc<dyn EventLog>,
    /// The governed kernel (for deliveries: `kernel.inbox(alias, n)`).
    pub kernel: Kernel,
    /// The governance engine both use.
    pub governance: orchestrata::governance::Governance,
    /// Every view, live.
    pub projections: Projections,
    /// Log and views live here.
    pub dir: tempfile::TempDir,
}

impl Governed {
    /// Starts log, governance (`governance` settings: the default policy unless a
    /// `policy_dir` is given), the governed kernel, the views and a gateway with
    /// `config`.
    pub async fn start(
        config: orchestrata::gateway::GatewayConfig,
        governance: orchestrata::governance::GovernanceConfig,
    ) -> Governed {
        Governed::start_wrapped(config, governance, |log| log).await
    }

    /// [`Governed::start`] on `wrap(log)` (see [`Core::start_wrapped`]).
    pub async fn start_wrapped(
        config: orchestrata::gateway::GatewayConfig,
        governance: orchestrata::governance::GovernanceConfig,
        wrap: impl FnOnce(Arc<dyn EventLog>) -> Arc<dyn EventLog>,
    ) -> Governed {
        let Core {
            dir,
            log,
            kernel,
            projections,
        } = Core::start_wrapped(wrap).await;
        let governance = orchestrata::governance::Governance::start(log.clone(), governance)
            .await
            .expect("governance starts");
        let kernel = kernel.with_governance(governance.clone());
        let services = orchestrata::gateway::Services::new(log.clone())
            .with_kernel(kernel.clone(), Views::of(&projections))
            .with_governance(governance.clone());
        let running = orchestrata::gateway::start(config, services)
            .await
            .expect("gateway starts");
        Governed {
            running,
            log,
            kernel,
            governance,
            projections,
            dir,
        }
    }

    /// A WebSocket client, not yet authenticated.
    pub async fn connect(&self) -> super::ws::Ws {
        super::ws::Ws::connect(&format!("ws://{}/", self.running.local_addr())).await
    }

    /// A client authenticated with `token`.
    pub async fn client(&self, token: &str) -> super::ws::Ws {
        let mut ws = self.connect().await;
        ws.auth(token).await;
        ws
    }
}
