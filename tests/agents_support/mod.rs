//! Helpers of the agents tests: a real sled log in a temp dir, a kernel (optionally
//! governed by the default policy) and the coordination API on it. Nothing is mocked.
#![allow(dead_code)]

use std::sync::Arc;

use orchestrata::agents::{AgentMetrics, Agents, EscalationPaths};
use orchestrata::config::LogConfig;
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::kernel::{Clock, Kernel, KernelConfig, TokioClock};
use orchestrata::log::EventLog;
use orchestrata_schemas::events::{Envelope, Stream};

/// A coordination stack on a fresh sled log. Keep `dir` alive as long as the log.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub log: Arc<dyn EventLog>,
    pub kernel: Kernel,
    pub agents: Agents,
    pub clock: Arc<dyn Clock>,
}

/// Kernel + agents on a new sled log; `governed` attaches the default policy.
pub async fn env(governed: bool, paths: EscalationPaths) -> Env {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&LogConfig::sled(dir.path()))
        .await
        .expect("open sled");
    restart(dir, log, governed, paths).await
}

/// A kernel + agents over an existing log (a restart).
pub async fn restart(
    dir: tempfile::TempDir,
    log: Arc<dyn EventLog>,
    governed: bool,
    paths: EscalationPaths,
) -> Env {
    let clock: Arc<dyn Clock> = Arc::new(TokioClock::new());
    let (mut kernel, _) = Kernel::start(log.clone(), KernelConfig::default(), clock.clone())
        .await
        .expect("kernel starts");
    if governed {
        let governance = Governance::start(log.clone(), GovernanceConfig::default())
            .await
            .expect("governance starts");
        kernel = kernel.with_governance(governance);
    }
    let agents = Agents::new(kernel.clone(), paths, AgentMetrics::new().expect("metrics"));
    Env {
        dir,
        log,
        kernel,
        agents,
        clock,
    }
}

/// Every event of `stream`, oldest first.
pub async fn events(log: &Arc<dyn EventLog>, stream: Stream) -> Vec<Envelope> {
    log.read(stream, 0, None, usize::MAX).await.expect("read")
}

/// Writes an executable shell script into `dir` and returns its path.
pub fn script(dir: &std::path::Path, name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    let mut perm = std::fs::metadata(&path).expect("stat").permissions();
    perm.set_mode(0o755);
    std::fs::set_permissions(&path, perm).expect("chmod");
    path
}
