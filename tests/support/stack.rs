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
    /// Log (`log/`) and views (`views/`) live here.
    pub dir: tempfile::TempDir,
    /// The sled log.
    pub log: Arc<dyn EventLog>,
    /// The kernel, without governance.
    pub kernel: Kernel,
    /// Every view, live.
    pub projections: Projections,
}

impl Core {
    /// Starts log, kernel and projections in a fresh temp dir.
    pub async fn start() -> Core {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = orchestrata::log::open(&LogConfig::sled(dir.path().join("log")))
            .await
            .expect("open sled log");
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
